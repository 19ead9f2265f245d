//go:build !amd64 || noasm || !gc

package cpu

func vecAdd(out, a, b []float32)                { vecAddGo(out, a, b) }
func vecAcc(dst, src []float32)                 { vecAccGo(dst, src) }
func vecScale(x []float32, s float32)           { vecScaleGo(x, s) }
func sumSquares(x []float32) float64            { return sumSquaresGo(x) }
func geluForward(out, inp []float32)            { geluForwardGo(out, inp) }
func geluBackward(dinp, inp, dout []float32)    { geluBackwardGo(dinp, inp, dout) }
func geluGradMul(d, pre []float32)              { geluGradMulGo(d, pre) }
func expShift(x []float32, m float32) float32   { return expShiftGo(x, m) }
func vecMax(x []float32) float32                { return maxGo(x) }
func dot(a, b []float32) float32                { return dotGo(a, b) }
func adamw(p, g, m, v []float32, c *adamConsts) { adamwGo(p, g, m, v, c) }

func vecSum(x []float32) float32                        { return vecSumGo(x) }
func sumDiffs(x []float32, m float32) (s, s2 float32)   { return sumDiffsGo(x, m) }
func lnNormalize(out, x, w, b []float32, m, rs float32) { lnNormalizeGo(out, x, w, b, m, rs) }

func vecAxpy(y, x []float32, a float32) { vecAxpyGo(y, x, a) }

func softmaxBackward(d, p []float32, dot float32) { softmaxBackwardGo(d, p, dot) }

func lnBackwardSums(dout, x, w []float32, m, rs float32) (dn, dnNorm float32) {
	return lnBackwardSumsGo(dout, x, w, m, rs)
}

func lnBackwardApply(dinp, dw, db, dout, x, w []float32, m, rs, dnMean, dnNormMean float32) {
	lnBackwardApplyGo(dinp, dw, db, dout, x, w, m, rs, dnMean, dnNormMean)
}
