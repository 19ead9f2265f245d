package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/ref"
)

func refBackend() kernels.Backend { return ref.New() }

// Tolerances against ref (relative, see closeEnough). ref sums in float64; a
// fast backend sums in float32 in its own order (blocked GEMM, vector lanes)
// and may use fast approximations of exp and tanh, documented where they are.
// In the 16-bit modes two correct backends may round a value to neighbouring
// 16-bit numbers (their float32 sums differ in the last bits), and what is
// computed from such values differs by as much: one bfloat16 ulp is 2⁻⁸
// relative, a float16 ulp 2⁻¹¹.
const (
	tolExact     = 0    // pure data movement and single roundings: bit-identical
	tolSum       = 2e-5 // float32 dot products and row reductions
	tolTranscend = 2e-5 // softmax, GELU, layernorm: fast exp/tanh/rsqrt allowed
	tolAdamW     = 1e-5
	tolBF16      = 1.6e-2 // two bfloat16 ulps plus what follows from them
	tolF16       = 2e-3   // two float16 ulps plus what follows from them
)

// mode is a dtype assignment: act for weights, activations and their gradients
// as the forward and backward see them; statistics, losses, weight gradients
// and optimizer state are always float32.
type mode struct {
	name string
	act  kernels.DType
}

var modes = []mode{{"float32", kernels.Float32}, {"bfloat16", kernels.BFloat16}, {"float16", kernels.Float16}}

// tol is the tolerance of an output that would be within f32 in float32.
func (m mode) tol(f32 float64) float64 {
	switch m.act {
	case kernels.BFloat16:
		return tolBF16
	case kernels.Float16:
		return tolF16
	}
	return f32
}

func vsRef(t *testing.T, be kernels.Backend) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Run("encoder", func(t *testing.T) { encoderVsRef(t, be, m) })
			t.Run("layernorm", func(t *testing.T) { layernormVsRef(t, be, m) })
			t.Run("matmul", func(t *testing.T) { matmulVsRef(t, be, m) })
			t.Run("attention", func(t *testing.T) { attentionVsRef(t, be, m) })
			t.Run("classifier", func(t *testing.T) { classifierVsRef(t, be, m) })
			t.Run("dropout", func(t *testing.T) { dropoutVsRef(t, be, m) })
			t.Run("convert-zero", func(t *testing.T) { convertZeroVsRef(t, be, m) })
		})
	}
	t.Run("adamw", func(t *testing.T) { adamwVsRef(t, be) })
	t.Run("sumsquares", func(t *testing.T) { sumSquaresVsRef(t, be) })
}

// Sizes for elementwise ops: around vector widths (8, 16) and unroll factors,
// and one large enough to be split across threads.
var elementwiseSizes = []int{1, 7, 8, 15, 16, 17, 31, 33, 100, 1000, 4099, 70001}

func encoderVsRef(t *testing.T, be kernels.Backend, m mode) {
	for i, s := range []struct{ B, T, C, V int }{
		{1, 1, 1, 1}, {2, 5, 7, 11}, {3, 17, 24, 5}, {4, 64, 128, 65}, {1, 9, 33, 3},
	} {
		r := newRand(uint64(100 + i))
		inp := make([]int32, s.B*s.T)
		for j := range inp {
			inp[j] = int32(r.IntN(s.V)) // few ids: repeats stress dwte accumulation
		}
		wte := uniform(r, s.V*s.C, 1)
		wpe := uniform(r, (s.T+2)*s.C, 1) // longer than T: only T rows are read
		dout := uniform(r, s.B*s.T*s.C, 1)
		dwte0 := uniform(r, s.V*s.C, 1)
		dwpe0 := uniform(r, s.T*s.C, 1)
		name := fmt.Sprintf("B%d T%d C%d V%d", s.B, s.T, s.C, s.V)
		compare(t, be, "forward "+name, tolExact, func(a *arena) []kernels.Tensor {
			out := a.garbage(m.act, s.B*s.T*s.C)
			a.be.EncoderForward(out, a.ids(inp), a.in(m.act, wte), a.in(m.act, wpe), s.B, s.T, s.C)
			return []kernels.Tensor{out}
		})
		compare(t, be, "backward "+name, tolSum, func(a *arena) []kernels.Tensor {
			dwte, dwpe := a.f32(dwte0), a.f32(dwpe0)
			a.be.EncoderBackward(dwte, dwpe, a.in(m.act, dout), a.ids(inp), s.B, s.T, s.C)
			return []kernels.Tensor{dwte, dwpe}
		})
	}
}

