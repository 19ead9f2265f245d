package cpu

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// AdamW implements kernels.Backend, with ref's arithmetic: bias corrections
// 1-β^t in float64 rounded to float32, then float32 per element in the order
// of the interface's formula. The gradient scale (loss scale, clipping) is
// applied to the gradients in place first, when it is not 1.
func (be *Backend) AdamW(params, grads, m, v, cp, gradNorm kernels.Tensor, o kernels.AdamW) {
	n := check.AdamW(params, grads, m, v, cp, gradNorm, o)
	check.Host("adamw", params, grads, m, v, cp, gradNorm)
	scale, ok := kernels.GradientScale(gradNorm, o)
	if !ok {
		return // the gradient is not finite: skip the step
	}
	base := adamConsts{
		lr: o.LR, b1: o.Beta1, b2: o.Beta2, eps: o.Eps,
		bc1: float32(1 - math.Pow(float64(o.Beta1), float64(o.Step))),
		bc2: float32(1 - math.Pow(float64(o.Beta2), float64(o.Step))),
	}
	base.omb1, base.omb2 = 1-base.b1, 1-base.b2
	decay, plain := base, base
	decay.wd = o.WeightDecay
	P, G, M, V := params.Float32s(), grads.Float32s()[:n], m.Float32s()[:n], v.Float32s()[:n]
	var raw []byte
	if !cp.Nil() {
		raw = cp.HostBytes()
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain, func(lo, hi int) {
		if scale != 1 {
			vecScale(G[lo:hi], scale)
		}
		if d := min(max(o.DecayLen, lo), hi); d > lo {
			adamw(P[lo:d], G[lo:d], M[lo:d], V[lo:d], &decay)
			lo = d
		}
		if lo < hi {
			adamw(P[lo:hi], G[lo:hi], M[lo:hi], V[lo:hi], &plain)
		}
	})
	if raw != nil {
		if cp.DType() == kernels.Float32 {
			copy(cp.Float32s(), P)
			return
		}
		dt := cp.DType()
		be.forChunks(n, elementGrain, func(lo, hi int) {
			kernels.EncodeFloat32(raw[lo*2:hi*2], P[lo:hi], dt)
		})
	}
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

// SumSquares implements kernels.Backend: each block's Σx² is the in-order sum
// of its chunks' sums (sumSquaresChunk elements each, summed in float64 in
// parallel).
func (be *Backend) SumSquares(out, x kernels.Tensor, block int) {
	nb := check.SumSquares(out, x, block)
	check.Host("sumsquares", out, x)
	be.mu.Lock()
	defer be.mu.Unlock()
	xs := be.in(x, x.Len(), slotA)
	per := ceilDiv(block, sumSquaresChunk)
	parts := make([]float64, nb*per)
	be.pool.run(nb*per, func(_, k int) {
		b, c := k/per, k%per
		lo := b*block + c*sumSquaresChunk
		hi := min((b+1)*block, lo+sumSquaresChunk)
		parts[k] = sumSquares(xs[lo:hi])
	})
	o := out.Float64s()
	for b := 0; b < nb; b++ {
		var s float64
		for _, p := range parts[b*per : (b+1)*per] {
			s += p
		}
		o[b] = s
	}
}
