package cpu

import (
	"gptkit/kernels"
)

// The CPU computes in float32. A Float32 tensor is used in place; a BFloat16 or
// Float16 operand is widened into a float32 copy first (exact), and a 16-bit
// output is computed in float32 and rounded once, to nearest even, when stored:
// the arithmetic of a GPU kernel that loads 16-bit values, computes in float32
// and stores 16-bit results. It costs the copies, which is fine for the CPU's
// role in mixed precision (checking the algorithm end to end on every CI run);
// float32 runs never take this path.

// Scratch slots of the widened copies; an op uses each slot for one tensor.
const (
	slotA = iota
	slotB
	slotC
	slotD
	slotE
	slotF
	slotG
	slotH
	numSlots
)

// wideBuf returns scratch slot s with at least n floats.
func (be *Backend) wideBuf(s, n int) []float32 {
	if be.wide == nil {
		be.wide = make([][]float32, numSlots)
	}
	if len(be.wide[s]) < n {
		be.wide[s] = alignedFloats(n)
	}
	return be.wide[s][:n]
}

// in returns t's first n elements as float32: t's own memory when it is
// Float32, else a widened copy in slot s; nil for no tensor.
func (be *Backend) in(t kernels.Tensor, n, s int) []float32 {
	if t.Nil() {
		return nil
	}
	if t.DType() == kernels.Float32 {
		return t.Float32s()[:n:n]
	}
	w := be.wideBuf(s, n)
	raw := t.HostBytes()
	dt := t.DType()
	be.forChunks(n, elementGrain, func(lo, hi int) {
		kernels.DecodeFloat32(w[lo:hi], raw[lo*2:hi*2], dt)
	})
	return w
}

// out returns where an op writes t's first n elements in float32: t itself when
// it is Float32, else slot s, which store then rounds into t. nil for no tensor.
func (be *Backend) out(t kernels.Tensor, n, s int) []float32 {
	if t.Nil() {
		return nil
	}
	if t.DType() == kernels.Float32 {
		return t.Float32s()[:n:n]
	}
	return be.wideBuf(s, n)
}

// inout is out with t's current values (for outputs read before written).
func (be *Backend) inout(t kernels.Tensor, n, s int) []float32 { return be.in(t, n, s) }

// store rounds x into t when t is not Float32 (x came from out or inout).
func (be *Backend) store(t kernels.Tensor, x []float32) {
	if t.Nil() || t.DType() == kernels.Float32 {
		return
	}
	raw := t.HostBytes()
	dt := t.DType()
	be.forChunks(len(x), elementGrain, func(lo, hi int) {
		kernels.EncodeFloat32(raw[lo*2:hi*2], x[lo:hi], dt)
	})
}

// round rounds x in place to the values dtype dt can hold (what storing and
// reloading them gives), for results a 16-bit op reuses after storing.
func (be *Backend) round(x []float32, dt kernels.DType) {
	if dt == kernels.Float32 {
		return
	}
	be.forChunks(len(x), elementGrain, func(lo, hi int) {
		for i, v := range x[lo:hi] {
			x[lo+i] = kernels.Round(dt, v)
		}
	})
}