func layernormVsRef(t *testing.T, be kernels.Backend, m mode) {
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
		other := normal(r, s.N*s.C, s.scale)
		w := normal(r, s.C, 1)
		var b []float32
		if s.bias {
			b = normal(r, s.C, 1)
		}
		dout := normal(r, s.N*s.C, 1)
		dres0 := normal(r, s.N*s.C, 1)
		dw0 := normal(r, s.C, 1)
		var db0 []float32
		if s.bias {
			db0 = normal(r, s.C, 1)
		}
		name := fmt.Sprintf("N%d C%d bias=%v", s.N, s.C, s.bias)
		tol := m.tol(tolTranscend)
		if s.offset != 0 && m.act != kernels.Float32 {
			continue // a mean of 100 leaves a 16-bit input no digits of the spread
		}
		compare(t, be, "forward "+name, tol, func(a *arena) []kernels.Tensor {
			out, mean, rstd := a.garbage(m.act, s.N*s.C), a.garbage(kernels.Float32, s.N), a.garbage(kernels.Float32, s.N)
			a.be.LayerNormForward(out, mean, rstd, a.in(m.act, inp), a.in(m.act, w), a.in(m.act, b), s.N, s.C)
			return []kernels.Tensor{out, mean, rstd}
		})
		compare(t, be, "residual forward "+name, tol, func(a *arena) []kernels.Tensor {
			res, out, mean, rstd := a.garbage(m.act, s.N*s.C), a.garbage(m.act, s.N*s.C), a.garbage(kernels.Float32, s.N), a.garbage(kernels.Float32, s.N)
			a.be.ResidualLayerNormForward(res, out, mean, rstd, a.in(m.act, inp), a.in(m.act, other), a.in(m.act, w), a.in(m.act, b), s.N, s.C)
			return []kernels.Tensor{res, out, mean, rstd}
		})
		// The backward gets ref's saved statistics, so only the backward differs.
		ra := newArena(refBackend())
		x := ra.in(m.act, inp)
		meanT, rstdT := ra.alloc(kernels.Float32, s.N), ra.alloc(kernels.Float32, s.N)
		ra.be.LayerNormForward(ra.alloc(m.act, s.N*s.C), meanT, rstdT, x, ra.in(m.act, w), ra.in(m.act, b), s.N, s.C)
		mean, rstd := ra.read(meanT), ra.read(rstdT)
		for _, variant := range []string{"no dres", "dres", "dres in place"} {
			compare(t, be, "backward "+variant+" "+name, m.tol(tolSum), func(a *arena) []kernels.Tensor {
				dinp, dw, db := a.garbage(m.act, s.N*s.C), a.f32(dw0), a.f32(db0)
				var dres kernels.Tensor
				switch variant {
				case "dres":
					dres = a.in(m.act, dres0)
				case "dres in place":
					dinp = a.in(m.act, dres0)
					dres = dinp
				}
				a.be.LayerNormBackward(dinp, dw, db, dres, a.in(m.act, dout), a.in(m.act, inp), a.in(m.act, w), a.f32(mean), a.f32(rstd), s.N, s.C)
				if db.Nil() {
					return []kernels.Tensor{dinp, dw}
				}
				return []kernels.Tensor{dinp, dw, db}
			})
		}
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

func matmulVsRef(t *testing.T, be kernels.Backend, m mode) {
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
			pre := normal(r, s.N*s.C, 2)
			dw0 := normal(r, s.OC*s.C, 1)
			name := fmt.Sprintf("N%d C%d OC%d bias=%v", s.N, s.C, s.OC, bias)
			compare(t, be, "forward "+name, m.tol(tolSum), func(a *arena) []kernels.Tensor {
				out := a.garbage(m.act, s.N*s.OC)
				a.be.MatmulForward(out, a.in(m.act, inp), a.in(m.act, w), a.in(m.act, b), s.N, s.C, s.OC)
				return []kernels.Tensor{out}
			})
			compare(t, be, "gelu forward "+name, m.tol(tolTranscend), func(a *arena) []kernels.Tensor {
				out, p := a.garbage(m.act, s.N*s.OC), a.garbage(m.act, s.N*s.OC)
				a.be.MatmulGeluForward(out, p, a.in(m.act, inp), a.in(m.act, w), a.in(m.act, b), s.N, s.C, s.OC)
				return []kernels.Tensor{out, p}
			})
			for _, gelu := range []bool{false, true} {
				compare(t, be, fmt.Sprintf("backward gelu=%v %s", gelu, name), m.tol(tolSum), func(a *arena) []kernels.Tensor {
					dinp, dw, db := a.garbage(m.act, s.N*s.C), a.f32(dw0), a.f32(db0)
					var gp kernels.Tensor
					if gelu {
						gp = a.in(m.act, pre)
					}
					a.be.MatmulBackward(dinp, dw, db, a.in(m.act, dout), a.in(m.act, inp), a.in(m.act, w), gp, s.N, s.C, s.OC)
					if db.Nil() {
						return []kernels.Tensor{dinp, dw}
					}
					return []kernels.Tensor{dinp, dw, db}
				})
			}
		}
	}
	// The GELU's tails (tanh saturates) and zero.
	tails := []float32{-30, 30, 0, -9, 12, -3, 3, 0.5}
	compare(t, be, "gelu tails", m.tol(tolTranscend), func(a *arena) []kernels.Tensor {
		out, p := a.garbage(m.act, 8), a.garbage(m.act, 8)
		a.be.MatmulGeluForward(out, p, a.in(m.act, tails), a.in(m.act, []float32{1}), kernels.Tensor{}, 8, 1, 1)
		return []kernels.Tensor{out, p}
	})
	compare(t, be, "gelu backward tails", m.tol(tolTranscend), func(a *arena) []kernels.Tensor {
		dinp, dw := a.garbage(m.act, 8), a.f32(make([]float32, 1))
		a.be.MatmulBackward(dinp, dw, kernels.Tensor{}, a.in(m.act, []float32{1, -2, 3, 1, 1, 2, -1, 1}), a.in(m.act, tails), a.in(m.act, []float32{1}), a.in(m.act, tails), 8, 1, 1)
		return []kernels.Tensor{dinp}
	})
}

