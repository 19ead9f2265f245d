package cpu

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// DropoutForward implements kernels.Backend with kernels.DropoutKeep's mask.
func (be *Backend) DropoutForward(out, inp kernels.Tensor, p float32, seed uint64) {
	be.dropout("dropout forward", out, inp, p, seed)
}

// DropoutBackward implements kernels.Backend: dinp = dout·mask/(1-p).
func (be *Backend) DropoutBackward(dinp, dout kernels.Tensor, p float32, seed uint64) {
	be.dropout("dropout backward", dinp, dout, p, seed)
}

func (be *Backend) dropout(op string, out, inp kernels.Tensor, p float32, seed uint64) {
	n := check.Same(op, out, inp)
	check.Host(op, out, inp)
	thr := kernels.DropoutThreshold(p)
	scale := kernels.DropoutScale(p)
	be.mu.Lock()
	defer be.mu.Unlock()
	x := be.in(inp, n, slotA)
	o := be.out(out, n, slotB)
	be.forChunks(n, elementGrain, func(lo, hi int) {
		if thr == 0 {
			copy(o[lo:hi], x[lo:hi])
			return
		}
		for i := lo; i < hi; i++ {
			if kernels.DropoutBits(seed, i) >= thr {
				o[i] = x[i] * scale
			} else {
				o[i] = 0
			}
		}
	})
	be.store(out, o)
}

// Zero implements kernels.Backend.
func (be *Backend) Zero(x kernels.Tensor) {
	check.Host("zero", x)
	b := x.HostBytes()
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(len(b), 1<<20, func(lo, hi int) { clear(b[lo:hi]) })
}

// Convert implements kernels.Backend: widen, then round to dst's dtype.
func (be *Backend) Convert(dst, src kernels.Tensor) {
	n := check.Same("convert", dst, src)
	check.Host("convert", dst, src)
	be.mu.Lock()
	defer be.mu.Unlock()
	x := be.in(src, n, slotA)
	if dst.DType() == kernels.Float32 {
		copy(dst.Float32s(), x)
		return
	}
	be.store(dst.Slice(0, n), x)
}
