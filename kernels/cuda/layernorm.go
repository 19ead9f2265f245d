package cuda

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// LayerNormForward implements kernels.Backend, one warp per row.
func (b *Backend) LayerNormForward(out, mean, rstd, inp, weight, bias kernels.Tensor, N, C int) {
	const op = "layernorm forward"
	check.LayerNorm(op, out, mean, rstd, inp, weight, bias, N, C)
	b.owned(op, out, mean, rstd, inp, weight, bias)
	dt := sameType(op, out, inp, weight, bias)
	b.enter()
	defer b.leave()
	b.launch(kname("layernorm_forward", dt), warpRows(N), out, mean, rstd, inp, weight, bias, int32(N), int32(C))
}

// ResidualLayerNormForward implements kernels.Backend: one kernel, one warp per
// row adds the residual and normalizes it.
func (b *Backend) ResidualLayerNormForward(res, out, mean, rstd, a, bb, weight, bias kernels.Tensor, N, C int) {
	const op = "residual layernorm forward"
	check.ResidualLayerNorm(res, out, mean, rstd, a, bb, weight, bias, N, C)
	b.owned(op, res, out, mean, rstd, a, bb, weight, bias)
	dt := sameType(op, res, out, a, bb, weight, bias)
	b.enter()
	defer b.leave()
	b.launch(kname("residual_layernorm_forward", dt), warpRows(N), res, out, mean, rstd, a, bb, weight, bias, int32(N), int32(C))
}

// LayerNormBackward implements kernels.Backend: dinp (= dres + ...) one warp per
// row; dweight and dbias by partial sums over chunks of rows, added in order.
func (b *Backend) LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd kernels.Tensor, N, C int) {
	const op = "layernorm backward"
	check.LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd, N, C)
	b.owned(op, dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd)
	dt := sameType(op, dinp, dres, dout, inp, weight)
	b.enter()
	defer b.leave()
	// The weight gradients first: they read dout and inp, which dinp may not
	// overwrite (it never aliases them), so the order is free.
	chunks := (N + rowsPerChunk - 1) / rowsPerChunk
	pw := b.tmp(4 * chunks * C)
	var pb uintptr
	if !dbias.Nil() {
		pb = b.tmp(4 * chunks * C)
	}
	defer b.untmp(pw, pb)
	b.launch(kname("layernorm_backward_partials", dt), dims{gx: uint32((C + threads - 1) / threads), gy: uint32(chunks), bx: threads},
		pw, pb, dout, inp, mean, rstd, int32(N), int32(C), int32(rowsPerChunk))
	cols := dims{gx: uint32((C + threads - 1) / threads), bx: threads}
	b.launch("reduce_partials_add", cols, dweight, pw, int32(chunks), int32(C))
	if !dbias.Nil() {
		b.launch("reduce_partials_add", cols, dbias, pb, int32(chunks), int32(C))
	}
	b.launch(kname("layernorm_backward_dinp", dt), warpRows(N), dinp, dres, dout, inp, weight, mean, rstd, int32(N), int32(C))
}
