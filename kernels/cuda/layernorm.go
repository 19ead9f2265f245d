package cuda

import "gptkit/kernels/internal/check"

// rowsPerChunk is the row chunk of the column reductions (bias and layernorm
// weight gradients): a constant, so the summation order depends on the shape only.
const rowsPerChunk = 256

// LayerNormForward implements kernels.Backend.
func (b *Backend) LayerNormForward(out, mean, rstd []float32, inp, weight, bias []float32, N, C int) {
	const op = "layernorm forward"
	check.Dims(op, N, C)
	check.Len(op, "out", out, N*C)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "mean", mean, N)
	check.Len(op, "rstd", rstd, N)
	check.Len(op, "weight", weight, C)
	check.LenOpt(op, "bias", bias, C)
	b.enter()
	defer b.leave()
	b.launch("layernorm_forward", warpRows(N), dp(out), dp(mean), dp(rstd), dp(inp), dp(weight), dp(bias), int32(N), int32(C))
}

// LayerNormBackward implements kernels.Backend.
func (b *Backend) LayerNormBackward(dinp, dweight, dbias []float32, dout, inp, weight, mean, rstd []float32, N, C int) {
	const op = "layernorm backward"
	check.Dims(op, N, C)
	check.Len(op, "dinp", dinp, N*C)
	check.Len(op, "dout", dout, N*C)
	check.Len(op, "inp", inp, N*C)
	check.Len(op, "mean", mean, N)
	check.Len(op, "rstd", rstd, N)
	check.Len(op, "weight", weight, C)
	check.Len(op, "dweight", dweight, C)
	check.LenOpt(op, "dbias", dbias, C)
	b.enter()
	defer b.leave()
	b.launch("layernorm_backward_dinp", warpRows(N), dp(dinp), dp(dout), dp(inp), dp(weight), dp(mean), dp(rstd), int32(N), int32(C))
	chunks := (N + rowsPerChunk - 1) / rowsPerChunk
	pw := b.scratch(scrPartial, 4*chunks*C)
	var pb uintptr
	if dbias != nil {
		pb = b.scratch(scrPartial2, 4*chunks*C)
	}
	b.launch("layernorm_backward_partials", dims{gx: uint32((C + threads - 1) / threads), gy: uint32(chunks), bx: threads},
		pw, pb, dp(dout), dp(inp), dp(mean), dp(rstd), int32(N), int32(C), int32(rowsPerChunk))
	cols := dims{gx: uint32((C + threads - 1) / threads), bx: threads}
	b.launch("reduce_partials_add", cols, dp(dweight), pw, int32(chunks), int32(C))
	if dbias != nil {
		b.launch("reduce_partials_add", cols, dp(dbias), pb, int32(chunks), int32(C))
	}
}
