package ref

import (
	"math"

	"gptkit/kernels/internal/check"
)

const lnEps = 1e-5

// LayerNormForward normalises each row of inp (N,C); saves mean (N), rstd (N).
func (Backend) LayerNormForward(out, mean, rstd []float32, inp, weight, bias []float32, N, C int) {
	const op = "layernorm forward"
	check.Dims(op, N, C)
	check.Len(op, "out", out, N*C)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "mean", mean, N)
	check.Len(op, "rstd", rstd, N)
	check.Len(op, "weight", weight, C)
	check.LenOpt(op, "bias", bias, C)
	for n := 0; n < N; n++ {
		x := inp[n*C:][:C]
		var s float64
		for _, v := range x {
			s += float64(v)
		}
		m := s / float64(C)
		var ss float64
		for _, v := range x {
			d := float64(v) - m
			ss += d * d
		}
		rs := 1 / math.Sqrt(ss/float64(C)+lnEps)
		o := out[n*C:][:C]
		for i, v := range x {
			y := (float64(v) - m) * rs * float64(weight[i])
			if bias != nil {
				y += float64(bias[i])
			}
			o[i] = float32(y)
		}
		mean[n] = float32(m)
		rstd[n] = float32(rs)
	}
}

// LayerNormBackward accumulates into dinp (N,C), dweight (C) and dbias (C).
func (Backend) LayerNormBackward(dinp, dweight, dbias []float32, dout, inp, weight, mean, rstd []float32, N, C int) {
	const op = "layernorm backward"
	check.Dims(op, N, C)
	check.Len(op, "dinp", dinp, N*C)
	check.Len(op, "dout", dout, N*C)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "mean", mean, N)
	check.Len(op, "rstd", rstd, N)
	check.Len(op, "weight", weight, C)
	check.Len(op, "dweight", dweight, C)
	check.LenOpt(op, "dbias", dbias, C)
	dw := make([]float64, C)
	db := make([]float64, C)
	for n := 0; n < N; n++ {
		x := inp[n*C:][:C]
		d := dout[n*C:][:C]
		m, rs := float64(mean[n]), float64(rstd[n])
		// dnorm = weight·dout; the two means the normalisation couples the row by.
		var dnMean, dnNormMean float64
		for i := range x {
			norm := (float64(x[i]) - m) * rs
			dn := float64(weight[i]) * float64(d[i])
			dnMean += dn
			dnNormMean += dn * norm
		}
		dnMean /= float64(C)
		dnNormMean /= float64(C)
		di := dinp[n*C:][:C]
		for i := range x {
			norm := (float64(x[i]) - m) * rs
			dn := float64(weight[i]) * float64(d[i])
			db[i] += float64(d[i])
			dw[i] += norm * float64(d[i])
			di[i] += float32((dn - dnMean - norm*dnNormMean) * rs)
		}
	}
	for i := 0; i < C; i++ {
		dweight[i] += float32(dw[i])
		if dbias != nil {
			dbias[i] += float32(db[i])
		}
	}
}
