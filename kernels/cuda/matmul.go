package cuda

import (
	"fmt"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// The row-major products of kernels.Backend as column-major cuBLAS GEMMs. A
// row-major (R×K) matrix is the column-major (K×R) matrix of its transpose, so
// out = inp·Wᵀ becomes outᵀ = W·inpᵀ with W read transposed, and so on.

// cudaType is a tensor's cudaDataType.
func cudaType(dt kernels.DType) int32 {
	switch dt {
	case kernels.Float32:
		return cudaR32F
	case kernels.BFloat16:
		return cudaR16BF
	case kernels.Float16:
		return cudaR16F
	}
	panic("cuda: no cuBLAS type for " + dt.String())
}

// matmulForwardGemm: out (N,OC) = inp (N,C)·W (OC,C)ᵀ (+ out when accumulate,
// which is how a bias pre-filled into out is added).
func matmulForwardGemm(out, inp, w uintptr, N, C, OC int, accumulate bool) gemm {
	g := gemm{transA: true, m: OC, n: N, k: C, alpha: 1, A: w, lda: C, B: inp, ldb: C, C: out, ldc: OC, batch: 1}
	if accumulate {
		g.beta = 1
	}
	return g
}

// matmulBackwardGemms: dinp (N,C) = dout (N,OC)·W (OC,C) (written); dW (OC,C) +=
// doutᵀ·inp.
func matmulBackwardGemms(dinp, dw, dout, inp, w uintptr, N, C, OC int) (gDinp, gDw gemm) {
	gDinp = gemm{m: C, n: N, k: OC, alpha: 1, A: w, lda: C, B: dout, ldb: OC, C: dinp, ldc: C, batch: 1}
	gDw = gemm{transB: true, m: C, n: OC, k: N, alpha: 1, beta: 1, A: inp, lda: C, B: dout, ldb: OC, C: dw, ldc: C, batch: 1}
	return gDinp, gDw
}

// typed sets a GEMM's operand types from its tensors (A, B, C in cuBLAS's
// order).
func typed(g gemm, a, b, c kernels.Tensor) gemm {
	g.aType, g.bType, g.cType = cudaType(a.DType()), cudaType(b.DType()), cudaType(c.DType())
	return g
}

// gemm issues g on the backend's stream. A GEMM of float32 operands computes in
// Options.Precision's type; any 16-bit operand computes in CUBLAS_COMPUTE_32F
// (16-bit inputs on the tensor cores, float32 accumulation).
func (b *Backend) gemm(g gemm) { b.must(b.tryGemm(g)) }

func (b *Backend) tryGemm(g gemm) error {
	if g.compute == 0 {
		g.compute = b.compute
		if g.aType != cudaR32F || g.bType != cudaR32F || g.cType != cudaR32F {
			g.compute = compute32F
		}
	}
	if b.prof != nil {
		b.profBegin(gemmName(g), 2*float64(g.m)*float64(g.n)*float64(g.k)*float64(max(g.batch, 1)))
		err := b.blas.gemm(b.stream, g)
		if err != nil {
			b.profDrop()
		} else {
			b.profEnd()
		}
		return err
	}
	return b.blas.gemm(b.stream, g)
}

// epilogueGemm issues a GEMM with a cuBLASLt epilogue and reports whether it
// ran. A cuBLASLt that refuses the epilogue (ltRefusal: an old release, these
// types) makes the backend use its elementwise kernels instead, from then on,
// and say so once on Options.Warn; any other error (out of memory for the
// workspace, a failed launch) is a failure like every other op's.
func (b *Backend) epilogueGemm(g gemm) bool {
	if b.noEpilogues {
		return false
	}
	err := b.tryGemm(g)
	if err == nil {
		return true
	}
	if !refused(err) || b.sim != nil && !b.sim.opts.RefuseEpilogues {
		panic(err) // (on the simulator, a refusal not asked for is the backend's mistake)
	}
	b.noEpilogues = true
	b.warn(fmt.Sprintf("cuda: cuBLASLt refused an epilogue (%v); the bias and GELU run as separate kernels from now on, a little slower", err))
	return false
}

// MatmulForward implements kernels.Backend: one GEMM with cuBLASLt's bias
// epilogue (or the bias broadcast into out and the GEMM adding to it). out may
// have another dtype than the inputs (float32 logits for sampling).
func (b *Backend) MatmulForward(out, inp, weight, bias kernels.Tensor, N, C, OC int) {
	const op = "matmul forward"
	check.MatmulForward(op, out, inp, weight, bias, N, C, OC)
	b.owned(op, out, inp, weight, bias)
	sameType(op, inp, weight)
	if !bias.Nil() {
		sameType(op, out, bias)
	}
	b.enter()
	defer b.leave()
	b.matmulForward(out, inp, weight, bias, N, C, OC)
}

func (b *Backend) matmulForward(out, inp, weight, bias kernels.Tensor, N, C, OC int) {
	g := typed(matmulForwardGemm(out.Addr(), inp.Addr(), weight.Addr(), N, C, OC, false), weight, inp, out)
	if !bias.Nil() {
		e := g
		e.epilogue, e.bias, e.biasType = epiBias, bias.Addr(), cudaType(bias.DType())
		if b.epilogueGemm(e) {
			return
		}
		b.launch(kname("bias_fill", out.DType()), b.elems(N*OC), out, bias, int32(N), int32(OC))
		g.beta = 1
	}
	b.gemm(g)
}

// MatmulGeluForward implements kernels.Backend: one GEMM with cuBLASLt's
// GELU_AUX(_BIAS) epilogue (out = gelu(acc + bias), pre = acc + bias, from the
// same float32 value), or the GEMM into pre and a GELU kernel.
func (b *Backend) MatmulGeluForward(out, pre, inp, weight, bias kernels.Tensor, N, C, OC int) {
	const op = "matmul gelu forward"
	check.MatmulGelu(out, pre, inp, weight, bias, N, C, OC)
	b.owned(op, out, pre, inp, weight, bias)
	dt := sameType(op, out, pre, inp, weight, bias)
	b.enter()
	defer b.leave()
	e := typed(matmulForwardGemm(out.Addr(), inp.Addr(), weight.Addr(), N, C, OC, false), weight, inp, out)
	e.aux, e.ldaux, e.epilogue = pre.Addr(), OC, epiGeluAux
	if !bias.Nil() {
		e.epilogue, e.bias, e.biasType = epiGeluAuxBias, bias.Addr(), cudaType(bias.DType())
	}
	if b.epilogueGemm(e) {
		return
	}
	b.matmulForward(pre, inp, weight, bias, N, C, OC)
	b.launch(kname("gelu_forward", dt), b.elems(N*OC), out, pre, int64(N*OC))
}

// MatmulBackward implements kernels.Backend; dinp by a GEMM that writes (with
// cuBLASLt's DGELU epilogue multiplying by gelu'(geluPre) in the 16-bit modes,
// or the gelu_backward_inplace kernel after it: float32, or no epilogues),
// dweight by one that accumulates; dbias sums
// dout's rows in fixed chunks, then the chunks in order.
func (b *Backend) MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre kernels.Tensor, N, C, OC int) {
	const op = "matmul backward"
	check.MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre, N, C, OC)
	b.owned(op, dinp, dweight, dbias, dout, inp, weight, geluPre)
	dt := sameType(op, dout, inp, weight, dinp, geluPre)
	b.enter()
	defer b.leave()
	gi, gw := matmulBackwardGemms(dinp.Addr(), dweight.Addr(), dout.Addr(), inp.Addr(), weight.Addr(), N, C, OC)
	if !dinp.Nil() {
		gi = typed(gi, weight, dout, dinp)
		e := gi
		e.epilogue, e.aux, e.ldaux = epiDGelu, geluPre.Addr(), C
		switch {
		case geluPre.Nil():
			b.gemm(gi)
		case dt == kernels.Float32 || !b.epilogueGemm(e):
			// float32: cuBLASLt's DGELU is off by up to ~1.5e-5 absolute in
			// gelu' (dgeluEpilogueError): below a 16-bit ulp, not float32's.
			b.gemm(gi)
			b.launch(kname("gelu_backward_inplace", dt), b.elems(N*C), dinp, geluPre, int64(N*C))
		}
	}
	b.gemm(typed(gw, inp, dout, dweight))
	if !dbias.Nil() {
		b.columnSums(dbias, dout, N, OC)
	}
}

// rowsPerChunk is the row chunk of the column reductions (bias and layernorm
// weight gradients): a constant, so the summation order depends on the shape only.
const rowsPerChunk = 256

// columnSums adds the column sums of src (N,OC) into dst (float32): partial sums
// per chunk of rows, then the chunks in order. Called between enter and leave.
func (b *Backend) columnSums(dst, src kernels.Tensor, N, OC int) {
	chunks := (N + rowsPerChunk - 1) / rowsPerChunk
	part := b.tmp(4 * chunks * OC)
	defer b.untmp(part)
	cols := uint32((OC + threads - 1) / threads)
	b.launch(kname("column_partials", src.DType()), dims{gx: cols, gy: uint32(chunks), bx: threads}, part, src, int32(N), int32(OC), int32(rowsPerChunk))
	b.launch("reduce_partials_add", dims{gx: cols, bx: threads}, dst, part, int32(chunks), int32(OC))
}