// attentionShapes: T not a multiple of any block (the CPU's 64, the GPU's tiles),
// one head, head sizes 1, 8, 64 and 128.
var attentionShapes = []struct{ B, T, C, NH int }{
	{1, 1, 4, 1}, {1, 1, 6, 3}, {2, 5, 12, 3}, {1, 17, 20, 5}, {2, 64, 64, 4},
	{1, 33, 48, 2}, {3, 7, 9, 9}, {1, 70, 96, 3}, {2, 16, 128, 1},
	{1, 67, 8, 1}, {2, 65, 16, 2}, {1, 130, 64, 1}, {1, 97, 256, 2}, {1, 129, 128, 1},
}

func attentionVsRef(t *testing.T, be kernels.Backend, m mode) {
	for i, s := range attentionShapes {
		r := newRand(uint64(400 + i))
		qkv := normal(r, s.B*s.T*3*s.C, 1)
		dout := normal(r, s.B*s.T*s.C, 1)
		name := fmt.Sprintf("B%d T%d C%d NH%d", s.B, s.T, s.C, s.NH)
		compare(t, be, "forward "+name, m.tol(tolTranscend), func(a *arena) []kernels.Tensor {
			out, lse := a.garbage(m.act, s.B*s.T*s.C), a.garbage(kernels.Float32, s.B*s.NH*s.T)
			a.be.AttentionForward(out, lse, a.in(m.act, qkv), s.B, s.T, s.C, s.NH)
			return []kernels.Tensor{out, lse}
		})
		// The backward gets ref's forward output and lse.
		ra := newArena(refBackend())
		outT, lseT := ra.alloc(m.act, s.B*s.T*s.C), ra.alloc(kernels.Float32, s.B*s.NH*s.T)
		ra.be.AttentionForward(outT, lseT, ra.in(m.act, qkv), s.B, s.T, s.C, s.NH)
		out, lse := ra.read(outT), ra.read(lseT)
		compare(t, be, "backward "+name, m.tol(tolSum), func(a *arena) []kernels.Tensor {
			dqkv := a.garbage(m.act, s.B*s.T*3*s.C)
			a.be.AttentionBackward(dqkv, a.in(m.act, dout), a.in(m.act, qkv), a.in(m.act, out), a.f32(lse), s.B, s.T, s.C, s.NH)
			return []kernels.Tensor{dqkv}
		})
	}
}

