package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"gptkit/kernels"
)

// Deterministic runs every op on the same inputs on each backend and fails
// unless all of them produce bit-identical outputs: e.g. one backend at several
// thread counts, whose results must not depend on the thread count. The shapes
// are large enough to be split across threads; every dtype mode runs.
func Deterministic(t *testing.T, backends ...kernels.Backend) {
	for _, m := range modes {
		var first []output
		for i, be := range backends {
			got := allOps(be, m.act)
			if i == 0 {
				first = got
				continue
			}
			for k := range first {
				for j := range first[k].v {
					if math.Float32bits(got[k].v[j]) != math.Float32bits(first[k].v[j]) {
						t.Errorf("%s: %s differs from %s: %s element %d: %v vs %v",
							m.name, be.Name(), backends[0].Name(), first[k].name, j, got[k].v[j], first[k].v[j])
						break
					}
				}
			}
		}
	}
}

// output is one output of allOps: its values widened to float32, or for a
// Float64 tensor (wide) each value as two float32 bit patterns (low, high).
type output struct {
	name string
	v    []float32
	wide bool
}

// float64s is a wide output's values.
func (o output) float64s() []float64 {
	x := make([]float64, len(o.v)/2)
	for i := range x {
		x[i] = math.Float64frombits(uint64(math.Float32bits(o.v[2*i])) | uint64(math.Float32bits(o.v[2*i+1]))<<32)
	}
	return x
}

// allOps runs each op once (forward, then backward into non-zero weight
// gradients) with activations of dtype act and returns every output, named.
func allOps(be kernels.Backend, act kernels.DType) []output {
	r := newRand(2024)
	a := newArena(be)
	defer a.free()
	in := func(n int, s float64) kernels.Tensor { return a.in(act, normal(r, n, s)) }
	f32 := func(n int, s float64) kernels.Tensor { return a.f32(normal(r, n, s)) }
	var outs []output
	keep := func(op string, x ...kernels.Tensor) {
		for i, t := range x {
			name := fmt.Sprintf("%s output %d", op, i)
			if t.DType() == kernels.Float64 {
				var v []float32
				for _, d := range a.read64(t) {
					b := math.Float64bits(d)
					v = append(v, math.Float32frombits(uint32(b)), math.Float32frombits(uint32(b>>32)))
				}
				outs = append(outs, output{name: name, v: v, wide: true})
				continue
			}
			outs = append(outs, output{name: name, v: a.read(t)})
		}
	}

	const B, T, C, NH, V, Vp = 3, 67, 96, 3, 61, 64
	N := B * T
	inp := make([]int32, N)
	targets := make([]int32, N)
	for i := range inp {
		inp[i] = int32(r.IntN(V))
		targets[i] = int32(r.IntN(V))
	}
	targets[5] = -1
	ids, tg := a.ids(inp), a.ids(targets)

	wte, wpe := in(Vp*C, 1), in(T*C, 1)
	x := a.alloc(act, N*C)
	be.EncoderForward(x, ids, wte, wpe, B, T, C)
	dwte, dwpe := f32(Vp*C, 1), f32(T*C, 1)
	be.EncoderBackward(dwte, dwpe, in(N*C, 1), ids, B, T, C)
	keep("encoder", x, dwte, dwpe)

	lw, lb := in(C, 1), in(C, 1)
	ln, mean, rstd := a.alloc(act, N*C), a.alloc(kernels.Float32, N), a.alloc(kernels.Float32, N)
	be.LayerNormForward(ln, mean, rstd, x, lw, lb, N, C)
	dx, dlw, dlb := in(N*C, 1), f32(C, 1), f32(C, 1)
	be.LayerNormBackward(dx, dlw, dlb, dx, in(N*C, 1), x, lw, mean, rstd, N, C)
	res := a.alloc(act, N*C)
	be.ResidualLayerNormForward(res, ln, mean, rstd, x, in(N*C, 1), lw, lb, N, C)
	keep("layernorm", ln, mean, rstd, dx, dlw, dlb, res)

	for _, oc := range []int{3 * C, 4 * C, C, 203} {
		w, bias := in(oc*C, 0.1), in(oc, 1)
		out, pre := a.alloc(act, N*oc), a.alloc(act, N*oc)
		be.MatmulForward(out, ln, w, bias, N, C, oc)
		keep(fmt.Sprintf("matmul %d forward", oc), out)
		be.MatmulGeluForward(out, pre, ln, w, bias, N, C, oc)
		dinp, dw, db := a.alloc(act, N*C), f32(oc*C, 1), f32(oc, 1)
		be.MatmulBackward(dinp, dw, db, in(N*oc, 1), ln, w, in(N*C, 1), N, C, oc)
		keep(fmt.Sprintf("matmul %d gelu and backward", oc), out, pre, dinp, dw, db)
	}

	qkv := in(N*3*C, 1)
	ao, lse := a.alloc(act, N*C), a.alloc(kernels.Float32, B*NH*T)
	be.AttentionForward(ao, lse, qkv, B, T, C, NH)
	dqkv := a.alloc(act, N*3*C)
	be.AttentionBackward(dqkv, in(N*C, 1), qkv, ao, lse, B, T, C, NH)
	keep("attention", ao, lse, dqkv)

	d := a.alloc(act, N*C)
	be.DropoutForward(d, x, 0.1, 5)
	be.DropoutBackward(d, d, 0.1, 6)
	keep("dropout", d)

	losses, sum, dl, dw := a.alloc(kernels.Float32, N), a.f64([]float64{0}), a.alloc(act, N*C), f32(Vp*C, 1)
	be.Classifier(losses, sum, dl, dw, a.alloc(act, 50*Vp), ln, wte, tg, 1/float32(N), N, C, V, Vp)
	keep("classifier", losses, sum, dl, dw)

	big := f32(1<<20+5, 1)
	m, v, cp := f32(1<<20+5, 0.01), a.alloc(kernels.Float32, 1<<20+5), a.alloc(kernels.BFloat16, 1<<20+5)
	g := f32(1<<20+5, 1)
	norm := a.alloc(kernels.Float64, 5)
	be.SumSquares(norm, g.Slice(0, 1<<20), 1<<18)
	keep("sumsquares", norm)
	be.AdamW(big, g, m, v, cp, norm, kernels.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, Step: 3, DecayLen: 1 << 19, MaxNorm: 1})
	keep("adamw", big, m, v, cp)
	be.Sync()
	return outs
}
