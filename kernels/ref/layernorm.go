package ref

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

const lnEps = 1e-5

// LayerNormForward normalizes each row of inp (N,C); saves mean (N), rstd (N).
func (Backend) LayerNormForward(out, mean, rstd, inp, weight, bias kernels.Tensor, N, C int) {
	check.LayerNorm("layernorm forward", out, mean, rstd, inp, weight, bias, N, C)
	check.Host("layernorm forward", out, mean, rstd, inp, weight, bias)
	layerNorm(out, mean, rstd, vals(inp, N*C), weight, bias, N, C)
}

// ResidualLayerNormForward: res = a + b, then the layernorm of res (as stored).
func (Backend) ResidualLayerNormForward(res, out, mean, rstd, a, b, weight, bias kernels.Tensor, N, C int) {
	check.ResidualLayerNorm(res, out, mean, rstd, a, b, weight, bias, N, C)
	check.Host("residual layernorm forward", res, out, mean, rstd, a, b, weight, bias)
	x, y := vals(a, N*C), vals(b, N*C)
	for i := range x {
		x[i] += y[i]
	}
	put(res, x)
	layerNorm(out, mean, rstd, vals(res, N*C), weight, bias, N, C)
}

func layerNorm(out, mean, rstd kernels.Tensor, x []float64, weight, bias kernels.Tensor, N, C int) {
	w, bs := vals(weight, C), vals(bias, C)
	o := make([]float64, N*C)
	ms, rs := make([]float64, N), make([]float64, N)
	for n := 0; n < N; n++ {
		row := x[n*C : (n+1)*C]
		var s float64
		for _, v := range row {
			s += v
		}
		m := s / float64(C)
		var ss float64
		for _, v := range row {
			ss += (v - m) * (v - m)
		}
		r := 1 / math.Sqrt(ss/float64(C)+lnEps)
		for i, v := range row {
			y := (v - m) * r * w[i]
			if bs != nil {
				y += bs[i]
			}
			o[n*C+i] = y
		}
		ms[n], rs[n] = m, r
	}
	put(out, o)
	put(mean, ms)
	put(rstd, rs)
}

// LayerNormBackward: dinp = dres + the layernorm's input gradient; dweight and
// dbias accumulate.
func (Backend) LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd kernels.Tensor, N, C int) {
	check.LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd, N, C)
	check.Host("layernorm backward", dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd)
	x, d, w := vals(inp, N*C), vals(dout, N*C), vals(weight, C)
	ms, rs := vals(mean, N), vals(rstd, N)
	di := make([]float64, N*C)
	if !dres.Nil() {
		di = vals(dres, N*C)
	}
	dw := make([]float64, C)
	db := make([]float64, C)
	for n := 0; n < N; n++ {
		m, r := ms[n], rs[n]
		// dnorm = weight·dout; the two means the normalization couples the row by.
		var dnMean, dnNormMean float64
		for i := 0; i < C; i++ {
			norm := (x[n*C+i] - m) * r
			dn := w[i] * d[n*C+i]
			dnMean += dn
			dnNormMean += dn * norm
		}
		dnMean /= float64(C)
		dnNormMean /= float64(C)
		for i := 0; i < C; i++ {
			norm := (x[n*C+i] - m) * r
			dn := w[i] * d[n*C+i]
			db[i] += d[n*C+i]
			dw[i] += norm * d[n*C+i]
			di[n*C+i] += (dn - dnMean - norm*dnNormMean) * r
		}
	}
	put(dinp, di)
	accumulate(dweight, dw)
	if !dbias.Nil() {
		accumulate(dbias, db)
	}
}
