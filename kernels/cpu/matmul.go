package cpu

import "gptkit/kernels/internal/check"

// MatmulForward implements kernels.Backend: out = inp·weightᵀ + bias, one
// GEMM (A = inp, B = weightᵀ read in place through the packing).
func (be *Backend) MatmulForward(out, inp, weight, bias []float32, N, C, OC int) {
	const op = "matmul forward"
	check.Dims(op, N, C, OC)
	check.Len(op, "out", out, N*OC)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "weight", weight, OC*C)
	check.LenOpt(op, "bias", bias, OC)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.gemm(&gemmArgs{
		M: N, N: OC, K: C,
		a: operand{x: inp, ld: C}, b: operand{x: weight, ld: C, trans: true},
		c: out, ldc: OC, alpha: 1, bias: bias,
	})
}

// MatmulBackward implements kernels.Backend: two accumulating GEMMs
// (dinp += dout·weight, dweight += doutᵀ·inp) and dbias += column sums of
// dout, each column summed over rows in order by one task.
func (be *Backend) MatmulBackward(dinp, dweight, dbias []float32, dout, inp, weight []float32, N, C, OC int) {
	const op = "matmul backward"
	check.Dims(op, N, C, OC)
	check.Len(op, "dinp", dinp, N*C)
	check.Len(op, "dweight", dweight, OC*C)
	check.LenOpt(op, "dbias", dbias, OC)
	check.Len(op, "dout", dout, N*OC)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "weight", weight, OC*C)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.gemm(&gemmArgs{
		M: N, N: C, K: OC,
		a: operand{x: dout, ld: OC}, b: operand{x: weight, ld: C},
		c: dinp, ldc: C, alpha: 1, accumulate: true,
	})
	be.gemm(&gemmArgs{
		M: OC, N: C, K: N,
		a: operand{x: dout, ld: OC, trans: true}, b: operand{x: inp, ld: C},
		c: dweight, ldc: C, alpha: 1, accumulate: true,
	})
	if dbias != nil {
		be.columnSums(dbias, dout, N, OC)
	}
}

// columnSums: dst[j] += Σ_rows src[row, j], parallel over column ranges, each
// column summed in row order.
func (be *Backend) columnSums(dst, src []float32, rows, cols int) {
	const width = 128
	be.pool.run(ceilDiv(cols, width), func(w, k int) {
		c0, c1 := k*width, min(cols, (k+1)*width)
		acc := be.workBuf(w, width)[:c1-c0]
		clear(acc)
		for r := 0; r < rows; r++ {
			vecAcc(acc, src[r*cols+c0:r*cols+c1])
		}
		vecAcc(dst[c0:c1], acc)
	})
}
