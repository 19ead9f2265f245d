package check

import "gptkit/kernels"

// The checks of each op's arguments, shared by every backend: the tensors
// present, of the dtypes the op takes and long enough, the dims positive and
// consistent. Ownership is each backend's (Host for the host backends).

// EncoderForward checks kernels.Backend.EncoderForward's arguments.
func EncoderForward(out, inp, wte, wpe kernels.Tensor, B, T_, C int) {
	const op = "encoder forward"
	encoder(op, out, inp, B, T_, C)
	T(op, "wte", wte, C)
	T(op, "wpe", wpe, T_*C)
}

// EncoderBackward checks kernels.Backend.EncoderBackward's arguments.
func EncoderBackward(dwte, dwpe, dout, inp kernels.Tensor, B, T_, C int) {
	const op = "encoder backward"
	encoder(op, dout, inp, B, T_, C)
	Typed(op, "dwte", dwte, kernels.Float32, C)
	Typed(op, "dwpe", dwpe, kernels.Float32, T_*C)
}

func encoder(op string, x, inp kernels.Tensor, B, T_, C int) {
	Dims(op, B, T_, C)
	T(op, "activations", x, B*T_*C)
	Typed(op, "inp", inp, kernels.Int32, B*T_)
}

// LayerNorm checks a layernorm's output, statistics, input and parameters.
func LayerNorm(op string, out, mean, rstd, inp, weight, bias kernels.Tensor, N, C int) {
	Dims(op, N, C)
	T(op, "out", out, N*C)
	T(op, "inp", inp, N*C)
	Typed(op, "mean", mean, kernels.Float32, N)
	Typed(op, "rstd", rstd, kernels.Float32, N)
	T(op, "weight", weight, C)
	Opt(op, "bias", bias, C)
}

// ResidualLayerNorm checks kernels.Backend.ResidualLayerNormForward's arguments.
func ResidualLayerNorm(res, out, mean, rstd, a, b, weight, bias kernels.Tensor, N, C int) {
	const op = "residual layernorm forward"
	LayerNorm(op, out, mean, rstd, res, weight, bias, N, C)
	T(op, "a", a, N*C)
	T(op, "b", b, N*C)
}

// LayerNormBackward checks kernels.Backend.LayerNormBackward's arguments.
func LayerNormBackward(dinp, dweight, dbias, dres, dout, inp, weight, mean, rstd kernels.Tensor, N, C int) {
	const op = "layernorm backward"
	LayerNorm(op, dout, mean, rstd, inp, weight, kernels.Tensor{}, N, C)
	T(op, "dinp", dinp, N*C)
	Opt(op, "dres", dres, N*C)
	Typed(op, "dweight", dweight, kernels.Float32, C)
	TypedOpt(op, "dbias", dbias, kernels.Float32, C)
}

// MatmulForward checks a matmul forward's output, input, weight and bias.
func MatmulForward(op string, out, inp, weight, bias kernels.Tensor, N, C, OC int) {
	Dims(op, N, C, OC)
	T(op, "out", out, N*OC)
	T(op, "inp", inp, N*C)
	T(op, "weight", weight, OC*C)
	Opt(op, "bias", bias, OC)
}

// MatmulGelu checks kernels.Backend.MatmulGeluForward's arguments.
func MatmulGelu(out, pre, inp, weight, bias kernels.Tensor, N, C, OC int) {
	const op = "matmul gelu forward"
	MatmulForward(op, out, inp, weight, bias, N, C, OC)
	T(op, "pre", pre, N*OC)
	NoOverlap(op, out, pre)
}

// MatmulBackward checks kernels.Backend.MatmulBackward's arguments.
func MatmulBackward(dinp, dweight, dbias, dout, inp, weight, geluPre kernels.Tensor, N, C, OC int) {
	const op = "matmul backward"
	Dims(op, N, C, OC)
	Opt(op, "dinp", dinp, N*C)
	Typed(op, "dweight", dweight, kernels.Float32, OC*C)
	TypedOpt(op, "dbias", dbias, kernels.Float32, OC)
	T(op, "dout", dout, N*OC)
	T(op, "inp", inp, N*C)
	T(op, "weight", weight, OC*C)
	Opt(op, "geluPre", geluPre, N*C)
}

