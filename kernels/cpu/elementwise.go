package cpu

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// ResidualForward implements kernels.Backend: out = a + b.
func (be *Backend) ResidualForward(out, a, b []float32) {
	n := check.Same("residual forward", out, a, b)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain, func(lo, hi int) { vecAdd(out[lo:hi], a[lo:hi], b[lo:hi]) })
}

// ResidualBackward implements kernels.Backend: da += dout, db += dout.
func (be *Backend) ResidualBackward(da, db, dout []float32) {
	n := check.Same("residual backward", da, db, dout)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain, func(lo, hi int) {
		vecAcc(da[lo:hi], dout[lo:hi])
		vecAcc(db[lo:hi], dout[lo:hi])
	})
}

// DropoutForward implements kernels.Backend with kernels.DropoutKeep's mask.
func (be *Backend) DropoutForward(out, inp []float32, p float32, seed uint64) {
	n := check.Same("dropout forward", out, inp)
	thr := kernels.DropoutThreshold(p)
	scale := kernels.DropoutScale(p)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain, func(lo, hi int) {
		if thr == 0 {
			copy(out[lo:hi], inp[lo:hi])
			return
		}
		for i := lo; i < hi; i++ {
			if kernels.DropoutBits(seed, i) >= thr {
				out[i] = inp[i] * scale
			} else {
				out[i] = 0
			}
		}
	})
}

// DropoutBackward implements kernels.Backend: dinp += dout·mask/(1-p).
func (be *Backend) DropoutBackward(dinp, dout []float32, p float32, seed uint64) {
	n := check.Same("dropout backward", dinp, dout)
	thr := kernels.DropoutThreshold(p)
	scale := kernels.DropoutScale(p)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain, func(lo, hi int) {
		if thr == 0 {
			vecAcc(dinp[lo:hi], dout[lo:hi])
			return
		}
		for i := lo; i < hi; i++ {
			if kernels.DropoutBits(seed, i) >= thr {
				dinp[i] += dout[i] * scale
			}
		}
	})
}

// Scale implements kernels.Backend: x *= s.
func (be *Backend) Scale(x []float32, s float32) {
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(len(x), elementGrain, func(lo, hi int) { vecScale(x[lo:hi], s) })
}

// Zero implements kernels.Backend.
func (be *Backend) Zero(x []float32) {
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(len(x), 1<<18, func(lo, hi int) { clear(x[lo:hi]) })
}

// GeluForward implements kernels.Backend.
func (be *Backend) GeluForward(out, inp []float32) {
	n := check.Same("gelu forward", out, inp)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain/4, func(lo, hi int) { geluForward(out[lo:hi], inp[lo:hi]) })
}

// GeluBackward implements kernels.Backend: dinp += gelu'(inp)·dout.
func (be *Backend) GeluBackward(dinp, inp, dout []float32) {
	n := check.Same("gelu backward", dinp, inp, dout)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(n, elementGrain/4, func(lo, hi int) { geluBackward(dinp[lo:hi], inp[lo:hi], dout[lo:hi]) })
}
