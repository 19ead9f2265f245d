package ref

import "gptkit/kernels/internal/check"

func checkEncoder(op string, out []float32, inp []int32, wpe []float32, B, T, C int) {
	check.Dims(op, B, T, C)
	check.Len(op, "out", out, B*T*C)
	check.Ints(op, "inp", inp, B*T)
	check.Len(op, "wpe", wpe, T*C)
}

func checkToken(ix int32, wte []float32, C int) int {
	i := int(ix)
	if i < 0 || (i+1)*C > len(wte) {
		panic("kernels: encoder: token id out of range of wte")
	}
	return i
}

// EncoderForward: out (B,T,C) = wte[inp[b,t]] + wpe[t].
func (Backend) EncoderForward(out []float32, inp []int32, wte, wpe []float32, B, T, C int) {
	checkEncoder("encoder forward", out, inp, wpe, B, T, C)
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			o := out[(b*T+t)*C:][:C]
			ix := checkToken(inp[b*T+t], wte, C)
			we := wte[ix*C:][:C]
			pe := wpe[t*C:][:C]
			for i := 0; i < C; i++ {
				o[i] = we[i] + pe[i]
			}
		}
	}
}

// EncoderBackward: dwte[inp[b,t]] += dout[b,t]; dwpe[t] += dout[b,t], in (b,t) order.
func (Backend) EncoderBackward(dwte, dwpe []float32, dout []float32, inp []int32, B, T, C int) {
	checkEncoder("encoder backward", dout, inp, dwpe, B, T, C)
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			d := dout[(b*T+t)*C:][:C]
			ix := checkToken(inp[b*T+t], dwte, C)
			dwe := dwte[ix*C:][:C]
			dpe := dwpe[t*C:][:C]
			for i := 0; i < C; i++ {
				dwe[i] += d[i]
				dpe[i] += d[i]
			}
		}
	}
}
