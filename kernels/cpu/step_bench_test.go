package cpu

import (
	"fmt"
	"testing"

	"gptkit/kernels"
)

// BenchmarkStep times one whole GPT-2 training step made of this backend's
// ops, in the trainer's order (encoder, layernorm; per layer: qkv matmul,
// attention, projection, residual+layernorm, fc+GELU, projection,
// residual+layernorm; the fused classifier; the backward in reverse;
// gradient norm and AdamW), and reports tokens per second and per CPU-second: the
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
	be                       kernels.Backend
	B, T, C, NH, V, Vp, L, N int
	inp, targets             kernels.Tensor
	wte, wpe, layer, lnf     kernels.Tensor // parameters (layer: one layer's, reused)
	dwte, dwpe, dlayer, dlnf kernels.Tensor
	mW, vW, mL, vL           kernels.Tensor // AdamW state for embeddings and a layer
	res, res2, ln, mean      kernels.Tensor
	rstd, qkv, atty, lse     kernels.Tensor
	fch, fchg, logits, loss  kernels.Tensor
	dres, dx, dqkv, dfch     kernels.Tensor
	norm                     kernels.Tensor
}

func newStep(be kernels.Backend, s gptShape, L int) *stepBuffers {
	B, T, C, V, Vp := s.B, s.T, s.C, s.V, s.Vp
	N := B * T
	H := func(n int) kernels.Tensor { return kernels.Host(randFloats(n)) }
	st := &stepBuffers{be: be, B: B, T: T, C: C, NH: s.NH, V: V, Vp: Vp, L: L, N: N}
	inp, targets := make([]int32, N), make([]int32, N)
	for i := range inp {
		inp[i] = int32(i * 7919 % V)
		targets[i] = int32(i * 104729 % V)
	}
	st.inp, st.targets = kernels.HostInt32(inp), kernels.HostInt32(targets)
	layerParams := 12*C*C + 13*C
	st.wte, st.wpe, st.layer, st.lnf = H(Vp*C), H(T*C), H(layerParams), H(2*C)
	vecScale(st.wte.Float32s(), 0.02)
	vecScale(st.layer.Float32s(), 0.02)
	st.dwte, st.dwpe, st.dlayer, st.dlnf = H(Vp*C), H(T*C), H(layerParams), H(2*C)
	st.mW, st.vW = kernels.Host(make([]float32, Vp*C)), kernels.Host(make([]float32, Vp*C))
	st.mL, st.vL = kernels.Host(make([]float32, layerParams)), kernels.Host(make([]float32, layerParams))
	for _, p := range []*kernels.Tensor{&st.res, &st.res2, &st.ln, &st.atty, &st.dres, &st.dx} {
		*p = H(N * C)
	}
	st.mean, st.rstd, st.loss = H(N), H(N), H(N)
	st.lse = H(B * s.NH * T)
	st.qkv, st.dqkv = H(N*3*C), H(N*3*C)
	st.fch, st.fchg, st.dfch = H(N*4*C), H(N*4*C), H(N*4*C)
	st.logits = H(min(N, classifierRows(Vp)) * Vp)
	st.norm = kernels.HostFloat64(make([]float64, 1))
	return st
}

// layer views: ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb.
func layerViews(p kernels.Tensor, C int) [12]kernels.Tensor {
	sizes := []int{C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C}
	var v [12]kernels.Tensor
	off := 0
	for i, n := range sizes {
		v[i] = p.Slice(off, off+n)
		off += n
	}
	return v
}

// run is the trainer's step (train/model.go) with one layer's buffers reused.
func (st *stepBuffers) run() {
	be := st.be
	B, T, C, NH, V, Vp, N := st.B, st.T, st.C, st.NH, st.V, st.Vp, st.N
	w, dw := layerViews(st.layer, C), layerViews(st.dlayer, C)
	none := kernels.Tensor{}
	be.Zero(st.dlayer)
	be.Zero(st.dwte)
	be.EncoderForward(st.res, st.inp, st.wte, st.wpe, B, T, C)
	be.LayerNormForward(st.ln, st.mean, st.rstd, st.res, w[0], w[1], N, C)
	for l := 0; l < st.L; l++ {
		be.MatmulForward(st.qkv, st.ln, w[2], w[3], N, C, 3*C)
		be.AttentionForward(st.atty, st.lse, st.qkv, B, T, C, NH)
		be.MatmulForward(st.dx, st.atty, w[4], w[5], N, C, C)
		be.ResidualLayerNormForward(st.res2, st.ln, st.mean, st.rstd, st.res, st.dx, w[6], w[7], N, C)
		be.MatmulGeluForward(st.fchg, st.fch, st.ln, w[8], w[9], N, C, 4*C)
		be.MatmulForward(st.dx, st.fchg, w[10], w[11], N, 4*C, C)
		be.ResidualLayerNormForward(st.res, st.ln, st.mean, st.rstd, st.res2, st.dx, w[0], w[1], N, C)
	}
	be.Classifier(st.loss, none, st.dx, st.dwte, st.logits, st.ln, st.wte, st.targets, 1/float32(N), N, C, V, Vp)
	be.LayerNormBackward(st.dres, st.dlnf.Slice(0, C), st.dlnf.Slice(C, 2*C), none, st.dx, st.res, st.lnf.Slice(0, C), st.mean, st.rstd, N, C)
	for l := st.L - 1; l >= 0; l-- {
		be.MatmulBackward(st.dfch, dw[10], dw[11], st.dres, st.fchg, w[10], st.fch, N, 4*C, C)
		be.MatmulBackward(st.dx, dw[8], dw[9], st.dfch, st.ln, w[8], none, N, C, 4*C)
		be.LayerNormBackward(st.dres, dw[6], dw[7], st.dres, st.dx, st.res2, w[6], st.mean, st.rstd, N, C)
		be.MatmulBackward(st.dx, dw[4], dw[5], st.dres, st.atty, w[4], none, N, C, C)
		be.AttentionBackward(st.dqkv, st.dx, st.qkv, st.atty, st.lse, B, T, C, NH)
		be.MatmulBackward(st.dx, dw[2], dw[3], st.dqkv, st.ln, w[2], none, N, C, 3*C)
		be.LayerNormBackward(st.dres, dw[0], dw[1], st.dres, st.dx, st.res, w[0], st.mean, st.rstd, N, C)
	}
	be.EncoderBackward(st.dwte, st.dwpe, st.dres, st.inp, B, T, C)

	o := kernels.AdamW{LR: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 1, MaxNorm: 1}
	o.DecayLen = st.wte.Len()
	be.SumSquares(st.norm, st.dwte, st.dwte.Len())
	be.AdamW(st.wte, st.dwte, st.mW, st.vW, none, st.norm, o)
	o.DecayLen = 12 * C * C
	for l := 0; l < st.L; l++ {
		be.SumSquares(st.norm, st.dlayer, st.dlayer.Len())
		be.AdamW(st.layer, st.dlayer, st.mL, st.vL, none, st.norm, o)
	}
}
