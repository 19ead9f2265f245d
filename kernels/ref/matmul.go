package ref

import "gptkit/kernels/internal/check"

// MatmulForward: out (N,OC) = inp (N,C) · weight (OC,C)ᵀ + bias (OC).
func (Backend) MatmulForward(out, inp, weight, bias []float32, N, C, OC int) {
	const op = "matmul forward"
	check.Dims(op, N, C, OC)
	check.Len(op, "out", out, N*OC)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "weight", weight, OC*C)
	check.LenOpt(op, "bias", bias, OC)
	for n := 0; n < N; n++ {
		x := inp[n*C:][:C]
		for o := 0; o < OC; o++ {
			w := weight[o*C:][:C]
			var s float64
			if bias != nil {
				s = float64(bias[o])
			}
			for i := range x {
				s += float64(x[i]) * float64(w[i])
			}
			out[n*OC+o] = float32(s)
		}
	}
}

// MatmulBackward: dinp += dout·weight, dweight += doutᵀ·inp, dbias += Σrows dout.
func (Backend) MatmulBackward(dinp, dweight, dbias []float32, dout, inp, weight []float32, N, C, OC int) {
	const op = "matmul backward"
	check.Dims(op, N, C, OC)
	check.Len(op, "dinp", dinp, N*C)
	check.Len(op, "dweight", dweight, OC*C)
	check.LenOpt(op, "dbias", dbias, OC)
	check.Len(op, "dout", dout, N*OC)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "weight", weight, OC*C)
	for n := 0; n < N; n++ {
		for i := 0; i < C; i++ {
			var s float64
			for o := 0; o < OC; o++ {
				s += float64(dout[n*OC+o]) * float64(weight[o*C+i])
			}
			dinp[n*C+i] += float32(s)
		}
	}
	for o := 0; o < OC; o++ {
		for i := 0; i < C; i++ {
			var s float64
			for n := 0; n < N; n++ {
				s += float64(dout[n*OC+o]) * float64(inp[n*C+i])
			}
			dweight[o*C+i] += float32(s)
		}
		if dbias != nil {
			var s float64
			for n := 0; n < N; n++ {
				s += float64(dout[n*OC+o])
			}
			dbias[o] += float32(s)
		}
	}
}
