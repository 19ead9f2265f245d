package cuda

import (
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// AdamW implements kernels.Backend in one launch over all of params: ref's
// arithmetic (bias corrections in float64 rounded to float32, then float32 per
// element, no fused multiply-adds); the gradient scale (clipping, loss scale) is
// computed on the device from the norm's partial sums, and a non-finite norm
// skips the update there, so the host never waits for the norm.
func (b *Backend) AdamW(params, grads, m, v, cp, gradNorm kernels.Tensor, o kernels.AdamW) {
	n := check.AdamW(params, grads, m, v, cp, gradNorm, o)
	b.owned("adamw", params, grads, m, v, cp, gradNorm)
	bc1 := float32(1 - math.Pow(float64(o.Beta1), float64(o.Step)))
	bc2 := float32(1 - math.Pow(float64(o.Beta2), float64(o.Step)))
	name := "adamw_f32" // copy's type (none: any instantiation, with a null copy)
	if !cp.Nil() {
		name = kname("adamw", cp.DType())
	}
	if n == 0 {
		return
	}
	b.enter()
	defer b.leave()
	b.launch(name, b.elems(n), params, grads, m, v, cp, gradNorm, int32(gradNorm.Len()), int64(n), int64(o.DecayLen),
		o.LR, o.Beta1, o.Beta2, o.Eps, o.WeightDecay, bc1, bc2, o.GradScale, o.MaxNorm)
}

// sumSquaresChunk is SumSquares' chunk: one thread block sums a chunk in
// float64; the chunks of a block are added in order.
const sumSquaresChunk = 1 << 14

// SumSquares implements kernels.Backend: partial sums per chunk of each block,
// then each block's chunks added in order, all on the device.
func (b *Backend) SumSquares(out, x kernels.Tensor, block int) {
	nb := check.SumSquares(out, x, block)
	b.owned("sumsquares", out, x)
	if nb == 0 {
		return
	}
	per := (block + sumSquaresChunk - 1) / sumSquaresChunk
	b.enter()
	defer b.leave()
	part := b.tmp(8 * nb * per)
	defer b.untmp(part)
	b.launch(kname("sum_squares_chunks", x.DType()), dims{gx: uint32(per), gy: uint32(nb), bx: threads}, part, x, int64(block), int32(sumSquaresChunk))
	b.launch("sum_partials_d", dims{gx: uint32(nb), bx: 32}, out, part, int32(per), int32(nb))
}
