// Package kernels holds the compute of a GPT training step as explicit
// forward/backward pairs, llm.c style: no general autograd, every op has a
// hand-written backward beside its forward, arguments go outputs, inputs, dims.
//
// Backend is the one interface the trainer uses. Implementations:
//
//   - kernels/ref: plain, obvious Go; the numerical reference and the fallback.
//   - kernels/cpu: the fast CPU backend (goroutines over rows/heads, amd64
//     AVX2/FMA assembly with a pure-Go fallback under the noasm tag).
//   - kernels/cuda: CUDA C sources compiled to committed PTX, the driver API,
//     cuBLAS(Lt) and NCCL loaded at run time (no cgo, no CUDA needed to build).
//
// kernels/kerneltest is the conformance suite every backend must pass: results
// against ref, and gradients against float64 finite differences.
//
// # Tensors and memory
//
// Ops work on Tensors: typed flat views (DType, element count) of memory a
// backend allocated with Alloc and frees with Free. Data moves between the host
// and a backend only through Upload and Download (a device backend stages them
// through pinned memory). Host backends (HostMemory: ref, cpu) compute on
// ordinary host memory, so their tensors give zero-copy access (Float32s,
// Uint16s, ...), and they also accept host memory wrapped with Host: the
// data-parallel collectives share such buffers between processes.
//
// # Mixed precision
//
// Every floating operand is Float32, BFloat16 or Float16, each independently,
// except where an op says Float32 (saved statistics, losses, weight gradients,
// the optimizer's state). An op reads each operand in its dtype, computes in
// float32 (sums of products, row statistics and softmax normalizers accumulate in
// float32 or wider), and rounds each output to its dtype once, to nearest even:
// PyTorch AMP's and llm.c's arithmetic. The trainer's mixed-precision step keeps
// float32 master weights, gradients and AdamW moments, and runs the forward and
// backward on a bfloat16 (or float16) copy of the weights with bfloat16
// activations and activation gradients (docs/mixed-precision.md).
//
// # Outputs
//
// Outputs are written, not accumulated, except the weight gradients (dwte, dwpe,
// dweight, dbias), which add into their tensors (+=) so that the micro-batches of
// one optimizer step accumulate. Activation gradients therefore need no zeroing.
// An op may read an output before writing it only where it says so (LayerNorm
// backward's dres may be dinp itself; elementwise ops allow out == inp).
//
// # Determinism
//
// A backend's results must not depend on how many threads it uses or on timing.
// Reductions (sums over rows for weight gradients, squared norms, the loss sum)
// are split into chunks whose boundaries depend only on the problem size and are
// combined in a fixed order, never with floating-point atomics, so a resumed or
// re-run job is bit-identical on the same machine.
//
// Shape comments use B (batch), T (time), C (channels), NH (heads), N (rows,
// usually B*T), V (vocab), Vp (vocab padded), OC (output channels); tensors are
// row-major.
package kernels

// HostMemory is implemented by the backends that compute on ordinary host memory
// (kernels/ref, kernels/cpu): any tensor whose memory the host can address is
// accepted, not only Alloc's (e.g. Host(x) over the collectives' shared memory).
type HostMemory interface {
	HostMemory()
}

