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
	H, none := kernels.Host, kernels.Tensor{}
	ids := make([]int32, N)
	for i := range ids {
		ids[i] = int32(i * 7919 % V)
	}
	inp := kernels.HostInt32(ids)
	x, y, out := H(randFloats(N*C)), H(randFloats(N*C)), H(randFloats(N*C))
	w, bias, dw, db := H(randFloats(C)), H(randFloats(C)), H(randFloats(C)), H(randFloats(C))
	mean, rstd := H(randFloats(N)), H(randFloats(N))
	run := func(name string, fn func()) {
		b.Run(name, func(b *testing.B) { measure(b, 0, fn) })
	}
	wte, wpe := H(randFloats(Vp*C)), H(randFloats(T*C))
	run("encoder/fwd", func() { be.EncoderForward(out, inp, wte, wpe, B, T, C) })
	run("encoder/bwd", func() { be.EncoderBackward(wte, wpe, y, inp, B, T, C) })
	be.LayerNormForward(out, mean, rstd, x, w, bias, N, C)
	run("layernorm/fwd", func() { be.LayerNormForward(out, mean, rstd, x, w, bias, N, C) })
	res := H(randFloats(N * C))
	run("residual-layernorm/fwd", func() { be.ResidualLayerNormForward(res, out, mean, rstd, x, y, w, bias, N, C) })
	run("layernorm/bwd", func() { be.LayerNormBackward(y, dw, db, y, out, x, w, mean, rstd, N, C) })

	qkv, dqkv := H(randFloats(N*3*C)), H(randFloats(N*3*C))
	lse := H(randFloats(B * NH * T))
	be.AttentionForward(out, lse, qkv, B, T, C, NH)
	run("attention/fwd", func() { be.AttentionForward(out, lse, qkv, B, T, C, NH) })
	run("attention/bwd", func() { be.AttentionBackward(dqkv, y, qkv, out, lse, B, T, C, NH) })

	rows := min(N, classifierRows(Vp))
	logits, losses, dlnf, dwte := H(randFloats(rows*Vp)), H(randFloats(N)), H(randFloats(N*C)), H(randFloats(Vp*C))
	targets := kernels.HostInt32(ids)
	run("classifier/fwd", func() { be.Classifier(losses, none, none, none, logits, x, wte, targets, 1/float32(N), N, C, V, Vp) })
	run("classifier/fwd+bwd", func() { be.Classifier(losses, none, dlnf, dwte, logits, x, wte, targets, 1/float32(N), N, C, V, Vp) })

	n := s.params
	p, g, m, v := H(randFloats(n)), H(randFloats(n)), H(randFloats(n)), H(make([]float32, n))
	norm := kernels.HostFloat64(make([]float64, 4))
	o := kernels.AdamW{LR: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 1, DecayLen: n}
	run("adamw", func() { be.AdamW(p, g, m, v, none, none, o) })
	run("sumsquares", func() { be.SumSquares(norm, g, n/4) })
	run("dropout/fwd", func() { be.DropoutForward(out, x, 0.1, 7) })
}

// classifierRows is the rows of the classifier's logits chunk the trainer
// uses: a 256 MiB float32 chunk.
func classifierRows(Vp int) int { return max(1, (256<<20)/4/Vp) }
