package ref

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

var geluScale = math.Sqrt(2 / math.Pi)

// gelu is GPT-2's tanh GELU in float64.
func gelu(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(geluScale*(x+0.044715*x*x*x)))
}

// geluGrad is gelu'(x).
func geluGrad(x float64) float64 {
	th := math.Tanh(geluScale * (x + 0.044715*x*x*x))
	return 0.5*(1+th) + 0.5*x*(1-th*th)*geluScale*(1+3*0.044715*x*x)
}

// product returns inp (N,C) · weight (OC,C)ᵀ + bias in float64.
func product(inp, weight, bias kernels.Tensor, N, C, OC int) []float64 {
	x, w, b := vals(inp, N*C), vals(weight, OC*C), vals(bias, OC)
	out := make([]float64, N*OC)
	for n := 0; n < N; n++ {
		for o := 0; o < OC; o++ {
			var s float64
			if b != nil {
				s = b[o]
			}
			for i := 0; i < C; i++ {
				s += x[n*C+i] * w[o*C+i]
			}
			out[n*OC+o] = s
		}
	}
	return out
}

// MatmulForward: out (N,OC) = inp (N,C) · weight (OC,C)ᵀ + bias (OC).
func (Backend) MatmulForward(out, inp, weight, bias kernels.Tensor, N, C, OC int) {
	check.MatmulForward("matmul forward", out, inp, weight, bias, N, C, OC)
	check.Host("matmul forward", out, inp, weight, bias)
	put(out, product(inp, weight, bias, N, C, OC))
}

// MatmulGeluForward: pre = inp·weightᵀ + bias, out = gelu(pre).
func (Backend) MatmulGeluForward(out, pre, inp, weight, bias kernels.Tensor, N, C, OC int) {
	check.MatmulGelu(out, pre, inp, weight, bias, N, C, OC)
	check.Host("matmul gelu forward", out, pre, inp, weight, bias)
	p := product(inp, weight, bias, N, C, OC)
	g := make([]float64, len(p))
	for i, v := range p {
		// From the float32 value a GPU kernel's epilogue holds.
		g[i] = gelu(float64(float32(v)))
	}
	put(pre, p)
	put(out, g)
}

// MatmulBackward: dinp = dout·weight (times gelu'(geluPre)), dweight += doutᵀ·inp,
// dbias += Σrows dout.
func (Backend) MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre kernels.Tensor, N, C, OC int) {
	check.MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre, N, C, OC)
	check.Host("matmul backward", dinp, dweight, dbias, dout, inp, weight, geluPre)
	d, x, w := vals(dout, N*OC), vals(inp, N*C), vals(weight, OC*C)
	if !dinp.Nil() {
		pre := vals(geluPre, N*C)
		di := make([]float64, N*C)
		for n := 0; n < N; n++ {
			for i := 0; i < C; i++ {
				var s float64
				for o := 0; o < OC; o++ {
					s += d[n*OC+o] * w[o*C+i]
				}
				if pre != nil {
					s *= geluGrad(pre[n*C+i])
				}
				di[n*C+i] = s
			}
		}
		put(dinp, di)
	}
	dw := make([]float64, OC*C)
	db := make([]float64, OC)
	for o := 0; o < OC; o++ {
		for i := 0; i < C; i++ {
			var s float64
			for n := 0; n < N; n++ {
				s += d[n*OC+o] * x[n*C+i]
			}
			dw[o*C+i] = s
		}
		for n := 0; n < N; n++ {
			db[o] += d[n*OC+o]
		}
	}
	accumulate(dweight, dw)
	if !dbias.Nil() {
		accumulate(dbias, db)
	}
}
