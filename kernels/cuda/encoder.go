package cuda

import (
	"slices"

	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// EncoderForward implements kernels.Backend. Token ids out of range are not
// checked on the device (the trainer checks them on the host before the upload).
func (b *Backend) EncoderForward(out, inp, wte, wpe kernels.Tensor, B, T, C int) {
	const op = "encoder forward"
	check.EncoderForward(out, inp, wte, wpe, B, T, C)
	b.owned(op, out, inp, wte, wpe)
	dt := sameType(op, out, wte, wpe)
	b.enter()
	defer b.leave()
	b.checkIDs(op, inp, B*T, wte.Len()/C)
	b.launch(kname("encoder_forward", dt), b.elems(B*T*C), out, inp, wte, wpe, int32(B), int32(T), int32(C))
}

// checkIDs panics on a token id outside [0, V) when the ids' host copy is at
// hand (the upload's mirror; nothing is downloaded for the check).
func (b *Backend) checkIDs(op string, inp kernels.Tensor, n, V int) {
	for addr, ids := range b.mem.idMirror {
		if a := inp.Addr(); a >= addr && a+uintptr(4*n) <= addr+uintptr(4*len(ids)) {
			off := int(a-addr) / 4
			for _, ix := range ids[off : off+n] {
				if ix < 0 || int(ix) >= V {
					panic("kernels: " + op + ": token id out of range of wte")
				}
			}
			return
		}
	}
}

// EncoderBackward implements kernels.Backend. dwpe sums over the batch per (t, c);
// dwte goes through buckets of positions per distinct token built on the host
// from the ids' host copy (llm.c's way), so no two threads add into one row and
// the result is deterministic without atomics.
func (b *Backend) EncoderBackward(dwte, dwpe, dout, inp kernels.Tensor, B, T, C int) {
	const op = "encoder backward"
	check.EncoderBackward(dwte, dwpe, dout, inp, B, T, C)
	b.owned(op, dwte, dwpe, dout, inp)
	dt := dout.DType()
	b.enter()
	defer b.leave()
	ids := b.hostIDs(inp, B*T)
	for _, ix := range ids {
		if ix < 0 || (int(ix)+1)*C > dwte.Len() {
			panic("kernels: " + op + ": token id out of range of wte")
		}
	}
	tok, start, pos := encoderBuckets(ids)
	b.launch(kname("encoder_backward_wpe", dt), b.elems(T*C), dwpe, dout, int32(B), int32(T), int32(C))
	buckets := b.tmp(4 * (len(tok) + len(start) + len(pos)))
	defer b.untmp(buckets)
	all := append(append(append([]int32(nil), tok...), start...), pos...)
	b.copyIn(buckets, kernels.Int32Bytes(all))
	pt := buckets
	ps := pt + uintptr(4*len(tok))
	pp := ps + uintptr(4*len(start))
	blocks := uint32(min(len(tok), 65535))
	b.launch(kname("encoder_backward_wte", dt), dims{gx: blocks, bx: threads}, dwte, dout, pt, ps, pp, int32(len(tok)), int32(C))
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
