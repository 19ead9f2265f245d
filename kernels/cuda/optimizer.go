package cuda

import (
	"math"
	"unsafe"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// AdamW implements kernels.Backend: ref's arithmetic (bias corrections in float64
// rounded to float32, then float32 per element, no fused multiply-adds).
func (b *Backend) AdamW(params, grads, m, v []float32, o kernels.AdamW) {
	n := check.Same("adamw", params, grads, m, v)
	if o.Step < 1 {
		panic("kernels: adamw: step must be ≥ 1")
	}
	bc1 := float32(1 - math.Pow(float64(o.Beta1), float64(o.Step)))
	bc2 := float32(1 - math.Pow(float64(o.Beta2), float64(o.Step)))
	b.elementwiseN("adamw", n, dp(params), dp(grads), dp(m), dp(v), int64(n), o.LR, o.Beta1, o.Beta2, o.Eps, o.WeightDecay, bc1, bc2)
}

// elementwiseN is elementwise for kernels that take n in the middle.
func (b *Backend) elementwiseN(name string, n int, args ...any) {
	if n == 0 {
		return
	}
	b.enter()
	defer b.leave()
	b.launch(name, b.elems(n), args...)
}

// sumSquaresChunk is SumSquares' fixed chunk (the CPU backend's): one block per
// chunk sums in float64, the host adds the chunks in order.
const sumSquaresChunk = 1 << 14

// SumSquares implements kernels.Backend. It waits for the device.
func (b *Backend) SumSquares(x []float32) float64 {
	nc := (len(x) + sumSquaresChunk - 1) / sumSquaresChunk
	if nc == 0 {
		return 0
	}
	b.enter()
	defer b.leave()
	part := b.scratch(scrSumSq, 8*nc)
	b.launch("sum_squares_partials", dims{gx: uint32(nc), bx: threads}, part, dp(x), int64(len(x)), int32(sumSquaresChunk))
	host := make([]float64, nc)
	b.must(b.drv.memcpyDtoH(unsafe.Pointer(unsafe.SliceData(host)), part, 8*nc, b.stream))
	b.must(b.drv.streamSynchronize(b.stream))
	var s float64
	for _, p := range host {
		s += p
	}
	return s
}
