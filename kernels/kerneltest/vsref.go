package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/ref"
)

// Tolerances against ref (relative, see closeEnough). ref sums in float64; a
// fast backend sums in float32 in its own order (blocked GEMM, vector lanes)
// and may use fast approximations of exp and tanh, documented where they are.
const (
	tolExact     = 0    // pure data movement and single roundings: bit-identical
	tolSum       = 2e-5 // float32 dot products and row reductions
	tolTranscend = 2e-5 // softmax, GELU, layernorm: fast exp/tanh/rsqrt allowed
	tolAdamW     = 1e-5
)

func vsRef(t *testing.T, be kernels.Backend) {
	t.Run("encoder", func(t *testing.T) { encoderVsRef(t, be) })
	t.Run("layernorm", func(t *testing.T) { layernormVsRef(t, be) })
	t.Run("matmul", func(t *testing.T) { matmulVsRef(t, be) })
	t.Run("attention", func(t *testing.T) { attentionVsRef(t, be) })
	t.Run("gelu", func(t *testing.T) { geluVsRef(t, be) })
	t.Run("residual", func(t *testing.T) { residualVsRef(t, be) })
	t.Run("dropout", func(t *testing.T) { dropoutVsRef(t, be) })
	t.Run("crossentropy", func(t *testing.T) { crossEntropyVsRef(t, be) })
	t.Run("adamw", func(t *testing.T) { adamwVsRef(t, be) })
	t.Run("sumsquares", func(t *testing.T) { sumSquaresVsRef(t, be) })
	t.Run("scale-zero", func(t *testing.T) { scaleZeroVsRef(t, be) })
}

// Sizes for elementwise ops: around vector widths (8, 16) and unroll factors,
// and one large enough to be split across threads.
var elementwiseSizes = []int{1, 7, 8, 15, 16, 17, 31, 33, 100, 1000, 4099, 70001}

func encoderVsRef(t *testing.T, be kernels.Backend) {
	for i, s := range []struct{ B, T, C, V int }{
		{1, 1, 1, 1}, {2, 5, 7, 11}, {3, 17, 24, 5}, {4, 64, 128, 65}, {1, 9, 33, 3},
	} {
		r := newRand(uint64(100 + i))
		inp := make([]int32, s.B*s.T)
		for j := range inp {
			inp[j] = int32(r.IntN(s.V)) // few ids: repeats stress dwte accumulation
		}
		wte := uniform(r, s.V*s.C, 1)
		wpe := uniform(r, s.T*s.C, 1)
		dout := uniform(r, s.B*s.T*s.C, 1)
		dwte0 := uniform(r, s.V*s.C, 1)
		dwpe0 := uniform(r, s.T*s.C, 1)
		name := fmt.Sprintf("B%d T%d C%d V%d", s.B, s.T, s.C, s.V)
		compare(t, be, "forward "+name, tolExact, func(a *arena) [][]float32 {
			out := a.alloc(s.B * s.T * s.C)
			a.be.EncoderForward(out, inp, a.copy(wte), a.copy(wpe), s.B, s.T, s.C)
			return [][]float32{out}
		})
		compare(t, be, "backward "+name, tolSum, func(a *arena) [][]float32 {
			dwte, dwpe := a.copy(dwte0), a.copy(dwpe0)
			a.be.EncoderBackward(dwte, dwpe, a.copy(dout), inp, s.B, s.T, s.C)
			return [][]float32{dwte, dwpe}
		})
	}
}

