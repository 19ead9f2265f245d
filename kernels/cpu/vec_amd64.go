//go:build amd64 && !noasm && gc

package cpu

// Stubs of vec_amd64.s. Each routine is the Go function named in its comment
// (vec.go, layernorm.go, optimizer.go, attention.go) on 8 lanes at a time,
// with masked loads and stores for the tail; the wrappers below check
// lengths, then call the assembly when the CPU has AVX2 and FMA and the Go
// version otherwise. Where the assembly sums into lanes, results differ from
// the Go loop in the last bits (still independent of the thread count).

// vecAddGo
//
//go:noescape
func vecAddAVX2(out, a, b *float32, n int)

// vecAccGo
//
//go:noescape
func vecAccAVX2(dst, src *float32, n int)

// vecScaleGo
//
//go:noescape
func vecScaleAVX2(x *float32, n int, s float32)

// vecAxpyGo
//
//go:noescape
func vecAxpyAVX2(y, x *float32, n int, a float32)

// maxGo
//
//go:noescape
func vecMaxAVX2(x *float32, n int) float32

// vecSumGo (16 lanes)
//
//go:noescape
func vecSumAVX2(x *float32, n int) float32

// dotGo (16 lanes, FMA)
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

// expShiftGo, with a polynomial exp (see EXP in the .s file)
//
//go:noescape
func expShiftAVX2(x *float32, n int, m float32) float32

// softmaxBackwardGo
//
//go:noescape
func softmaxBackwardAVX2(d, p *float32, n int, dot float32)

// geluForwardGo, as x/(1+exp(-2u)) with the polynomial exp
//
//go:noescape
func geluForwardAVX2(out, inp *float32, n int)

// geluBackwardGo, as s·(1+2x(1-s)u') with s = 1/(1+exp(-2u))
//
//go:noescape
func geluBackwardAVX2(dinp, inp, dout *float32, n int)

// geluGradMulGo
//
//go:noescape
func geluGradMulAVX2(d, pre *float32, n int)

// sumSquaresGo (8 float64 lanes, FMA)
//
//go:noescape
func sumSquaresAVX2(x *float32, n int) float64

// sumDiffsGo
//
//go:noescape
func sumDiffsAVX2(x *float32, n int, m float32) (s, s2 float32)

// lnNormalizeGo (b may be nil)
//
//go:noescape
func lnNormalizeAVX2(out, x, w, b *float32, n int, m, rs float32)

// lnBackwardSumsGo
//
//go:noescape
func lnBackwardSumsAVX2(dout, x, w *float32, n int, m, rs float32) (dn, dnNorm float32)

// lnBackwardApplyGo
//
//go:noescape
func lnBackwardApplyAVX2(dinp, dw, db, dout, x, w *float32, n int, m, rs, dnMean, dnNormMean float32)

// adamwGo, operation for operation
//
//go:noescape
func adamwAVX2(p, grads, m, v *float32, n int, c *adamConsts)

// ptr returns &x[0], or nil for an empty slice (the assembly reads nothing
// then).
func ptr(x []float32) *float32 {
	if len(x) == 0 {
		return nil
	}
	return &x[0]
}

// need panics unless every slice holds at least n elements.
func need(n int, xs ...[]float32) {
	for _, x := range xs {
		if len(x) < n {
			panic("kernels/cpu: vector operand too short")
		}
	}
}

func vecAdd(out, a, b []float32) {
	if !hasAVX2 {
		vecAddGo(out, a, b)
		return
	}
	need(len(out), a, b)
	vecAddAVX2(ptr(out), ptr(a), ptr(b), len(out))
}

func vecAcc(dst, src []float32) {
	if !hasAVX2 {
		vecAccGo(dst, src)
		return
	}
	need(len(dst), src)
	vecAccAVX2(ptr(dst), ptr(src), len(dst))
}

func vecScale(x []float32, s float32) {
	if !hasAVX2 {
		vecScaleGo(x, s)
		return
	}
	vecScaleAVX2(ptr(x), len(x), s)
}

