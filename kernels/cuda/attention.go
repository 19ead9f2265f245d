package cuda

import (
	"math"

	"gptkit/kernels/internal/check"
)

// attnGemms are the products of one attention pass over B·NH heads, each with
// q, k, v, y of T×hs (row-major, contiguous per head) and att of T×T.
//
// Forward: att = scale·q·kᵀ (then softmax), y = att·v.
// Backward: datt = dy·vᵀ, dv = attᵀ·dy, (softmax backward: datt → dS),
// dq = scale·dS·k, dk = scale·dSᵀ·q.
func attnForwardGemms(att, q, k, v, y uintptr, BH, T, hs int, scale float32) (scores, values gemm) {
	sh, st := int64(T*hs), int64(T*T)
	scores = gemm{transA: true, m: T, n: T, k: hs, alpha: scale, A: k, lda: hs, strideA: sh, B: q, ldb: hs, strideB: sh,
		C: att, ldc: T, strideC: st, batch: BH}
	values = gemm{m: hs, n: T, k: T, alpha: 1, A: v, lda: hs, strideA: sh, B: att, ldb: T, strideB: st,
		C: y, ldc: hs, strideC: sh, batch: BH}
	return scores, values
}

func attnBackwardGemms(datt, att, q, k, v, dy, dq, dk, dv uintptr, BH, T, hs int, scale float32) (gDatt, gDv, gDq, gDk gemm) {
	sh, st := int64(T*hs), int64(T*T)
	gDatt = gemm{transA: true, m: T, n: T, k: hs, alpha: 1, A: v, lda: hs, strideA: sh, B: dy, ldb: hs, strideB: sh,
		C: datt, ldc: T, strideC: st, batch: BH}
	gDv = gemm{transB: true, m: hs, n: T, k: T, alpha: 1, A: dy, lda: hs, strideA: sh, B: att, ldb: T, strideB: st,
		C: dv, ldc: hs, strideC: sh, batch: BH}
	gDq = gemm{m: hs, n: T, k: T, alpha: scale, A: k, lda: hs, strideA: sh, B: datt, ldb: T, strideB: st,
		C: dq, ldc: hs, strideC: sh, batch: BH}
	gDk = gemm{transB: true, m: hs, n: T, k: T, alpha: scale, A: q, lda: hs, strideA: sh, B: datt, ldb: T, strideB: st,
		C: dk, ldc: hs, strideC: sh, batch: BH}
	return
}

func checkAttention(op, outName string, out, att, qkv []float32, B, T, C, NH int) {
	check.Dims(op, B, T, C, NH)
	check.Heads(op, C, NH)
	check.Len(op, outName, out, B*T*C)
	check.Len(op, "att", att, B*NH*T*T)
	check.Len(op, "qkv", qkv, B*T*3*C)
}

// AttentionForward implements kernels.Backend.
func (b *Backend) AttentionForward(out, att []float32, qkv []float32, B, T, C, NH int) {
	checkAttention("attention forward", "out", out, att, qkv, B, T, C, NH)
	hs := C / NH
	n := B * T * C
	b.enter()
	defer b.leave()
	q, k, v, y := b.scratch(scrQ, 4*n), b.scratch(scrK, 4*n), b.scratch(scrV, 4*n), b.scratch(scrY, 4*n)
	b.launch("attention_permute", b.elems(n), q, k, v, dp(qkv), int32(B), int32(T), int32(NH), int32(hs))
	scale := float32(1 / math.Sqrt(float64(hs)))
	gs, gv := attnForwardGemms(dp(att), q, k, v, y, B*NH, T, hs, scale)
	b.gemm(gs)
	rows := B * NH * T
	b.launch("attention_softmax_forward", warpRows(rows), dp(att), int64(rows), int32(T))
	b.gemm(gv)
	b.launch("attention_unpermute", b.elems(n), dp(out), y, int32(B), int32(T), int32(NH), int32(hs))
}

// AttentionBackward implements kernels.Backend.
func (b *Backend) AttentionBackward(dqkv []float32, dout, qkv, att []float32, B, T, C, NH int) {
	checkAttention("attention backward", "dout", dout, att, qkv, B, T, C, NH)
	check.Len("attention backward", "dqkv", dqkv, B*T*3*C)
	hs := C / NH
	n := B * T * C
	b.enter()
	defer b.leave()
	q, k, v, dy := b.scratch(scrQ, 4*n), b.scratch(scrK, 4*n), b.scratch(scrV, 4*n), b.scratch(scrY, 4*n)
	dq, dk, dv := b.scratch(scrDQ, 4*n), b.scratch(scrDK, 4*n), b.scratch(scrDV, 4*n)
	datt := b.scratch(scrDAtt, 4*B*NH*T*T)
	b.launch("attention_permute", b.elems(n), q, k, v, dp(qkv), int32(B), int32(T), int32(NH), int32(hs))
	b.launch("attention_unpermute_backward", b.elems(n), dy, dp(dout), int32(B), int32(T), int32(NH), int32(hs))
	scale := float32(1 / math.Sqrt(float64(hs)))
	gDatt, gDv, gDq, gDk := attnBackwardGemms(datt, dp(att), q, k, v, dy, dq, dk, dv, B*NH, T, hs, scale)
	b.gemm(gDatt)
	b.gemm(gDv)
	rows := B * NH * T
	b.launch("attention_softmax_backward", warpRows(rows), datt, dp(att), int64(rows), int32(T))
	b.gemm(gDq)
	b.gemm(gDk)
	b.launch("attention_permute_backward", b.elems(n), dp(dqkv), dq, dk, dv, int32(B), int32(T), int32(NH), int32(hs))
}