func layernormVsRef(t *testing.T, be kernels.Backend) {
	for i, s := range []struct {
		N, C   int
		bias   bool
		scale  float64
		offset float32
	}{
		{1, 1, true, 1, 0}, {1, 7, true, 1, 0}, {5, 33, false, 1, 0}, {64, 128, true, 1, 0},
		{3, 769, true, 2, 0}, {7, 768, false, 1, 0}, {9, 48, true, 0.01, 3}, {2, 1000, true, 1, 100},
	} {
		r := newRand(uint64(200 + i))
		inp := normal(r, s.N*s.C, s.scale)
		for j := range inp {
			inp[j] += s.offset // a large mean relative to the spread tests the variance's cancellation
		}
		w := normal(r, s.C, 1)
		var b []float32
		if s.bias {
			b = normal(r, s.C, 1)
		}
		dout := normal(r, s.N*s.C, 1)
		dinp0 := normal(r, s.N*s.C, 1)
		dw0 := normal(r, s.C, 1)
		var db0 []float32
		if s.bias {
			db0 = normal(r, s.C, 1)
		}
		name := fmt.Sprintf("N%d C%d bias=%v", s.N, s.C, s.bias)
		compare(t, be, "forward "+name, tolTranscend, func(a *arena) [][]float32 {
			out, mean, rstd := a.alloc(s.N*s.C), a.alloc(s.N), a.alloc(s.N)
			a.be.LayerNormForward(out, mean, rstd, a.copy(inp), a.copy(w), a.copy(b), s.N, s.C)
			return [][]float32{out, mean, rstd}
		})
		// The backward gets ref's saved statistics, so only the backward differs.
		mean, rstd := make([]float32, s.N), make([]float32, s.N)
		ref.New().LayerNormForward(make([]float32, s.N*s.C), mean, rstd, inp, w, b, s.N, s.C)
		compare(t, be, "backward "+name, tolSum, func(a *arena) [][]float32 {
			dinp, dw, db := a.copy(dinp0), a.copy(dw0), a.copy(db0)
			a.be.LayerNormBackward(dinp, dw, db, a.copy(dout), a.copy(inp), a.copy(w), a.copy(mean), a.copy(rstd), s.N, s.C)
			if db == nil {
				return [][]float32{dinp, dw}
			}
			return [][]float32{dinp, dw, db}
		})
	}
}

// matmulShapes cover the degenerate cases, sizes that are not multiples of any
// register tile or vector width, sizes that cross cache-block boundaries, and
// the GPT shapes of the baby config (scaled down in N).
var matmulShapes = []struct{ N, C, OC int }{
	{1, 1, 1}, {1, 7, 3}, {3, 17, 5}, {13, 33, 29}, {2, 1, 9}, {9, 2, 1},
	{6, 16, 16}, {4, 8, 24}, {17, 129, 31}, {37, 100, 65},
	{64, 128, 384}, {48, 512, 128}, {130, 300, 270}, {5, 600, 7}, {300, 5, 260},
}

func matmulVsRef(t *testing.T, be kernels.Backend) {
	for i, s := range matmulShapes {
		for _, bias := range []bool{true, false} {
			r := newRand(uint64(300 + 2*i))
			inp := normal(r, s.N*s.C, 1)
			w := normal(r, s.OC*s.C, 1/math.Sqrt(float64(s.C)))
			var b, db0 []float32
			if bias {
				b = normal(r, s.OC, 1)
				db0 = normal(r, s.OC, 1)
			}
			dout := normal(r, s.N*s.OC, 1)
			dinp0 := normal(r, s.N*s.C, 1)
			dw0 := normal(r, s.OC*s.C, 1)
			name := fmt.Sprintf("N%d C%d OC%d bias=%v", s.N, s.C, s.OC, bias)
			compare(t, be, "forward "+name, tolSum, func(a *arena) [][]float32 {
				out := a.alloc(s.N * s.OC)
				// Garbage in out: the forward overwrites, it does not accumulate.
				for j := range out {
					out[j] = float32(j%7) - 3
				}
				a.be.MatmulForward(out, a.copy(inp), a.copy(w), a.copy(b), s.N, s.C, s.OC)
				return [][]float32{out}
			})
			compare(t, be, "backward "+name, tolSum, func(a *arena) [][]float32 {
				dinp, dw, db := a.copy(dinp0), a.copy(dw0), a.copy(db0)
				a.be.MatmulBackward(dinp, dw, db, a.copy(dout), a.copy(inp), a.copy(w), s.N, s.C, s.OC)
				if db == nil {
					return [][]float32{dinp, dw}
				}
				return [][]float32{dinp, dw, db}
			})
		}
	}
}

var attentionShapes = []struct{ B, T, C, NH int }{
	{1, 1, 4, 1}, {1, 1, 6, 3}, {2, 5, 12, 3}, {1, 17, 20, 5}, {2, 64, 64, 4},
	{1, 33, 48, 2}, {3, 7, 9, 9}, {1, 70, 96, 3}, {2, 16, 128, 1},
}