func vecAxpy(y, x []float32, a float32) {
	if !hasAVX2 {
		vecAxpyGo(y, x, a)
		return
	}
	need(len(y), x)
	vecAxpyAVX2(ptr(y), ptr(x), len(y), a)
}

func vecMax(x []float32) float32 {
	if !hasAVX2 {
		return maxGo(x)
	}
	return vecMaxAVX2(ptr(x), len(x))
}

func vecSum(x []float32) float32 {
	if !hasAVX2 {
		return vecSumGo(x)
	}
	return vecSumAVX2(ptr(x), len(x))
}

func dot(a, b []float32) float32 {
	if !hasAVX2 {
		return dotGo(a, b)
	}
	need(len(a), b)
	return dotAVX2(ptr(a), ptr(b), len(a))
}

func expShift(x []float32, m float32) float32 {
	if !hasAVX2 {
		return expShiftGo(x, m)
	}
	return expShiftAVX2(ptr(x), len(x), m)
}

func softmaxBackward(d, p []float32, dt float32) {
	if !hasAVX2 {
		softmaxBackwardGo(d, p, dt)
		return
	}
	need(len(d), p)
	softmaxBackwardAVX2(ptr(d), ptr(p), len(d), dt)
}

func geluForward(out, inp []float32) {
	if !hasAVX2 {
		geluForwardGo(out, inp)
		return
	}
	need(len(out), inp)
	geluForwardAVX2(ptr(out), ptr(inp), len(out))
}

func geluBackward(dinp, inp, dout []float32) {
	if !hasAVX2 {
		geluBackwardGo(dinp, inp, dout)
		return
	}
	need(len(dinp), inp, dout)
	geluBackwardAVX2(ptr(dinp), ptr(inp), ptr(dout), len(dinp))
}

func geluGradMul(d, pre []float32) {
	if !hasAVX2 {
		geluGradMulGo(d, pre)
		return
	}
	need(len(d), pre)
	geluGradMulAVX2(ptr(d), ptr(pre), len(d))
}

func sumSquares(x []float32) float64 {
	if !hasAVX2 {
		return sumSquaresGo(x)
	}
	return sumSquaresAVX2(ptr(x), len(x))
}

func sumDiffs(x []float32, m float32) (s, s2 float32) {
	if !hasAVX2 {
		return sumDiffsGo(x, m)
	}
	return sumDiffsAVX2(ptr(x), len(x), m)
}

func lnNormalize(out, x, w, b []float32, m, rs float32) {
	if !hasAVX2 {
		lnNormalizeGo(out, x, w, b, m, rs)
		return
	}
	need(len(out), x, w)
	if b != nil {
		need(len(out), b)
	}
	lnNormalizeAVX2(ptr(out), ptr(x), ptr(w), ptr(b), len(out), m, rs)
}

func lnBackwardSums(dout, x, w []float32, m, rs float32) (dn, dnNorm float32) {
	if !hasAVX2 {
		return lnBackwardSumsGo(dout, x, w, m, rs)
	}
	need(len(dout), x, w)
	return lnBackwardSumsAVX2(ptr(dout), ptr(x), ptr(w), len(dout), m, rs)
}

func lnBackwardApply(dinp, dw, db, dout, x, w []float32, m, rs, dnMean, dnNormMean float32) {
	if !hasAVX2 {
		lnBackwardApplyGo(dinp, dw, db, dout, x, w, m, rs, dnMean, dnNormMean)
		return
	}
	need(len(dinp), dw, db, dout, x, w)
	lnBackwardApplyAVX2(ptr(dinp), ptr(dw), ptr(db), ptr(dout), ptr(x), ptr(w), len(dinp), m, rs, dnMean, dnNormMean)
}

func adamw(p, g, m, v []float32, c *adamConsts) {
	if !hasAVX2 {
		adamwGo(p, g, m, v, c)
		return
	}
	need(len(p), g, m, v)
	adamwAVX2(ptr(p), ptr(g), ptr(m), ptr(v), len(p), c)
}
