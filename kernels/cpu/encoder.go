package cpu

import "gptkit/kernels/internal/check"

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

// EncoderForward implements kernels.Backend, parallel over rows.
func (be *Backend) EncoderForward(out []float32, inp []int32, wte, wpe []float32, B, T, C int) {
	checkEncoder("encoder forward", out, inp, wte, wpe, B, T, C)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.forChunks(B*T, max(1, elementGrain/C), func(lo, hi int) {
		for bt := lo; bt < hi; bt++ {
			t := bt % T
			ix := int(inp[bt])
			vecAdd(out[bt*C:][:C], wte[ix*C:][:C], wpe[t*C:][:C])
		}
	})
}

// EncoderBackward implements kernels.Backend. dwpe is parallel over positions
// and dwte over channel ranges; each element accumulates its rows in (b, t)
// order, exactly as ref does.
func (be *Backend) EncoderBackward(dwte, dwpe []float32, dout []float32, inp []int32, B, T, C int) {
	checkEncoder("encoder backward", dout, inp, dwte, dwpe, B, T, C)
	be.mu.Lock()
	defer be.mu.Unlock()
	be.pool.run(T, func(_, t int) {
		for b := 0; b < B; b++ {
			vecAcc(dwpe[t*C:][:C], dout[(b*T+t)*C:][:C])
		}
	})
	const width = 64
	be.pool.run(ceilDiv(C, width), func(_, k int) {
		c0, c1 := k*width, min(C, (k+1)*width)
		for bt := 0; bt < B*T; bt++ {
			ix := int(inp[bt])
			vecAcc(dwte[ix*C+c0:ix*C+c1], dout[bt*C+c0:bt*C+c1])
		}
	})
}