func attentionVsRef(t *testing.T, be kernels.Backend) {
	for i, s := range attentionShapes {
		r := newRand(uint64(400 + i))
		qkv := normal(r, s.B*s.T*3*s.C, 1)
		dout := normal(r, s.B*s.T*s.C, 1)
		dqkv0 := normal(r, s.B*s.T*3*s.C, 1)
		name := fmt.Sprintf("B%d T%d C%d NH%d", s.B, s.T, s.C, s.NH)
		compare(t, be, "forward "+name, tolTranscend, func(a *arena) [][]float32 {
			out, att := a.alloc(s.B*s.T*s.C), a.alloc(s.B*s.NH*s.T*s.T)
			for j := range att {
				att[j] = 9 // the forward must write the zeros past the diagonal
			}
			a.be.AttentionForward(out, att, a.copy(qkv), s.B, s.T, s.C, s.NH)
			return [][]float32{out, att}
		})
		att := make([]float32, s.B*s.NH*s.T*s.T)
		ref.New().AttentionForward(make([]float32, s.B*s.T*s.C), att, qkv, s.B, s.T, s.C, s.NH)
		compare(t, be, "backward "+name, tolSum, func(a *arena) [][]float32 {
			dqkv := a.copy(dqkv0)
			a.be.AttentionBackward(dqkv, a.copy(dout), a.copy(qkv), a.copy(att), s.B, s.T, s.C, s.NH)
			return [][]float32{dqkv}
		})
	}
}

func geluVsRef(t *testing.T, be kernels.Backend) {
	for i, n := range elementwiseSizes {
		r := newRand(uint64(500 + i))
		inp := normal(r, n, 3)
		if n > 10 {
			// The tails, where tanh saturates, and zero.
			inp[0], inp[1], inp[2], inp[3], inp[4] = -30, 30, 0, -9, 12
		}
		dout := normal(r, n, 1)
		dinp0 := normal(r, n, 1)
		compare(t, be, fmt.Sprintf("forward n%d", n), tolTranscend, func(a *arena) [][]float32 {
			out := a.alloc(n)
			a.be.GeluForward(out, a.copy(inp))
			return [][]float32{out}
		})
		compare(t, be, fmt.Sprintf("backward n%d", n), tolTranscend, func(a *arena) [][]float32 {
			dinp := a.copy(dinp0)
			a.be.GeluBackward(dinp, a.copy(inp), a.copy(dout))
			return [][]float32{dinp}
		})
	}
}

func residualVsRef(t *testing.T, be kernels.Backend) {
	for i, n := range elementwiseSizes {
		r := newRand(uint64(600 + i))
		x, y, d, da0, db0 := normal(r, n, 1), normal(r, n, 1), normal(r, n, 1), normal(r, n, 1), normal(r, n, 1)
		compare(t, be, fmt.Sprintf("forward n%d", n), tolExact, func(a *arena) [][]float32 {
			out := a.alloc(n)
			a.be.ResidualForward(out, a.copy(x), a.copy(y))
			return [][]float32{out}
		})
		compare(t, be, fmt.Sprintf("backward n%d", n), tolExact, func(a *arena) [][]float32 {
			da, db := a.copy(da0), a.copy(db0)
			a.be.ResidualBackward(da, db, a.copy(d))
			return [][]float32{da, db}
		})
	}
}

func dropoutVsRef(t *testing.T, be kernels.Backend) {
	for i, n := range elementwiseSizes {
		for _, p := range []float32{0, 0.1, 0.5} {
			r := newRand(uint64(700 + i))
			x, d, dx0 := normal(r, n, 1), normal(r, n, 1), normal(r, n, 1)
			seed := r.Uint64()
			compare(t, be, fmt.Sprintf("forward n%d p%v", n, p), tolExact, func(a *arena) [][]float32 {
				out := a.alloc(n)
				a.be.DropoutForward(out, a.copy(x), p, seed)
				return [][]float32{out}
			})
			compare(t, be, fmt.Sprintf("backward n%d p%v", n, p), tolExact, func(a *arena) [][]float32 {
				dx := a.copy(dx0)
				a.be.DropoutBackward(dx, a.copy(d), p, seed)
				return [][]float32{dx}
			})
		}
	}
	// The mask drops about a fraction p.
	const n = 100000
	dropped := 0
	for i := 0; i < n; i++ {
		if !kernels.DropoutKeep(42, i, 0.2) {
			dropped++
		}
	}
	if f := float64(dropped) / n; math.Abs(f-0.2) > 0.01 {
		t.Errorf("DropoutKeep(p=0.2) dropped %.4f of elements", f)
	}
}