// classifierShapes: chunk is the rows of the logits scratch (not dividing N in
// most), V < Vp and V = Vp, N = 1.
var classifierShapes = []struct{ N, C, V, Vp, chunk int }{
	{1, 1, 1, 1, 1}, {1, 3, 2, 3, 1}, {3, 8, 5, 8, 2}, {7, 16, 65, 128, 3}, {4, 33, 300, 300, 4},
	{5, 24, 1000, 1024, 2}, {9, 64, 17, 17, 9}, {70, 32, 61, 64, 16},
}

func classifierVsRef(t *testing.T, be kernels.Backend, m mode) {
	for i, s := range classifierShapes {
		r := newRand(uint64(800 + i))
		inp := normal(r, s.N*s.C, 1)
		w := normal(r, s.Vp*s.C, 3/math.Sqrt(float64(s.C)))
		targets := make([]int32, s.N)
		for j := range targets {
			targets[j] = int32(r.IntN(s.V))
			if s.N > 2 && j == 1 {
				targets[j] = -1 // ignored row
			}
		}
		if s.N > 3 && m.act == kernels.Float32 {
			// A target whose probability underflows float32: its logit is -200.
			targets[3] = 0
			x3 := inp[3*s.C : 4*s.C]
			for c := range x3 {
				w[c] = -200 * x3[c] / dotSelf(x3)
			}
		}
		dw0 := normal(r, s.Vp*s.C, 1)
		name := fmt.Sprintf("N%d C%d V%d Vp%d chunk%d", s.N, s.C, s.V, s.Vp, s.chunk)
		const dloss = 0.37
		compare(t, be, "loss only "+name, m.tol(tolTranscend), func(a *arena) []kernels.Tensor {
			losses, sum := a.garbage(kernels.Float32, s.N), a.f64([]float64{1.5})
			a.be.Classifier(losses, sum, kernels.Tensor{}, kernels.Tensor{}, a.garbage(m.act, s.chunk*s.Vp),
				a.in(m.act, inp), a.in(m.act, w), a.ids(targets), dloss, s.N, s.C, s.V, s.Vp)
			return []kernels.Tensor{losses}
		})
		compare(t, be, "with gradients "+name, m.tol(tolTranscend), func(a *arena) []kernels.Tensor {
			losses, dinp, dw := a.garbage(kernels.Float32, s.N), a.garbage(m.act, s.N*s.C), a.f32(dw0)
			a.be.Classifier(losses, kernels.Tensor{}, dinp, dw, a.garbage(m.act, s.chunk*s.Vp),
				a.in(m.act, inp), a.in(m.act, w), a.ids(targets), dloss, s.N, s.C, s.V, s.Vp)
			return []kernels.Tensor{losses, dinp, dw}
		})
		// The loss sum: the losses as stored, added in row order to what was there.
		ba := newArena(be)
		losses, sum := ba.alloc(kernels.Float32, s.N), ba.f64([]float64{1.5})
		ba.be.Classifier(losses, sum, kernels.Tensor{}, kernels.Tensor{}, ba.alloc(m.act, s.chunk*s.Vp),
			ba.in(m.act, inp), ba.in(m.act, w), ba.ids(targets), dloss, s.N, s.C, s.V, s.Vp)
		want := 1.5
		for _, l := range ba.read(losses) {
			want += float64(l)
		}
		if got := ba.read64(sum)[0]; got != want {
			t.Errorf("%s: loss sum %v, want %v (1.5 + the losses in row order)", name, got, want)
		}
		ba.checkGuards(t, "loss sum "+name)
		ba.free()
	}
}