// Backend runs the ops of a GPT step. Methods panic on bad arguments (a tensor
// too short, a dtype the op does not take, another backend's tensor,
// non-positive dims): those are programming errors, not input errors. Alloc
// alone returns an error, for the one failure a user can fix (out of memory).
//
// Ops are issued in order; a device backend may run them asynchronously, in that
// order. Download and Sync wait for the ops issued before them.
type Backend interface {
	// Name says which backend this is, e.g. "ref", "cpu(avx2, 2 threads)".
	Name() string

	// Alloc returns n zeroed elements of dt, valid until Free. what names the
	// contents for messages and memory accounts ("activations", "AdamW m"). Out of
	// memory is an *OutOfMemoryError.
	Alloc(what string, dt DType, n int) (Tensor, error)
	// Free releases a tensor Alloc returned (the whole allocation).
	Free(t Tensor)
	// Upload copies src (len = dst.Bytes()) into dst, in order with the ops. src
	// may be reused as soon as Upload returns.
	Upload(dst Tensor, src []byte)
	// Download copies src into dst (len = src.Bytes()) after every op issued
	// before it has finished.
	Download(dst []byte, src Tensor)
	// Sync waits until every op issued so far has finished (a no-op on the host).
	Sync()

	// EncoderForward: out (B,T,C) = wte[inp[b,t]] + wpe[t]. inp Int32 (B*T); wte
	// (Vp,C); wpe (≥T,C).
	EncoderForward(out, inp, wte, wpe Tensor, B, T, C int)
	// EncoderBackward: dwte[inp[b,t]] += dout[b,t]; dwpe[t] += dout[b,t]. dwte and
	// dwpe Float32, each row's contributions summed in (b,t) order.
	EncoderBackward(dwte, dwpe, dout, inp Tensor, B, T, C int)

	// LayerNormForward normalizes each of the N rows of inp (N,C) with eps 1e-5:
	// out = (x-mean)·rstd·weight + bias; it writes mean (N) and rstd (N), Float32,
	// for the backward. bias may be none.
	LayerNormForward(out, mean, rstd, inp, weight, bias Tensor, N, C int)
	// ResidualLayerNormForward is the residual add fused with the LayerNorm after
	// it: res = a + b (rounded to res's dtype), then LayerNormForward of res.
	ResidualLayerNormForward(res, out, mean, rstd, a, b, weight, bias Tensor, N, C int)
	// LayerNormBackward writes dinp (N,C) = dres + ∂L/∂inp from dout, and adds
	// into dweight (C) and dbias (C) (Float32; dbias none without a bias). dres is
	// the gradient the residual stream already carries: none means zero, and it
	// may be dinp itself (updated in place). The saved inp, mean and rstd are the
	// forward's (res for the fused op).
	LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd Tensor, N, C int)

	// MatmulForward: out (N,OC) = inp (N,C) · weight (OC,C)ᵀ + bias (OC). bias may
	// be none. weight is in PyTorch nn.Linear layout [out, in].
	MatmulForward(out, inp, weight, bias Tensor, N, C, OC int)
	// MatmulGeluForward is MatmulForward with the GELU fused into its epilogue:
	// pre = inp·weightᵀ + bias and out = gelu(pre), both from the same float32
	// value, each rounded to its own dtype. gelu is the tanh form, GPT-2's:
	// 0.5·x·(1+tanh(√(2/π)(x+0.044715x³))).
	MatmulGeluForward(out, pre, inp, weight, bias Tensor, N, C, OC int)
	// MatmulBackward writes dinp (N,C) = dout·weight, multiplied elementwise by
	// gelu'(geluPre) when geluPre (N,C) is given (the backward of the GELU that
	// made this matmul's input, fused); it adds dweight (OC,C) += doutᵀ·inp and
	// dbias (OC) += Σrows dout (Float32). dinp and dbias may be none.
	MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre Tensor, N, C, OC int)

	// AttentionForward: causal multi-head self-attention, FlashAttention style.
	// qkv (B,T,3C) holds q, k, v side by side (as nanoGPT's c_attn output), head h
	// using channels [h·hs, (h+1)·hs) of each, hs = C/NH; out (B,T,C) gets the
	// heads' outputs concatenated; lse (B,NH,T), Float32, the logsumexp of each
	// row of scaled scores, all the backward needs besides qkv and out (no T×T
	// matrix is stored). Scale 1/√hs.
	AttentionForward(out, lse, qkv Tensor, B, T, C, NH int)
	// AttentionBackward writes dqkv (B,T,3C) from dout (B,T,C), recomputing the
	// probabilities from qkv and lse block by block. With 16-bit activations the
	// probabilities P and dS = P⊙(dP − rowsum(dout⊙out)) enter their products
	// rounded to that dtype (the inputs of a GPU's tensor cores).
	AttentionBackward(dqkv, dout, qkv, out, lse Tensor, B, T, C, NH int)

	// Classifier is the language-model head fused with its loss: per chunk of
	// rows, logits = inp·weightᵀ (weight (Vp,C), the tied token embedding), the
	// softmax over the first V columns, losses[i] = -log p[i, targets[i]] (Float32;
	// 0 where targets[i] < 0), and, when dinp or dweight is given, dlogits =
	// (p - onehot(target))·dloss written over the chunk's logits (0 in padded
	// columns and ignored rows), then dinp (N,C) = dlogits·weight (written) and
	// dweight (Float32) += dlogitsᵀ·inp. logits is scratch of rows×Vp (rows ≥ 1:
	// the chunk); no (N,Vp) buffer exists. lossSum (Float64, 1 element), if given,
	// gets += the sum of the rows' losses, in row order. dloss is the gradient of
	// the objective with respect to each row's loss (1/(tokens in the batch) for a
	// mean; times the loss scale under float16).
	Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets Tensor, dloss float32, N, C, V, Vp int)

	// DropoutForward: out = inp·mask/(1-p), with mask[i] = 0 with probability p,
	// drawn by DropoutKeep (keyed by seed and i) so the backward can recompute it
	// and the result does not depend on threading. p == 0 copies. out may be inp.
	DropoutForward(out, inp Tensor, p float32, seed uint64)
	// DropoutBackward writes dinp = dout·mask/(1-p) with the same mask. dinp may
	// be dout.
	DropoutBackward(dinp, dout Tensor, p float32, seed uint64)

	// AdamW updates params (Float32) in place from grads with decoupled weight
	// decay (PyTorch's AdamW), all Float32: with g = grads·GradScale·clip,
	// m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²; mhat = m/(1-β1^t);
	// vhat = v/(1-β2^t); p -= lr·(mhat/(√vhat+eps) + wd·p), wd = WeightDecay for
	// the first DecayLen elements and 0 after. gradNorm (Float64), if given, holds
	// partial sums of squares of grads (SumSquares); their sum in order is
	// ‖grads‖², and clip = min(1, MaxNorm/(‖grads‖·GradScale + 1e-6)) when
	// MaxNorm > 0 (torch.nn.utils.clip_grad_norm_); when that sum is not finite
	// nothing is updated (a diverged step, or a float16 overflow: the step is
	// skipped). copy, if given (BFloat16 or Float16), gets the updated params
	// rounded: the weights the next forward uses. grads may be clobbered.
	AdamW(params, grads, m, v, copy, gradNorm Tensor, o AdamW)
	// SumSquares writes out[i] (Float64) = Σ x[j]² over block i of x (block
	// elements each; len(x) a multiple of block), summed in float64 in a fixed
	// order: the gradient norm's partial sums.
	SumSquares(out, x Tensor, block int)
	// Convert writes src rounded to dst's dtype (equal lengths): the low-precision
	// copy of the weights.
	Convert(dst, src Tensor)
	// Zero sets x to 0.
	Zero(x Tensor)
}

// AdamW holds one AdamW update's hyperparameters. Step is the 1-based step count t
// used for bias correction.
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Step                               int
	// DecayLen: the first DecayLen elements get WeightDecay, the rest none.
	DecayLen int
	// GradScale multiplies the gradients before use (1/loss scale under float16;
	// 0 means 1).
	GradScale float32
	// MaxNorm clips the gradient's global norm (0: no clipping); needs gradNorm.
	MaxNorm float64
}
