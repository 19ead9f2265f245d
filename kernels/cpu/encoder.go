package cpu

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// EncoderForward implements kernels.Backend, parallel over rows.
func (be *Backend) EncoderForward(out, inp, wte, wpe kernels.Tensor, B, T, C int) {
	check.EncoderForward(out, inp, wte, wpe, B, T, C)
	ids := check.HostIDs("encoder forward", inp, wte, B*T, C, out, wpe)
	be.mu.Lock()
	defer be.mu.Unlock()
	we, pe := be.in(wte, wte.Len()/C*C, slotA), be.in(wpe, T*C, slotB)
	o := be.out(out, B*T*C, slotC)
	be.forChunks(B*T, max(1, elementGrain/C), func(lo, hi int) {
		for bt := lo; bt < hi; bt++ {
			t := bt % T
			ix := int(ids[bt])
			vecAdd(o[bt*C:][:C], we[ix*C:][:C], pe[t*C:][:C])
		}
	})
	be.store(out, o)
}

// EncoderBackward implements kernels.Backend. dwpe is parallel over positions
// and dwte over channel ranges; each element accumulates its rows in (b, t)
// order, exactly as ref does.
func (be *Backend) EncoderBackward(dwte, dwpe, dout, inp kernels.Tensor, B, T, C int) {
	check.EncoderBackward(dwte, dwpe, dout, inp, B, T, C)
	ids := check.HostIDs("encoder backward", inp, dwte, B*T, C, dout, dwpe)
	be.mu.Lock()
	defer be.mu.Unlock()
	d := be.in(dout, B*T*C, slotA)
	dwe, dpe := dwte.Float32s(), dwpe.Float32s()
	be.pool.run(T, func(_, t int) {
		for b := 0; b < B; b++ {
			vecAcc(dpe[t*C:][:C], d[(b*T+t)*C:][:C])
		}
	})
	const width = 64
	be.pool.run(ceilDiv(C, width), func(_, k int) {
		c0, c1 := k*width, min(C, (k+1)*width)
		for bt := 0; bt < B*T; bt++ {
			ix := int(ids[bt])
			vecAcc(dwe[ix*C+c0:ix*C+c1], d[bt*C+c0:bt*C+c1])
		}
	})
}
