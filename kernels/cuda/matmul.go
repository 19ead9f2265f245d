package cuda

import "gptkit/kernels/internal/check"

// The row-major products of kernels.Backend as column-major cuBLAS GEMMs. A
// row-major (R×K) matrix is the column-major (K×R) matrix of its transpose, so
// out = inp·Wᵀ becomes outᵀ = W·inpᵀ with W read transposed, and so on.

// matmulForwardGemm: out (N,OC) = inp (N,C)·W (OC,C)ᵀ (+ out when accumulate,
// which is how a bias pre-filled into out is added).
func matmulForwardGemm(out, inp, w uintptr, N, C, OC int, accumulate bool) gemm {
	g := gemm{transA: true, m: OC, n: N, k: C, alpha: 1, A: w, lda: C, B: inp, ldb: C, C: out, ldc: OC, batch: 1}
	if accumulate {
		g.beta = 1
	}
	return g
}

// matmulBackwardGemms: dinp (N,C) += dout (N,OC)·W (OC,C); dW (OC,C) += doutᵀ·inp.
func matmulBackwardGemms(dinp, dw, dout, inp, w uintptr, N, C, OC int) (gDinp, gDw gemm) {
	gDinp = gemm{m: C, n: N, k: OC, alpha: 1, beta: 1, A: w, lda: C, B: dout, ldb: OC, C: dinp, ldc: C, batch: 1}
	gDw = gemm{transB: true, m: C, n: OC, k: N, alpha: 1, beta: 1, A: inp, lda: C, B: dout, ldb: OC, C: dw, ldc: C, batch: 1}
	return gDinp, gDw
}

func (b *Backend) gemm(g gemm) {
	if g.compute == 0 {
		g.compute = b.compute
	}
	b.must(b.blas.gemm(b.stream, g))
}

// MatmulForward implements kernels.Backend: the bias (if any) is broadcast into
// out, then the GEMM adds the product to it.
func (b *Backend) MatmulForward(out, inp, weight, bias []float32, N, C, OC int) {
	const op = "matmul forward"
	check.Dims(op, N, C, OC)
	check.Len(op, "out", out, N*OC)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "weight", weight, OC*C)
	check.LenOpt(op, "bias", bias, OC)
	b.enter()
	defer b.leave()
	if bias != nil {
		b.launch("bias_fill", b.elems(N*OC), dp(out), dp(bias), int32(N), int32(OC))
	}
	b.gemm(matmulForwardGemm(dp(out), dp(inp), dp(weight), N, C, OC, bias != nil))
}

// MatmulBackward implements kernels.Backend; dbias sums dout's rows in fixed
// chunks, then the chunks in order.
func (b *Backend) MatmulBackward(dinp, dweight, dbias []float32, dout, inp, weight []float32, N, C, OC int) {
	const op = "matmul backward"
	check.Dims(op, N, C, OC)
	check.Len(op, "dinp", dinp, N*C)
	check.Len(op, "dweight", dweight, OC*C)
	check.LenOpt(op, "dbias", dbias, OC)
	check.Len(op, "dout", dout, N*OC)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "weight", weight, OC*C)
	b.enter()
	defer b.leave()
	gi, gw := matmulBackwardGemms(dp(dinp), dp(dweight), dp(dout), dp(inp), dp(weight), N, C, OC)
	b.gemm(gi)
	b.gemm(gw)
	if dbias != nil {
		chunks := (N + rowsPerChunk - 1) / rowsPerChunk
		part := b.scratch(scrPartial, 4*chunks*OC)
		cols := uint32((OC + threads - 1) / threads)
		b.launch("column_partials", dims{gx: cols, gy: uint32(chunks), bx: threads}, part, dp(dout), int32(N), int32(OC), int32(rowsPerChunk))
		b.launch("reduce_partials_add", dims{gx: cols, bx: threads}, dp(dbias), part, int32(chunks), int32(OC))
	}
}
