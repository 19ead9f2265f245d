package cpu

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// AdamW implements kernels.Backend, with ref's arithmetic: bias corrections
// 1-β^t in float64 rounded to float32, then float32 per element in the order
// of the interface's formula.
func (be *Backend) AdamW(params, grads, m, v []float32, o kernels.AdamW) {
	n := check.Same("adamw", params, grads, m, v)
	if o.Step < 1 {
		panic("kernels: adamw: step must be ≥ 1")
	}
	c := adamConsts{
		lr: o.LR, b1: o.Beta1, b2: o.Beta2, eps: o.Eps, wd: o.WeightDecay,
		bc1: float32(1 - math.Pow(float64(o.Beta1), float64(o.Step))),
		bc2: float32(1 - math.Pow(float64(o.Beta2), float64(o.Step))),
	}
	c.omb1, c.omb2 = 1-c.b1, 1-c.b2
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain, func(lo, hi int) {
		adamw(params[lo:hi], grads[lo:hi], m[lo:hi], v[lo:hi], &c)
	})
}

// adamConsts is read by adamwAVX2 at fixed offsets: keep the field order.
type adamConsts struct {
	lr, b1, b2, eps, wd, bc1, bc2 float32
	omb1, omb2                    float32 // 1-b1, 1-b2
}

func adamwGo(p, g, m, v []float32, c *adamConsts) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		gi := g[i]
		mi := c.b1*m[i] + c.omb1*gi
		vi := c.b2*v[i] + c.omb2*gi*gi
		m[i], v[i] = mi, vi
		mhat := mi / c.bc1
		vhat := vi / c.bc2
		p[i] -= c.lr * (mhat/(float32(math.Sqrt(float64(vhat)))+c.eps) + c.wd*p[i])
	}
}

// sumSquaresChunk is the fixed chunk of SumSquares: each chunk's Σx² is
// summed in float64, then the chunks' sums are added in order.
const sumSquaresChunk = 1 << 14

// SumSquares implements kernels.Backend.
func (be *Backend) SumSquares(x []float32) float64 {
	be.mu.Lock()
	defer be.mu.Unlock()
	nc := ceilDiv(len(x), sumSquaresChunk)
	if nc == 0 {
		return 0
	}
	parts := make([]float64, nc)
	be.forChunks(len(x), sumSquaresChunk, func(lo, hi int) {
		parts[lo/sumSquaresChunk] = sumSquares(x[lo:hi])
	})
	var s float64
	for _, p := range parts {
		s += p
	}
	return s
}
