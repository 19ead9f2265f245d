package ref

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

// EncoderForward: out (B,T,C) = wte[inp[b,t]] + wpe[t].
func (Backend) EncoderForward(out, inp, wte, wpe kernels.Tensor, B, T, C int) {
	check.EncoderForward(out, inp, wte, wpe, B, T, C)
	ids := check.HostIDs("encoder forward", inp, wte, B*T, C, out, wpe)
	we, pe := kernels.ReadFloat32(wte), kernels.ReadFloat32(wpe.Slice(0, T*C))
	o := make([]float64, B*T*C)
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			ix := int(ids[b*T+t])
			for i := 0; i < C; i++ {
				o[(b*T+t)*C+i] = float64(we[ix*C+i]) + float64(pe[t*C+i])
			}
		}
	}
	put(out, o)
}

// EncoderBackward: dwte[inp[b,t]] += dout[b,t]; dwpe[t] += dout[b,t], in (b,t)
// order, in float32 (each addition rounded, as the fast backends do it).
func (Backend) EncoderBackward(dwte, dwpe, dout, inp kernels.Tensor, B, T, C int) {
	check.EncoderBackward(dwte, dwpe, dout, inp, B, T, C)
	ids := check.HostIDs("encoder backward", inp, dwte, B*T, C, dout, dwpe)
	d := kernels.ReadFloat32(dout.Slice(0, B*T*C))
	dwe, dpe := dwte.Float32s(), dwpe.Float32s()
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			ix := int(ids[b*T+t])
			for i := 0; i < C; i++ {
				dwe[ix*C+i] += d[(b*T+t)*C+i]
				dpe[t*C+i] += d[(b*T+t)*C+i]
			}
		}
	}
}