func dotSelf(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += v * v
	}
	return s
}

func dropoutVsRef(t *testing.T, be kernels.Backend, m mode) {
	for i, n := range elementwiseSizes {
		for _, p := range []float32{0, 0.1, 0.5} {
			r := newRand(uint64(700 + i))
			x := normal(r, n, 1)
			seed := r.Uint64()
			for _, inPlace := range []bool{false, true} {
				name := fmt.Sprintf("n%d p%v in-place=%v", n, p, inPlace)
				compare(t, be, "forward "+name, tolExact, func(a *arena) []kernels.Tensor {
					in := a.in(m.act, x)
					out := in
					if !inPlace {
						out = a.garbage(m.act, n)
					}
					a.be.DropoutForward(out, in, p, seed)
					return []kernels.Tensor{out}
				})
				compare(t, be, "backward "+name, tolExact, func(a *arena) []kernels.Tensor {
					d := a.in(m.act, x)
					dx := d
					if !inPlace {
						dx = a.garbage(m.act, n)
					}
					a.be.DropoutBackward(dx, d, p, seed)
					return []kernels.Tensor{dx}
				})
			}
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

func convertZeroVsRef(t *testing.T, be kernels.Backend, m mode) {
	for i, n := range elementwiseSizes {
		r := newRand(uint64(1100 + i))
		x := normal(r, n, 3)
		if n > 8 {
			// Ties, overflow, subnormals and specials.
			x[0], x[1], x[2], x[3] = 1+1.0/256, 70000, 1e-6, float32(math.Inf(-1))
			x[4], x[5], x[6], x[7] = 1+3.0/256, -1e-30, 65519, 65520
		}
		compare(t, be, fmt.Sprintf("convert float32 to %s n%d", m.act, n), tolExact, func(a *arena) []kernels.Tensor {
			dst := a.garbage(m.act, n)
			a.be.Convert(dst, a.f32(x))
			return []kernels.Tensor{dst}
		})
		compare(t, be, fmt.Sprintf("convert %s to float32 n%d", m.act, n), tolExact, func(a *arena) []kernels.Tensor {
			dst := a.garbage(kernels.Float32, n)
			a.be.Convert(dst, a.in(m.act, x))
			return []kernels.Tensor{dst}
		})
		if m.act != kernels.Float32 {
			// between the 16-bit types, and a copy
			for _, to := range []kernels.DType{kernels.BFloat16, kernels.Float16} {
				compare(t, be, fmt.Sprintf("convert %s to %s n%d", m.act, to, n), tolExact, func(a *arena) []kernels.Tensor {
					dst := a.garbage(to, n)
					a.be.Convert(dst, a.in(m.act, x))
					return []kernels.Tensor{dst}
				})
			}
		}
		compare(t, be, fmt.Sprintf("zero n%d", n), tolExact, func(a *arena) []kernels.Tensor {
			s := a.in(m.act, x)
			a.be.Zero(s)
			return []kernels.Tensor{s}
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
		grads := [][]float32{normal(r, n, 1), normal(r, n, 0.1), normal(r, n, 1e-3)}
		for _, c := range []struct {
			name string
			o    kernels.AdamW
			norm bool
			copy kernels.DType
		}{
			{"plain", kernels.AdamW{WeightDecay: 0.1, DecayLen: n}, false, 0},
			{"decay half, bfloat16 copy", kernels.AdamW{WeightDecay: 0.1, DecayLen: n / 2}, false, kernels.BFloat16},
			{"clipped, float16 copy", kernels.AdamW{WeightDecay: 0.1, DecayLen: n, MaxNorm: 0.5}, true, kernels.Float16},
			{"loss scale, clip not reached", kernels.AdamW{WeightDecay: 0.1, DecayLen: n, MaxNorm: 1e9, GradScale: 1.0 / 1024}, true, 0},
		} {
			o := c.o
			o.LR, o.Beta1, o.Beta2, o.Eps = 1e-3, 0.9, 0.95, 1e-8
			compare(t, be, fmt.Sprintf("%s n%d", c.name, n), tolAdamW, func(a *arena) []kernels.Tensor {
				p, m, v := a.f32(p0), a.f32(m0), a.f32(v0)
				var cp kernels.Tensor
				if c.copy != 0 {
					cp = a.garbage(c.copy, n)
				}
				for step, g := range grads {
					o.Step = step + 1
					var norm kernels.Tensor
					if c.norm {
						var s float64
						for _, x := range g {
							s += float64(x) * float64(x)
						}
						norm = a.f64([]float64{s / 2, s / 2})
					}
					a.be.AdamW(p, a.f32(g), m, v, cp, norm, o)
				}
				if cp.Nil() {
					return []kernels.Tensor{p, m, v}
				}
				return []kernels.Tensor{p, m, v, cp}
			})
		}
		// A gradient norm that is not finite skips the update.
		compare(t, be, fmt.Sprintf("skipped n%d", n), tolExact, func(a *arena) []kernels.Tensor {
			p, m, v, cp := a.f32(p0), a.f32(m0), a.f32(v0), a.in(kernels.BFloat16, p0)
			o := kernels.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Step: 1, MaxNorm: 1}
			a.be.AdamW(p, a.f32(grads[0]), m, v, cp, a.f64([]float64{1, math.Inf(1)}), o)
			return []kernels.Tensor{p, m, v, cp}
		})
	}
}

func sumSquaresVsRef(t *testing.T, be kernels.Backend) {
	for i, n := range append(elementwiseSizes, 1<<20+3) {
		for _, blocks := range []int{1, 3} {
			for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16, kernels.Float16} {
				if dt != kernels.Float32 && n > 1<<20 {
					continue
				}
				r := newRand(uint64(1000 + i))
				x := normal(r, n*blocks, 1)
				a, ra := newArena(be), newArena(refBackend())
				got, want := a.alloc(kernels.Float64, blocks), ra.alloc(kernels.Float64, blocks)
				be.SumSquares(got, a.in(dt, x), n)
				ra.be.SumSquares(want, ra.in(dt, x), n)
				g, w := a.read64(got), ra.read64(want)
				for b := range w {
					if math.Abs(g[b]-w[b]) > 1e-12*w[b] {
						t.Errorf("%s n%d block %d: SumSquares = %v, want %v", dt, n, b, g[b], w[b])
					}
				}
				a.checkGuards(t, "sumsquares")
				a.free()
			}
		}
	}
}
