package cuda

import (
	"slices"

	"gptkit/kernels/internal/check"
)

func checkEncoder(op string, out []float32, inp []int32, wte, wpe []float32, B, T, C int) {
	check.Dims(op, B, T, C)
	check.Len(op, "out", out, B*T*C)
	check.Ints(op, "inp", inp, B*T)
	check.Len(op, "wpe", wpe, T*C)
	for _, ix := range inp[:B*T] {
		if ix < 0 || (int(ix)+1)*C > len(wte) {
			panic("kernels: encoder: token id out of range of wte")
		}
	}
}

// EncoderForward implements kernels.Backend.
func (b *Backend) EncoderForward(out []float32, inp []int32, wte, wpe []float32, B, T, C int) {
	checkEncoder("encoder forward", out, inp, wte, wpe, B, T, C)
	b.enter()
	defer b.leave()
	ids := b.copyIDs(scrIDs, inp[:B*T])
	b.launch("encoder_forward", b.elems(B*T*C), dp(out), ids, dp(wte), dp(wpe), int32(B), int32(T), int32(C))
}

// EncoderBackward implements kernels.Backend. dwpe sums over the batch per (t, c);
// dwte goes through buckets of positions per distinct token built here on the host
// (the ids are in Go memory anyway), so no two threads add into one row and the
// result is deterministic without atomics.
func (b *Backend) EncoderBackward(dwte, dwpe []float32, dout []float32, inp []int32, B, T, C int) {
	checkEncoder("encoder backward", dout, inp, dwte, dwpe, B, T, C)
	tok, start, pos := encoderBuckets(inp[:B*T])
	b.enter()
	defer b.leave()
	b.launch("encoder_backward_wpe", b.elems(T*C), dp(dwpe), dp(dout), int32(B), int32(T), int32(C))
	pt, ps, pp := b.copyIDs(scrTok, tok), b.copyIDs(scrStart, start), b.copyIDs(scrPos, pos)
	blocks := uint32(min(len(tok), 65535))
	b.launch("encoder_backward_wte", dims{gx: blocks, bx: threads}, dp(dwte), dp(dout), pt, ps, pp, int32(len(tok)), int32(C))
}

// encoderBuckets groups the positions of inp by token: bucket k is token tok[k]
// at positions pos[start[k]:start[k+1]], in increasing order (so the sum order is
// fixed).
func encoderBuckets(inp []int32) (tok, start, pos []int32) {
	keys := make([]uint64, len(inp))
	for i, t := range inp {
		keys[i] = uint64(uint32(t))<<32 | uint64(i)
	}
	slices.Sort(keys)
	pos = make([]int32, len(inp))
	for i, k := range keys {
		t := int32(k >> 32)
		if i == 0 || t != tok[len(tok)-1] {
			tok = append(tok, t)
			start = append(start, int32(i))
		}
		pos[i] = int32(uint32(k))
	}
	start = append(start, int32(len(inp)))
	return tok, start, pos
}