var crossEntropyShapes = []struct{ N, V, Vp int }{
	{1, 1, 1}, {1, 2, 3}, {3, 5, 8}, {7, 65, 128}, {4, 300, 300}, {2, 1000, 1024}, {5, 17, 17},
}

func crossEntropyVsRef(t *testing.T, be kernels.Backend) {
	for i, s := range crossEntropyShapes {
		r := newRand(uint64(800 + i))
		logits := normal(r, s.N*s.Vp, 3)
		for j := range logits {
			if j%s.Vp >= s.V {
				logits[j] = 1e30 // padding: must be ignored
			}
		}
		targets := make([]int32, s.N)
		for j := range targets {
			targets[j] = int32(r.IntN(s.V))
			if s.N > 2 && j == 1 {
				targets[j] = -1 // ignored row
			}
		}
		if s.N > 3 {
			logits[3*s.Vp] = -200 // a target with an underflowing probability
			targets[3] = 0
		}
		name := fmt.Sprintf("N%d V%d Vp%d", s.N, s.V, s.Vp)
		compare(t, be, "forward "+name, tolTranscend, func(a *arena) [][]float32 {
			losses, probs := a.alloc(s.N), a.alloc(s.N*s.Vp)
			for j := range probs {
				probs[j] = 5 // padding columns must be written as 0
			}
			a.be.CrossEntropyForward(losses, probs, a.copy(logits), targets, s.N, s.V, s.Vp)
			return [][]float32{losses, probs}
		})
		probs := make([]float32, s.N*s.Vp)
		ref.New().CrossEntropyForward(make([]float32, s.N), probs, logits, targets, s.N, s.V, s.Vp)
		dl0 := normal(r, s.N*s.Vp, 1)
		compare(t, be, "backward "+name, tolSum, func(a *arena) [][]float32 {
			dl := a.copy(dl0)
			a.be.CrossEntropyBackward(dl, a.copy(probs), targets, 1/float32(s.N), s.N, s.V, s.Vp)
			return [][]float32{dl}
		})
	}
}

func adamwVsRef(t *testing.T, be kernels.Backend) {
	for i, n := range elementwiseSizes {
		r := newRand(uint64(900 + i))
		p0, m0 := normal(r, n, 1), normal(r, n, 0.01)
		v0 := make([]float32, n)
		for j := range v0 {
			v0[j] = r.Float32() * 1e-4
		}
		o := kernels.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1}
		grads := [][]float32{normal(r, n, 1), normal(r, n, 0.1), normal(r, n, 1e-3)}
		compare(t, be, fmt.Sprintf("n%d", n), tolAdamW, func(a *arena) [][]float32 {
			p, m, v := a.copy(p0), a.copy(m0), a.copy(v0)
			for step, g := range grads {
				o.Step = step + 1
				a.be.AdamW(p, a.copy(g), m, v, o)
			}
			return [][]float32{p, m, v}
		})
	}
}

func sumSquaresVsRef(t *testing.T, be kernels.Backend) {
	for i, n := range append(elementwiseSizes, 1<<20+3) {
		r := newRand(uint64(1000 + i))
		x := normal(r, n, 1)
		a := &arena{be: be}
		got := be.SumSquares(a.copy(x))
		want := ref.New().SumSquares(x)
		if math.Abs(got-want) > 1e-12*want {
			t.Errorf("n%d: SumSquares = %v, want %v", n, got, want)
		}
	}
}

func scaleZeroVsRef(t *testing.T, be kernels.Backend) {
	for i, n := range elementwiseSizes {
		r := newRand(uint64(1100 + i))
		x := normal(r, n, 1)
		compare(t, be, fmt.Sprintf("scale n%d", n), tolExact, func(a *arena) [][]float32 {
			s := a.copy(x)
			a.be.Scale(s, 0.37)
			return [][]float32{s}
		})
		compare(t, be, fmt.Sprintf("zero n%d", n), tolExact, func(a *arena) [][]float32 {
			s := a.copy(x)
			a.be.Zero(s)
			return [][]float32{s}
		})
	}
}
