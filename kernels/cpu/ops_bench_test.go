package cpu

import (
	"fmt"
	"testing"

	"gptkit/kernels"
)

// Benchmarks of the non-matmul ops at the baby and 124M shapes, threads 1 and
// 2. The whole file runs in about a minute with -benchtime 3x:
//
//	go test ./kernels/cpu -run '^$' -bench Ops -benchtime 3x

type gptShape struct {
	name               string
	B, T, C, NH, V, Vp int
	params             int // AdamW/SumSquares slice length (a slice of the full model for 124M)
}

var benchShapes = []gptShape{
	{"baby", 12, 64, 128, 4, 65, 128, 800_000},
	{"124M", 1, 1024, 768, 12, 50257, 50304, 1 << 24},
}

func BenchmarkOps(b *testing.B) {
	for _, s := range benchShapes {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, threads), func(b *testing.B) {
				benchOps(b, newBackend(threads), s)
			})
		}
	}
}

func benchOps(b *testing.B, be *Backend, s gptShape) {
	B, T, C, NH, V, Vp := s.B, s.T, s.C, s.NH, s.V, s.Vp
	N := B * T
	inp := make([]int32, N)
	for i := range inp {
		inp[i] = int32(i * 7919 % V)
	}
	x, y, out := randFloats(N*C), randFloats(N*C), randFloats(N*C)
	w, bias, dw, db := randFloats(C), randFloats(C), randFloats(C), randFloats(C)
	mean, rstd := randFloats(N), randFloats(N)
	run := func(name string, fn func()) {
		b.Run(name, func(b *testing.B) { measure(b, 0, fn) })
	}
	wte, wpe := randFloats(V*C), randFloats(T*C)
	run("encoder/fwd", func() { be.EncoderForward(out, inp, wte, wpe, B, T, C) })
	run("encoder/bwd", func() { be.EncoderBackward(wte, wpe, y, inp, B, T, C) })
	be.LayerNormForward(out, mean, rstd, x, w, bias, N, C)
	run("layernorm/fwd", func() { be.LayerNormForward(out, mean, rstd, x, w, bias, N, C) })
	run("layernorm/bwd", func() { be.LayerNormBackward(y, dw, db, out, x, w, mean, rstd, N, C) })
	run("residual/fwd", func() { be.ResidualForward(out, x, y) })
	run("residual/bwd", func() { be.ResidualBackward(out, x, y) })

	qkv, dqkv := randFloats(N*3*C), randFloats(N*3*C)
	att := randFloats(B * NH * T * T)
	be.AttentionForward(out, att, qkv, B, T, C, NH)
	run("attention/fwd", func() { be.AttentionForward(out, att, qkv, B, T, C, NH) })
	run("attention/bwd", func() { be.AttentionBackward(dqkv, y, qkv, att, B, T, C, NH) })

	h, dh, gh := randFloats(N*4*C), randFloats(N*4*C), randFloats(N*4*C)
	run("gelu/fwd", func() { be.GeluForward(gh, h) })
	run("gelu/bwd", func() { be.GeluBackward(dh, h, gh) })

	logits, probs, dlogits := randFloats(N*Vp), randFloats(N*Vp), randFloats(N*Vp)
	losses := randFloats(N)
	targets := make([]int32, N)
	copy(targets, inp)
	run("crossentropy/fwd", func() { be.CrossEntropyForward(losses, probs, logits, targets, N, V, Vp) })
	run("crossentropy/bwd", func() { be.CrossEntropyBackward(dlogits, probs, targets, 1/float32(N), N, V, Vp) })

	p, g, m, v := randFloats(s.params), randFloats(s.params), randFloats(s.params), make([]float32, s.params)
	o := kernels.AdamW{LR: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 1}
	run("adamw", func() { be.AdamW(p, g, m, v, o) })
	run("sumsquares", func() { be.SumSquares(g) })
	run("dropout/fwd", func() { be.DropoutForward(out, x, 0.1, 7) })
}
