package kerneltest

import (
	"math"
	"testing"

	"gptkit/kernels"
)

// Deterministic runs every op on the same inputs on each backend and fails
// unless all of them produce bit-identical outputs: e.g. one backend at several
// thread counts, whose results must not depend on the thread count. The shapes
// are large enough to be split across threads.
func Deterministic(t *testing.T, backends ...kernels.Backend) {
	var first [][]float32
	for i, be := range backends {
		got := allOps(be)
		if i == 0 {
			first = got
			continue
		}
		for k := range first {
			for j := range first[k] {
				if math.Float32bits(got[k][j]) != math.Float32bits(first[k][j]) {
					t.Errorf("%s differs from %s: output %d element %d: %v vs %v",
						be.Name(), backends[0].Name(), k, j, got[k][j], first[k][j])
					break
				}
			}
		}
	}
}

// allOps runs each op once (forward, then backward into non-zero gradients)
// and returns every output; SumSquares results come back as float32 bits
// pairs.
func allOps(be kernels.Backend) [][]float32 {
	r := newRand(2024)
	a := &arena{be: be}
	in := func(n int, s float64) []float32 { return a.copy(normal(r, n, s)) }
	var outs [][]float32
	keep := func(x ...[]float32) { outs = append(outs, x...) }

	const B, T, C, NH, V, Vp = 3, 67, 96, 3, 61, 64
	N := B * T
	inp := make([]int32, N)
	targets := make([]int32, N)
	for i := range inp {
		inp[i] = int32(r.IntN(V))
		targets[i] = int32(r.IntN(V))
	}
	targets[5] = -1

	wte, wpe := in(V*C, 1), in(T*C, 1)
	x := a.alloc(N * C)
	be.EncoderForward(x, inp, wte, wpe, B, T, C)
	dwte, dwpe := in(V*C, 1), in(T*C, 1)
	be.EncoderBackward(dwte, dwpe, in(N*C, 1), inp, B, T, C)
	keep(x, dwte, dwpe)

	lw, lb := in(C, 1), in(C, 1)
	ln, mean, rstd := a.alloc(N*C), a.alloc(N), a.alloc(N)
	be.LayerNormForward(ln, mean, rstd, x, lw, lb, N, C)
	dx, dlw, dlb := in(N*C, 1), in(C, 1), in(C, 1)
	be.LayerNormBackward(dx, dlw, dlb, in(N*C, 1), x, lw, mean, rstd, N, C)
	keep(ln, mean, rstd, dx, dlw, dlb)

	for _, oc := range []int{3 * C, 4 * C, C, 203} {
		w, bias := in(oc*C, 0.1), in(oc, 1)
		out := a.alloc(N * oc)
		be.MatmulForward(out, ln, w, bias, N, C, oc)
		dinp, dw, db := in(N*C, 1), in(oc*C, 1), in(oc, 1)
		be.MatmulBackward(dinp, dw, db, in(N*oc, 1), ln, w, N, C, oc)
		keep(out, dinp, dw, db)
	}

	qkv := in(N*3*C, 1)
	att, ao := a.alloc(B*NH*T*T), a.alloc(N*C)
	be.AttentionForward(ao, att, qkv, B, T, C, NH)
	dqkv := in(N*3*C, 1)
	be.AttentionBackward(dqkv, in(N*C, 1), qkv, att, B, T, C, NH)
	keep(att, ao, dqkv)

	g, gx := a.alloc(N*C*4), in(N*C*4, 2)
	be.GeluForward(g, gx)
	dg := in(N*C*4, 1)
	be.GeluBackward(dg, gx, in(N*C*4, 1))
	keep(g, dg)

	d := a.alloc(N * C)
	be.DropoutForward(d, x, 0.1, 5)
	dd := in(N*C, 1)
	be.DropoutBackward(dd, in(N*C, 1), 0.1, 5)
	keep(d, dd)

	logits := in(N*Vp, 2)
	losses, probs := a.alloc(N), a.alloc(N*Vp)
	be.CrossEntropyForward(losses, probs, logits, targets, N, V, Vp)
	dl := in(N*Vp, 1)
	be.CrossEntropyBackward(dl, probs, targets, 1/float32(N), N, V, Vp)
	keep(losses, probs, dl)

	big := in(1<<20+5, 1)
	m, v := in(len(big), 0.01), a.alloc(len(big))
	be.AdamW(big, in(len(big), 1), m, v, kernels.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 3})
	keep(big, m, v)
	ss := be.SumSquares(big)
	bits := math.Float64bits(ss)
	keep([]float32{math.Float32frombits(uint32(bits)), math.Float32frombits(uint32(bits >> 32))})
	be.Sync()
	return outs
}
