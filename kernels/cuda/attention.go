package cuda

import (
	"fmt"
	"math"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// flashBlock is the tensor-core kernels' tile of queries and keys (attention.cu).
const flashBlock = 64

// flashSize returns the head size the tensor-core kernels take for these
// tensors (0: the float32 warp-per-row kernels): 16-bit data, a head size of
// 16, 32, 64 or 128, and 16-byte aligned rows for cp.async.
func flashSize(dt kernels.DType, hs, C int, ts ...kernels.Tensor) int {
	if dt == kernels.Float32 || (hs != 16 && hs != 32 && hs != 64 && hs != 128) || C%8 != 0 {
		return 0
	}
	for _, t := range ts {
		if t.Addr()%16 != 0 {
			return 0
		}
	}
	return hs
}

// MaxHeadSize is the largest head size (C/NH) the attention kernels take.
const MaxHeadSize = 256

// MaxHeadSize is the package's MaxHeadSize, for the trainer to refuse a shape
// before its setup (train.NewTrainer) rather than at the first forward.
func (b *Backend) MaxHeadSize() int { return MaxHeadSize }

// headSize is C/NH, or a panic with an error, not a string, where the kernels cannot
// take it: a limit of this backend that a model's shape meets (the CPU backends have
// none), which the trainer reports in one line (cmd/train's deviceError) where a
// string's panic reached the user as a stack dump.
func headSize(op string, C, NH int) int {
	hs := C / NH
	if hs > MaxHeadSize {
		panic(fmt.Errorf("cuda: %s: head size %d (n_embd %d / n_head %d) is more than the GPU's attention kernels take (%d): use more heads (n_head), or --device cpu", op, hs, C, NH, MaxHeadSize))
	}
	return hs
}

// simtRows is the launch shape of the warp-per-row kernels (4 warps a block).
func simtRows(rows int) dims { return dims{gx: uint32((rows + 3) / 4), bx: 128} }

// AttentionForward implements kernels.Backend.
func (b *Backend) AttentionForward(out, lse, qkv kernels.Tensor, B, T, C, NH int) {
	const op = "attention forward"
	check.Attention(op, out, lse, qkv, B, T, C, NH)
	b.owned(op, out, lse, qkv)
	dt := sameType(op, out, qkv)
	hs := headSize(op, C, NH)
	scale := float32(1 / math.Sqrt(float64(hs)))
	b.enter()
	defer b.leave()
	if fs := flashSize(dt, hs, C, out, qkv); fs > 0 {
		grid := dims{gx: uint32((T + flashBlock - 1) / flashBlock), gy: uint32(B * NH), bx: 128}
		b.profFLOPs = 2 * causalMatmulFLOPs(B, T, C) // S = Q·Kᵀ, O = P·V
		b.launch(fmt.Sprintf("flash_forward_%s_%d", suffix(dt), fs), grid, out, lse, qkv, int32(T), int32(C), int32(NH), scale)
		return
	}
	b.launch(kname("attention_forward_simt", dt), simtRows(B*NH*T), out, lse, qkv, int32(B), int32(T), int32(C), int32(NH), scale)
}

// AttentionBackward implements kernels.Backend: D = rowsum(dout ⊙ out), then dK
// and dV by key blocks and dQ by query blocks (no atomics).
func (b *Backend) AttentionBackward(dqkv, dout, qkv, out, lse kernels.Tensor, B, T, C, NH int) {
	const op = "attention backward"
	check.AttentionBackward(dqkv, dout, qkv, out, lse, B, T, C, NH)
	b.owned(op, dqkv, dout, qkv, out, lse)
	dt := sameType(op, dqkv, dout, qkv, out)
	hs := headSize(op, C, NH)
	scale := float32(1 / math.Sqrt(float64(hs)))
	b.enter()
	defer b.leave()
	rows := B * NH * T
	D := b.tmp(4 * rows)
	defer b.untmp(D)
	b.launch(kname("attention_backward_d", dt), warpRows(rows), D, dout, out, int32(B), int32(T), int32(C), int32(NH))
	if fs := flashSize(dt, hs, C, dqkv, dout, qkv); fs > 0 {
		grid := dims{gx: uint32((T + flashBlock - 1) / flashBlock), gy: uint32(B * NH), bx: 128}
		args := []any{dqkv, qkv, dout, lse, D, int32(T), int32(C), int32(NH), scale}
		b.profFLOPs = 4 * causalMatmulFLOPs(B, T, C) // S, dP = dO·Vᵀ, dV, dK
		b.launch(fmt.Sprintf("flash_backward_dkdv_%s_%d", suffix(dt), fs), grid, args...)
		b.profFLOPs = 3 * causalMatmulFLOPs(B, T, C) // S, dP, dQ
		b.launch(fmt.Sprintf("flash_backward_dq_%s_%d", suffix(dt), fs), grid, args...)
		return
	}
	args := []any{dqkv, qkv, dout, lse, D, int32(B), int32(T), int32(C), int32(NH), scale}
	b.launch(kname("attention_backward_dkdv_simt", dt), simtRows(rows), args...)
	b.launch(kname("attention_backward_dq_simt", dt), simtRows(rows), args...)
}

// causalMatmulFLOPs is the FLOPs of one T×T×hs product per head under the
// causal mask (half of it), over B sequences and all heads: B·T²·C. A profile
// (profile.go) divides the flash kernels' time by them.
func causalMatmulFLOPs(B, T, C int) float64 { return float64(B) * float64(T) * float64(T) * float64(C) }
