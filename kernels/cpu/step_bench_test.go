package cpu

import (
	"fmt"
	"testing"

	"gptkit/kernels"
)

// BenchmarkStep times one whole GPT-2 training step made of this backend's
// ops, in llm.c's order (encoder, per layer: layernorm, qkv matmul,
// attention, projection, residual, layernorm, fc, GELU, projection,
// residual; final layernorm, tied lm head, cross-entropy; the backward in
// reverse; AdamW), and reports tokens per second and per CPU-second: the
// figure the trainer's speed goal is stated in (PyTorch CPU: ≈9,500 tok/cpu-s
// for baby, ≈69 for 124M). To keep memory modest, every layer reuses one set of
// activation and weight buffers (same shapes, so the same work; each layer's
// data is far larger than L2 at 124M, so this flatters nothing), and AdamW runs
// over one layer's worth of parameters once per layer plus the embeddings.
//
//	go test ./kernels/cpu -run '^$' -bench Step -benchtime 3x
func BenchmarkStep(b *testing.B) {
	for _, s := range benchShapes {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", s.name, threads), func(b *testing.B) {
				L := 4
				if s.name == "124M" {
					L = 12
				}
				st := newStep(newBackend(threads), s, L)
				measure(b, 0, st.run)
				tok := float64(s.B * s.T)
				b.ReportMetric(tok*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

type stepBuffers struct {
	be                          kernels.Backend
	B, T, C, NH, V, Vp, L, N    int
	inp, targets                []int32
	wte, wpe, layer, lnf        []float32 // parameters (layer: one layer's, reused)
	dwte, dwpe, dlayer, dlnf    []float32
	mW, vW, mL, vL              []float32 // AdamW state for embeddings and a layer
	res, ln, mean, rstd, qkv    []float32
	att, atty, fch, fchg, probs []float32
	logits, losses, dres, dx    []float32
	dqkv, dfch, dfchg, dlogits  []float32
}

func newStep(be kernels.Backend, s gptShape, L int) *stepBuffers {
	B, T, C, V, Vp := s.B, s.T, s.C, s.V, s.Vp
	N := B * T
	st := &stepBuffers{be: be, B: B, T: T, C: C, NH: s.NH, V: V, Vp: Vp, L: L, N: N}
	st.inp, st.targets = make([]int32, N), make([]int32, N)
	for i := range st.inp {
		st.inp[i] = int32(i * 7919 % V)
		st.targets[i] = int32(i * 104729 % V)
	}
	layerParams := 12*C*C + 13*C
	st.wte, st.wpe, st.layer, st.lnf = randFloats(Vp*C), randFloats(T*C), randFloats(layerParams), randFloats(2*C)
	vecScale(st.wte, 0.02)
	vecScale(st.layer, 0.02)
	st.dwte, st.dwpe, st.dlayer, st.dlnf = randFloats(Vp*C), randFloats(T*C), randFloats(layerParams), randFloats(2*C)
	st.mW, st.vW = make([]float32, Vp*C), make([]float32, Vp*C)
	st.mL, st.vL = make([]float32, layerParams), make([]float32, layerParams)
	for _, p := range []*[]float32{&st.res, &st.ln, &st.atty, &st.dres, &st.dx} {
		*p = randFloats(N * C)
	}
	st.mean, st.rstd = randFloats(N), randFloats(N)
	st.qkv, st.dqkv = randFloats(N*3*C), randFloats(N*3*C)
	st.att = randFloats(B * s.NH * T * T)
	st.fch, st.fchg, st.dfch, st.dfchg = randFloats(N*4*C), randFloats(N*4*C), randFloats(N*4*C), randFloats(N*4*C)
	st.logits, st.probs, st.dlogits = randFloats(N*Vp), randFloats(N*Vp), randFloats(N*Vp)
	st.losses = randFloats(N)
	return st
}

// layer views: ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb.
func layerViews(p []float32, C int) [12][]float32 {
	sizes := []int{C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C}
	var v [12][]float32
	off := 0
	for i, n := range sizes {
		v[i] = p[off : off+n]
		off += n
	}
	return v
}

func (st *stepBuffers) run() {
	be := st.be
	B, T, C, NH, V, Vp, N := st.B, st.T, st.C, st.NH, st.V, st.Vp, st.N
	w, dw := layerViews(st.layer, C), layerViews(st.dlayer, C)
	be.Zero(st.dlayer)
	be.Zero(st.dwte)
	be.EncoderForward(st.res, st.inp, st.wte, st.wpe, B, T, C)
	for l := 0; l < st.L; l++ {
		be.LayerNormForward(st.ln, st.mean, st.rstd, st.res, w[0], w[1], N, C)
		be.MatmulForward(st.qkv, st.ln, w[2], w[3], N, C, 3*C)
		be.AttentionForward(st.atty, st.att, st.qkv, B, T, C, NH)
		be.MatmulForward(st.dx, st.atty, w[4], w[5], N, C, C)
		be.ResidualForward(st.res, st.res, st.dx)
		be.LayerNormForward(st.ln, st.mean, st.rstd, st.res, w[6], w[7], N, C)
		be.MatmulForward(st.fch, st.ln, w[8], w[9], N, C, 4*C)
		be.GeluForward(st.fchg, st.fch)
		be.MatmulForward(st.dx, st.fchg, w[10], w[11], N, 4*C, C)
		be.ResidualForward(st.res, st.res, st.dx)
	}
	be.LayerNormForward(st.ln, st.mean, st.rstd, st.res, st.lnf[:C], st.lnf[C:], N, C)
	be.MatmulForward(st.logits, st.ln, st.wte, nil, N, C, Vp)
	be.CrossEntropyForward(st.losses, st.probs, st.logits, st.targets, N, V, Vp)

	be.Zero(st.dlogits)
	be.CrossEntropyBackward(st.dlogits, st.probs, st.targets, 1/float32(N), N, V, Vp)
	be.Zero(st.dx)
	be.MatmulBackward(st.dx, st.dwte, nil, st.dlogits, st.ln, st.wte, N, C, Vp)
	be.Zero(st.dres)
	be.LayerNormBackward(st.dres, st.dlnf[:C], st.dlnf[C:], st.dx, st.res, st.lnf[:C], st.mean, st.rstd, N, C)
	for l := st.L - 1; l >= 0; l-- {
		be.Zero(st.dfchg)
		be.MatmulBackward(st.dfchg, dw[10], dw[11], st.dres, st.fchg, w[10], N, 4*C, C)
		be.Zero(st.dfch)
		be.GeluBackward(st.dfch, st.fch, st.dfchg)
		be.Zero(st.dx)
		be.MatmulBackward(st.dx, dw[8], dw[9], st.dfch, st.ln, w[8], N, C, 4*C)
		be.LayerNormBackward(st.dres, dw[6], dw[7], st.dx, st.res, w[6], st.mean, st.rstd, N, C)
		be.Zero(st.dx)
		be.MatmulBackward(st.dx, dw[4], dw[5], st.dres, st.atty, w[4], N, C, C)
		be.Zero(st.dqkv)
		be.AttentionBackward(st.dqkv, st.dx, st.qkv, st.att, B, T, C, NH)
		be.Zero(st.dx)
		be.MatmulBackward(st.dx, dw[2], dw[3], st.dqkv, st.ln, w[2], N, C, 3*C)
		be.LayerNormBackward(st.dres, dw[0], dw[1], st.dx, st.res, w[0], st.mean, st.rstd, N, C)
	}
	be.EncoderBackward(st.dwte, st.dwpe, st.dres, st.inp, B, T, C)

	norm := be.SumSquares(st.dwte) + be.SumSquares(st.dwpe)
	for l := 0; l < st.L; l++ {
		norm += be.SumSquares(st.dlayer)
	}
	_ = norm
	o := kernels.AdamW{LR: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 1}
	be.AdamW(st.wte, st.dwte, st.mW, st.vW, o)
	for l := 0; l < st.L; l++ {
		be.AdamW(st.layer, st.dlayer, st.mL, st.vL, o)
	}
}
