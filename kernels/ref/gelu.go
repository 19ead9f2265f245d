package ref

import (
	"math"

	"gptkit/kernels/internal/check"
)

var geluScale = math.Sqrt(2 / math.Pi)

// GeluForward: out = 0.5·x·(1+tanh(√(2/π)(x+0.044715x³))), in float64.
func (Backend) GeluForward(out, inp []float32) {
	n := check.Same("gelu forward", out, inp)
	for i := 0; i < n; i++ {
		x := float64(inp[i])
		out[i] = float32(0.5 * x * (1 + math.Tanh(geluScale*(x+0.044715*x*x*x))))
	}
}

// GeluBackward: dinp += gelu'(inp)·dout, in float64.
func (Backend) GeluBackward(dinp, inp, dout []float32) {
	n := check.Same("gelu backward", dinp, inp, dout)
	for i := 0; i < n; i++ {
		x := float64(inp[i])
		th := math.Tanh(geluScale * (x + 0.044715*x*x*x))
		sech2 := 1 - th*th
		g := 0.5*(1+th) + 0.5*x*sech2*geluScale*(1+3*0.044715*x*x)
		dinp[i] += float32(g * float64(dout[i]))
	}
}