// Attention checks attention's output, logsumexp and qkv.
func Attention(op string, out, lse, qkv kernels.Tensor, B, T_, C, NH int) {
	Dims(op, B, T_, C, NH)
	Heads(op, C, NH)
	T(op, "out", out, B*T_*C)
	Typed(op, "lse", lse, kernels.Float32, B*NH*T_)
	T(op, "qkv", qkv, B*T_*3*C)
}

// AttentionBackward checks kernels.Backend.AttentionBackward's arguments.
func AttentionBackward(dqkv, dout, qkv, out, lse kernels.Tensor, B, T_, C, NH int) {
	const op = "attention backward"
	Attention(op, out, lse, qkv, B, T_, C, NH)
	T(op, "dout", dout, B*T_*C)
	T(op, "dqkv", dqkv, B*T_*3*C)
}

// Classifier checks kernels.Backend.Classifier's arguments (the targets' values
// are the backend's to check, where it can see them).
func Classifier(losses, lossSum, dinp, dweight, logits, inp, weight, targets kernels.Tensor, N, C, V, Vp int) {
	const op = "classifier"
	Dims(op, N, C, V, Vp)
	Vocab(op, V, Vp)
	Typed(op, "losses", losses, kernels.Float32, N)
	TypedOpt(op, "lossSum", lossSum, kernels.Float64, 1)
	Opt(op, "dinp", dinp, N*C)
	TypedOpt(op, "dweight", dweight, kernels.Float32, Vp*C)
	T(op, "logits", logits, Vp)
	T(op, "inp", inp, N*C)
	T(op, "weight", weight, Vp*C)
	Typed(op, "targets", targets, kernels.Int32, N)
}

// Targets panics unless every target is below V.
func Targets(op string, targets []int32, V int) {
	for _, t := range targets {
		if int(t) >= V {
			fail(op, "target ≥ V")
		}
	}
}

// AdamW checks kernels.Backend.AdamW's arguments and returns the element count.
func AdamW(params, grads, m, v, cp, gradNorm kernels.Tensor, o kernels.AdamW) int {
	const op = "adamw"
	n := params.Len()
	Typed(op, "params", params, kernels.Float32, n)
	Typed(op, "grads", grads, kernels.Float32, n)
	Typed(op, "m", m, kernels.Float32, n)
	Typed(op, "v", v, kernels.Float32, n)
	Opt(op, "copy", cp, n)
	TypedOpt(op, "gradNorm", gradNorm, kernels.Float64, 0)
	if o.Step < 1 {
		fail(op, "step must be ≥ 1")
	}
	if o.MaxNorm > 0 && gradNorm.Nil() {
		fail(op, "MaxNorm without gradNorm")
	}
	return n
}

// SumSquares checks kernels.Backend.SumSquares' arguments and returns the
// number of blocks.
func SumSquares(out, x kernels.Tensor, block int) int {
	const op = "sumsquares"
	Dims(op, block)
	T(op, "x", x, 0)
	if x.Len()%block != 0 {
		fail(op, "len(x) is not a multiple of block")
	}
	nb := x.Len() / block
	Typed(op, "out", out, kernels.Float64, nb)
	return nb
}

// HostIDs checks, for a host backend's encoder, that its tensors are host
// memory and that each of the n token ids of inp has a row in wte (rows of C),
// and returns the ids.
func HostIDs(op string, inp, wte kernels.Tensor, n, C int, others ...kernels.Tensor) []int32 {
	Host(op, append(others, inp, wte)...)
	ids := inp.Int32s()[:n]
	for _, ix := range ids {
		if ix < 0 || (int(ix)+1)*C > wte.Len() {
			fail(op, "token id out of range of wte")
		}
	}
	return ids
}
