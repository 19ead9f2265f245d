// Package kernels holds the compute of a GPT training step as explicit
// forward/backward pairs, llm.c style: no general autograd, every op has a
// hand-written backward beside its forward, arguments go outputs, inputs, dims,
// and backward passes accumulate (+=) into gradients.
//
// Backend is the one interface the trainer uses. Implementations:
//
//   - kernels/ref: plain, obvious Go; the numerical reference and the fallback.
//   - kernels/cpu: the fast CPU backend (goroutines over rows/heads, amd64
//     AVX2/FMA assembly with a pure-Go fallback under the noasm tag).
//   - kernels/cuda: CUDA C sources compiled to committed PTX, the driver API, cuBLAS
//     and NCCL loaded at run time (no cgo, no CUDA needed to build); managed memory
//     from Alloc.
//
// kernels/kerneltest is the conformance suite every backend must pass: results
// against ref, and gradients against float64 finite differences.
//
// Determinism: a backend's results must not depend on how many threads it uses.
// Reductions (sums over rows for weight and bias gradients, squared norms) are
// split into chunks whose boundaries depend only on the problem size and are
// combined in a fixed order, so a resumed or re-run job is bit-identical on the
// same machine.
//
// Memory: every buffer passed to a Backend comes from its Alloc, so a device
// backend can hand out memory both sides can address (e.g. CUDA managed memory).
// Tensors are row-major float32; token ids are int32. Shape comments use
// B (batch), T (time), C (channels), NH (heads), N (rows, usually B*T), V (vocab),
// Vp (vocab padded), OC (output channels).
package kernels

// HostMemory is implemented by the backends that compute on ordinary host memory
// (kernels/ref, kernels/cpu): any []float32 may be passed to them, not only
// Alloc's, so the trainer can give them buffers that the data-parallel
// collectives share between processes.
type HostMemory interface {
	HostMemory()
}

// Backend runs the ops of a GPT step. Methods panic on bad arguments (slice too
// short, non-positive dims): those are programming errors, not input errors.
type Backend interface {
	// Name says which backend this is, e.g. "ref", "cpu(avx2, 2 threads)".
	Name() string
	// Alloc returns a zeroed buffer of n float32s usable by this backend.
	Alloc(n int) []float32
	// Sync waits until every op issued so far has finished (a no-op on CPU).
	Sync()

	// EncoderForward: out (B,T,C) = wte[inp[b,t]] + wpe[t]. wte (V,C), wpe (maxT,C).
	EncoderForward(out []float32, inp []int32, wte, wpe []float32, B, T, C int)
	// EncoderBackward: dwte[inp[b,t]] += dout[b,t]; dwpe[t] += dout[b,t].
	EncoderBackward(dwte, dwpe []float32, dout []float32, inp []int32, B, T, C int)

	// LayerNormForward normalizes each of the N rows of inp (N,C) with eps 1e-5:
	// out = (x-mean)*rstd*weight + bias; it saves mean (N) and rstd (N) for the
	// backward. bias may be nil (no bias).
	LayerNormForward(out, mean, rstd []float32, inp, weight, bias []float32, N, C int)
	// LayerNormBackward accumulates into dinp (N,C), dweight (C) and dbias (C)
	// (dbias nil when there is no bias).
	LayerNormBackward(dinp, dweight, dbias []float32, dout, inp, weight, mean, rstd []float32, N, C int)

	// MatmulForward: out (N,OC) = inp (N,C) · weight(OC,C)ᵀ + bias (OC). bias may
	// be nil. weight is in PyTorch nn.Linear layout [out, in].
	MatmulForward(out, inp, weight, bias []float32, N, C, OC int)
	// MatmulBackward accumulates dinp (N,C) += dout·weight, dweight (OC,C) +=
	// doutᵀ·inp, dbias (OC) += Σrows dout. dbias may be nil.
	MatmulBackward(dinp, dweight, dbias []float32, dout, inp, weight []float32, N, C, OC int)

	// AttentionForward: causal multi-head self-attention. qkv (B,T,3C) holds
	// q, k, v side by side (as nanoGPT's c_attn output), head h using channels
	// [h*C/NH, (h+1)*C/NH) of each. att (B,NH,T,T) receives the softmax
	// probabilities (row t is zero past t), out (B,T,C) the heads' outputs
	// concatenated. Scale 1/sqrt(C/NH).
	AttentionForward(out, att []float32, qkv []float32, B, T, C, NH int)
	// AttentionBackward accumulates into dqkv (B,T,3C) from dout (B,T,C), using
	// the saved qkv and att.
	AttentionBackward(dqkv []float32, dout, qkv, att []float32, B, T, C, NH int)

	// GeluForward: out = 0.5·x·(1+tanh(√(2/π)(x+0.044715x³))) elementwise.
	GeluForward(out, inp []float32)
	// GeluBackward accumulates dinp += gelu'(inp)·dout.
	GeluBackward(dinp, inp, dout []float32)

	// ResidualForward: out = a + b.
	ResidualForward(out, a, b []float32)
	// ResidualBackward accumulates da += dout, db += dout.
	ResidualBackward(da, db, dout []float32)

	// DropoutForward: out = inp·mask/(1-p), with mask[i] = 0 with probability p,
	// drawn from a counter-based generator keyed by (seed, i) so the backward can
	// recompute it and so the result does not depend on threading. p == 0 copies.
	DropoutForward(out, inp []float32, p float32, seed uint64)
	// DropoutBackward accumulates dinp += dout·mask/(1-p) with the same mask.
	DropoutBackward(dinp, dout []float32, p float32, seed uint64)

	// CrossEntropyForward: for each of the N rows of logits (N,Vp), probs (N,Vp)
	// = softmax over the first V columns (columns V..Vp-1 get probability 0) and
	// losses[i] = -log probs[i, targets[i]]. A target < 0 is ignored (loss 0).
	CrossEntropyForward(losses, probs []float32, logits []float32, targets []int32, N, V, Vp int)
	// CrossEntropyBackward accumulates dlogits (N,Vp) += (probs - onehot(target))
	// · dloss for rows with a target ≥ 0; padded columns get nothing. dloss is the
	// gradient of the objective with respect to every row's loss (1/(B·T·accum)
	// for a mean).
	CrossEntropyBackward(dlogits []float32, probs []float32, targets []int32, dloss float32, N, V, Vp int)

	// AdamW updates params in place from grads with decoupled weight decay
	// (PyTorch's AdamW): m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²;
	// mhat = m/(1-β1^t); vhat = v/(1-β2^t); p -= lr·(mhat/(√vhat+eps) + wd·p).
	AdamW(params, grads, m, v []float32, o AdamW)
	// SumSquares returns Σx² accumulated in float64 in a fixed order (for the
	// global gradient norm).
	SumSquares(x []float32) float64
	// Scale multiplies x by s in place (gradient clipping, loss scaling).
	Scale(x []float32, s float32)
	// Zero sets x to 0.
	Zero(x []float32)
}

// AdamW holds one AdamW update's hyperparameters. Step is the 1-based step count t
// used for bias correction.
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Step                               int
}
