// Package ref is the reference kernels.Backend: plain, obvious loops in the
// style of llm.c's train_gpt2.c, single-threaded, written for reading rather
// than speed. It is the yardstick kernels/kerneltest measures every other
// backend against, and a fallback that works everywhere.
//
// Storage is float32, as in every backend; every sum (dot products, row means
// and variances, softmax normalisers, reductions over rows for weight and bias
// gradients) is accumulated in float64 and rounded to float32 once at the end,
// so ref is at least as accurate as any fast backend and its own rounding
// rarely dominates the comparison. Gradients are accumulated as
// grad += float32(sum), i.e. a whole reduction is added in one step.
//
// Transcendentals (exp, tanh, sqrt, log) are math's float64 functions.
package ref

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// Backend is the reference backend; its zero value is ready to use.
type Backend struct{}

// New returns the reference backend.
func New() kernels.Backend { return Backend{} }

var _ kernels.Backend = Backend{}

// Name implements kernels.Backend.
func (Backend) Name() string { return "ref" }

// Alloc implements kernels.Backend: plain Go memory.
func (Backend) Alloc(n int) []float32 { return make([]float32, n) }

// HostMemory implements kernels.HostMemory.
func (Backend) HostMemory() {}

// Sync implements kernels.Backend (nothing to wait for).
func (Backend) Sync() {}

// ResidualForward: out = a + b.
func (Backend) ResidualForward(out, a, b []float32) {
	n := check.Same("residual forward", out, a, b)
	for i := 0; i < n; i++ {
		out[i] = a[i] + b[i]
	}
}

// ResidualBackward: da += dout, db += dout.
func (Backend) ResidualBackward(da, db, dout []float32) {
	n := check.Same("residual backward", da, db, dout)
	for i := 0; i < n; i++ {
		da[i] += dout[i]
		db[i] += dout[i]
	}
}

// DropoutForward: out = inp·mask·1/(1-p) with kernels.DropoutKeep's mask.
func (Backend) DropoutForward(out, inp []float32, p float32, seed uint64) {
	n := check.Same("dropout forward", out, inp)
	scale := kernels.DropoutScale(p)
	for i := 0; i < n; i++ {
		if kernels.DropoutKeep(seed, i, p) {
			out[i] = inp[i] * scale
		} else {
			out[i] = 0
		}
	}
}

// DropoutBackward: dinp += dout·mask·1/(1-p).
func (Backend) DropoutBackward(dinp, dout []float32, p float32, seed uint64) {
	n := check.Same("dropout backward", dinp, dout)
	scale := kernels.DropoutScale(p)
	for i := 0; i < n; i++ {
		if kernels.DropoutKeep(seed, i, p) {
			dinp[i] += dout[i] * scale
		}
	}
}

// AdamW implements kernels.Backend. The bias corrections 1-β^t are computed in
// float64 and rounded to float32; the update itself is float32 arithmetic in
// the order the interface documents.
func (Backend) AdamW(params, grads, m, v []float32, o kernels.AdamW) {
	n := check.Same("adamw", params, grads, m, v)
	if o.Step < 1 {
		panic("kernels: adamw: step must be ≥ 1")
	}
	bc1 := float32(1 - math.Pow(float64(o.Beta1), float64(o.Step)))
	bc2 := float32(1 - math.Pow(float64(o.Beta2), float64(o.Step)))
	for i := 0; i < n; i++ {
		g := grads[i]
		mi := o.Beta1*m[i] + (1-o.Beta1)*g
		vi := o.Beta2*v[i] + (1-o.Beta2)*g*g
		m[i], v[i] = mi, vi
		mhat := mi / bc1
		vhat := vi / bc2
		params[i] -= o.LR * (mhat/(float32(math.Sqrt(float64(vhat)))+o.Eps) + o.WeightDecay*params[i])
	}
}

// SumSquares: Σx² in float64, left to right.
func (Backend) SumSquares(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s
}

// Scale: x *= s.
func (Backend) Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// Zero: x = 0.
func (Backend) Zero(x []float32) {
	clear(x)
}
