package cpu

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// MatmulForward implements kernels.Backend: out = inp·weightᵀ + bias, one
// GEMM (A = inp, B = weightᵀ read in place through the packing).
func (be *Backend) MatmulForward(out, inp, weight, bias kernels.Tensor, N, C, OC int) {
	check.MatmulForward("matmul forward", out, inp, weight, bias, N, C, OC)
	check.Host("matmul forward", out, inp, weight, bias)
	be.mu.Lock()
	defer be.mu.Unlock()
	o := be.out(out, N*OC, slotA)
	be.matmul(o, be.in(inp, N*C, slotB), be.in(weight, OC*C, slotC), be.in(bias, OC, slotD), N, C, OC)
	be.store(out, o)
}

func (be *Backend) matmul(out, inp, weight, bias []float32, N, C, OC int) {
	be.gemm(&gemmArgs{
		M: N, N: OC, K: C,
		a: operand{x: inp, ld: C}, b: operand{x: weight, ld: C, trans: true},
		c: out, ldc: OC, alpha: 1, bias: bias,
	})
}

// MatmulGeluForward implements kernels.Backend: the GEMM into pre, then the
// GELU of each float32 value (before pre is rounded, when it is 16-bit).
func (be *Backend) MatmulGeluForward(out, pre, inp, weight, bias kernels.Tensor, N, C, OC int) {
	check.MatmulGelu(out, pre, inp, weight, bias, N, C, OC)
	check.Host("matmul gelu forward", out, pre, inp, weight, bias)
	be.mu.Lock()
	defer be.mu.Unlock()
	p, o := be.out(pre, N*OC, slotA), be.out(out, N*OC, slotE)
	be.matmul(p, be.in(inp, N*C, slotB), be.in(weight, OC*C, slotC), be.in(bias, OC, slotD), N, C, OC)
	be.forChunks(N*OC, elementGrain/4, func(lo, hi int) { geluForward(o[lo:hi], p[lo:hi]) })
	be.store(pre, p)
	be.store(out, o)
}

// MatmulBackward implements kernels.Backend: dinp = dout·weight (a GEMM that
// writes), times gelu'(geluPre) in place in a second pass; dweight += doutᵀ·inp (an
// accumulating GEMM) and dbias += column sums of dout, each column summed over
// rows in order by one task.
func (be *Backend) MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre kernels.Tensor, N, C, OC int) {
	check.MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre, N, C, OC)
	check.Host("matmul backward", dinp, dweight, dbias, dout, inp, weight, geluPre)
	be.mu.Lock()
	defer be.mu.Unlock()
	d, x := be.in(dout, N*OC, slotA), be.in(inp, N*C, slotB)
	if !dinp.Nil() {
		w := be.in(weight, OC*C, slotC)
		di := be.out(dinp, N*C, slotD)
		be.gemm(&gemmArgs{
			M: N, N: C, K: OC,
			a: operand{x: d, ld: OC}, b: operand{x: w, ld: C},
			c: di, ldc: C, alpha: 1,
		})
		if !geluPre.Nil() { // dinp ·= gelu'(pre), in place
			pre := be.in(geluPre, N*C, slotF)
			be.forChunks(N*C, elementGrain/4, func(lo, hi int) { geluGradMul(di[lo:hi], pre[lo:hi]) })
		}
		be.store(dinp, di)
	}
	be.gemm(&gemmArgs{
		M: OC, N: C, K: N,
		a: operand{x: d, ld: OC, trans: true}, b: operand{x: x, ld: C},
		c: dweight.Float32s(), ldc: C, alpha: 1, accumulate: true,
	})
	if !dbias.Nil() {
		be.columnSums(dbias.Float32s(), d, N, OC)
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
