package ref

import (
	"gptkit/kernels"
	"gptkit/kernels/internal/check"
)

func checkEncoder(op string, x, inp, wte, wpe kernels.Tensor, B, T, C int) []int32 {
	check.Dims(op, B, T, C)
	check.T(op, "activations", x, B*T*C)
	check.Typed(op, "inp", inp, kernels.Int32, B*T)
	check.Host(op, x, inp, wte, wpe)
	ids := inp.Int32s()[:B*T]
	for _, ix := range ids {
		if ix < 0 || (int(ix)+1)*C > wte.Len() {
			panic("kernels: " + op + ": token id out of range of wte")
		}
	}
	return ids
}

// EncoderForward: out (B,T,C) = wte[inp[b,t]] + wpe[t].
func (Backend) EncoderForward(out, inp, wte, wpe kernels.Tensor, B, T, C int) {
	const op = "encoder forward"
	check.T(op, "wte", wte, C)
	check.T(op, "wpe", wpe, T*C)
	ids := checkEncoder(op, out, inp, wte, wpe, B, T, C)
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
	const op = "encoder backward"
	check.Typed(op, "dwte", dwte, kernels.Float32, C)
	check.Typed(op, "dwpe", dwpe, kernels.Float32, T*C)
	ids := checkEncoder(op, dout, inp, dwte, dwpe, B, T, C)
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
