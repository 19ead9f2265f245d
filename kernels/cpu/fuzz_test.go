package cpu_test

import (
	"math/rand/v2"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/kerneltest"
	"gptkit/kernels/ref"
)

func fuzzData(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

// FuzzMatmul: random dimensions and data, forward and backward of the CPU
// backend against ref.
//
//	go test ./kernels/cpu -run '^$' -fuzz FuzzMatmul -fuzztime 30s
func FuzzMatmul(f *testing.F) {
	f.Add(uint16(1), uint16(1), uint16(1), uint64(0), true, uint8(1))
	f.Add(uint16(13), uint16(129), uint16(33), uint64(1), false, uint8(2))
	f.Add(uint16(64), uint16(128), uint16(384), uint64(2), true, uint8(3))
	f.Add(uint16(7), uint16(600), uint16(5), uint64(3), true, uint8(2))
	f.Fuzz(func(t *testing.T, n, c, oc uint16, seed uint64, bias bool, threads uint8) {
		N, C, OC := int(n)%200+1, int(c)%600+1, int(oc)%400+1
		r := rand.New(rand.NewPCG(seed, 1))
		inp, w, dout := fuzzData(r, N*C), fuzzData(r, OC*C), fuzzData(r, N*OC)
		var b, db, dbRef []float32
		if bias {
			b, db = fuzzData(r, OC), fuzzData(r, OC)
			dbRef = append([]float32(nil), db...)
		}
		dinp, dw := fuzzData(r, N*C), fuzzData(r, OC*C)
		dinpRef, dwRef := append([]float32(nil), dinp...), append([]float32(nil), dw...)
		out, outRef := make([]float32, N*OC), make([]float32, N*OC)
		be, rb := cpu.New(int(threads)%4+1), ref.New()
		H, none := kernels.Host, kernels.Tensor{}
		hb := func(x []float32) kernels.Tensor {
			if x == nil {
				return none
			}
			return H(x)
		}
		be.MatmulForward(H(out), H(inp), H(w), hb(b), N, C, OC)
		rb.MatmulForward(H(outRef), H(inp), H(w), hb(b), N, C, OC)
		be.MatmulBackward(H(dinp), H(dw), hb(db), H(dout), H(inp), H(w), none, N, C, OC)
		rb.MatmulBackward(H(dinpRef), H(dwRef), hb(dbRef), H(dout), H(inp), H(w), none, N, C, OC)
		for i, p := range [][2][]float32{{out, outRef}, {dinp, dinpRef}, {dw, dwRef}, {db, dbRef}} {
			if err := kerneltest.Close(p[0], p[1], kerneltest.Tolerance, 1); err != nil {
				t.Fatalf("N%d C%d OC%d bias=%v: output %d: %v", N, C, OC, bias, i, err)
			}
		}
	})
}

// FuzzAttention: random shapes (T across the row blocks, odd head sizes),
// forward and backward against ref.
//
//	go test ./kernels/cpu -run '^$' -fuzz FuzzAttention -fuzztime 30s
func FuzzAttention(f *testing.F) {
	f.Add(uint8(1), uint16(1), uint8(1), uint8(4), uint64(0))
	f.Add(uint8(2), uint16(65), uint8(3), uint8(7), uint64(1))
	f.Add(uint8(1), uint16(130), uint8(2), uint8(32), uint64(2))
	f.Fuzz(func(t *testing.T, b uint8, tt uint16, nh, hs uint8, seed uint64) {
		B, T, NH, HS := int(b)%3+1, int(tt)%200+1, int(nh)%4+1, int(hs)%40+1
		C := NH * HS
		r := rand.New(rand.NewPCG(seed, 2))
		qkv, dout := fuzzData(r, B*T*3*C), fuzzData(r, B*T*C)
		dqkv, dqkvRef := make([]float32, B*T*3*C), make([]float32, B*T*3*C)
		out, outRef := make([]float32, B*T*C), make([]float32, B*T*C)
		lse, lseRef := make([]float32, B*NH*T), make([]float32, B*NH*T)
		be, rb := cpu.New(2), ref.New()
		H := kernels.Host
		be.AttentionForward(H(out), H(lse), H(qkv), B, T, C, NH)
		rb.AttentionForward(H(outRef), H(lseRef), H(qkv), B, T, C, NH)
		be.AttentionBackward(H(dqkv), H(dout), H(qkv), H(outRef), H(lseRef), B, T, C, NH)
		rb.AttentionBackward(H(dqkvRef), H(dout), H(qkv), H(outRef), H(lseRef), B, T, C, NH)
		for i, p := range [][2][]float32{{out, outRef}, {lse, lseRef}, {dqkv, dqkvRef}} {
			if err := kerneltest.Close(p[0], p[1], kerneltest.Tolerance, 1); err != nil {
				t.Fatalf("B%d T%d NH%d hs%d: output %d: %v", B, T, NH, HS, i, err)
			}
		}
	})
}
