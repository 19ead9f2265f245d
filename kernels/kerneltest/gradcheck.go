package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"gptkit/kernels"
)

// tolGrad bounds |analytic - numeric| / (|analytic| + |numeric| + 1e-3·max|numeric|).
// The backend's backward runs in float32 from float32 saved statistics, so
// about 1e-6 is typical; finite differences in float64 add far less.
const tolGrad = 1e-3

// maxChecked is how many elements of each input are checked (a deterministic
// sample of the larger ones: each needs two evaluations of the objective).
const maxChecked = 150

func f64(x []float32) []float64 {
	if x == nil {
		return nil
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func dot64(r []float32, y []float64) float64 {
	var s float64
	for i := range y {
		s += float64(r[i]) * y[i]
	}
	return s
}

// checkGrads compares the backend's gradients grads[k] of the inputs xs[k]
// with central differences of objective, evaluated in float64.
func checkGrads(t *testing.T, name string, xs, grads [][]float32, objective func(x [][]float64) float64) {
	t.Helper()
	x := make([][]float64, len(xs))
	for k := range xs {
		x[k] = f64(xs[k])
	}
	for k := range xs {
		n := len(xs[k])
		step := max(1, n/maxChecked)
		var idx []int
		for j := 0; j < n; j += step {
			idx = append(idx, j)
		}
		if idx[len(idx)-1] != n-1 {
			idx = append(idx, n-1)
		}
		num := make([]float64, len(idx))
		maxNum := 0.0
		for jj, j := range idx {
			orig := x[k][j]
			h := 1e-4 * math.Max(1, math.Abs(orig))
			x[k][j] = orig + h
			fp := objective(x)
			x[k][j] = orig - h
			fm := objective(x)
			x[k][j] = orig
			num[jj] = (fp - fm) / (2 * h)
			maxNum = math.Max(maxNum, math.Abs(num[jj]))
		}
		for jj, j := range idx {
			a := float64(grads[k][j])
			e := math.Abs(a-num[jj]) / (math.Abs(a) + math.Abs(num[jj]) + 1e-3*maxNum + 1e-30)
			if !(e <= tolGrad) {
				t.Errorf("%s: input %d element %d: backward %v, finite difference %v (relative error %.3g)", name, k, j, a, num[jj], e)
				return
			}
		}
	}
}

// gradCheck runs each backward in float32 against finite differences of an
// independent float64 forward.
func gradCheck(t *testing.T, be kernels.Backend) {
	a := newArena(be)
	defer a.free()
	r := newRand(7)
	in := func(n int, s float64) (kernels.Tensor, []float32) {
		x := normal(r, n, s)
		return a.f32(x), x
	}
	read := a.read

	t.Run("matmul", func(t *testing.T) {
		for _, s := range []struct {
			N, C, OC int
			bias     bool
		}{{3, 5, 4, true}, {2, 17, 3, false}, {1, 1, 1, true}} {
			x, xh := in(s.N*s.C, 1)
			w, wh := in(s.OC*s.C, 1)
			var db kernels.Tensor
			var bh []float32
			if s.bias {
				_, bh = in(s.OC, 1)
				db = a.alloc(kernels.Float32, s.OC)
			}
			R, Rh := in(s.N*s.OC, 1)
			dx, dw := a.garbage(kernels.Float32, s.N*s.C), a.alloc(kernels.Float32, s.OC*s.C)
			be.MatmulBackward(dx, dw, db, R, x, w, kernels.Tensor{}, s.N, s.C, s.OC)
			xs, gs := [][]float32{xh, wh}, [][]float32{read(dx), read(dw)}
			if s.bias {
				xs, gs = append(xs, bh), append(gs, read(db))
			}
			checkGrads(t, fmt.Sprintf("N%d C%d OC%d", s.N, s.C, s.OC), xs, gs, func(v [][]float64) float64 {
				var bb []float64
				if s.bias {
					bb = v[2]
				}
				return dot64(Rh, matmul64(v[0], v[1], bb, s.N, s.C, s.OC))
			})
		}
	})

	t.Run("matmul-gelu", func(t *testing.T) {
		// z = gelu(x·W1ᵀ + b1)·W2ᵀ + b2: the GELU's backward is fused into the second
		// matmul's input gradient.
		const N, C, H, OC = 3, 5, 7, 4
		x, xh := in(N*C, 1)
		w1, w1h := in(H*C, 1)
		b1, b1h := in(H, 1)
		w2, w2h := in(OC*H, 1)
		b2, b2h := in(OC, 1)
		R, Rh := in(N*OC, 1)
		y, pre, z := a.garbage(kernels.Float32, N*H), a.garbage(kernels.Float32, N*H), a.garbage(kernels.Float32, N*OC)
		be.MatmulGeluForward(y, pre, x, w1, b1, N, C, H)
		be.MatmulForward(z, y, w2, b2, N, H, OC)
		dpre, dw2, db2 := a.garbage(kernels.Float32, N*H), a.alloc(kernels.Float32, OC*H), a.alloc(kernels.Float32, OC)
		be.MatmulBackward(dpre, dw2, db2, R, y, w2, pre, N, H, OC)
		dx, dw1, db1 := a.garbage(kernels.Float32, N*C), a.alloc(kernels.Float32, H*C), a.alloc(kernels.Float32, H)
		be.MatmulBackward(dx, dw1, db1, dpre, x, w1, kernels.Tensor{}, N, C, H)
		xs := [][]float32{xh, w1h, b1h, w2h, b2h}
		gs := [][]float32{read(dx), read(dw1), read(db1), read(dw2), read(db2)}
		checkGrads(t, "two layers", xs, gs, func(v [][]float64) float64 {
			h := gelu64(matmul64(v[0], v[1], v[2], N, C, H))
			return dot64(Rh, matmul64(h, v[3], v[4], N, H, OC))
		})
	})

	t.Run("layernorm", func(t *testing.T) {
		for _, s := range []struct {
			N, C int
			bias bool
		}{{3, 7, true}, {2, 5, false}, {1, 33, true}} {
			x, xh := in(s.N*s.C, 2)
			w, wh := in(s.C, 1)
			var b, db kernels.Tensor
			var bh []float32
			if s.bias {
				b, bh = in(s.C, 1)
				db = a.alloc(kernels.Float32, s.C)
			}
			R, Rh := in(s.N*s.C, 1)
			Rres, Rresh := in(s.N*s.C, 1)
			out, mean, rstd := a.alloc(kernels.Float32, s.N*s.C), a.alloc(kernels.Float32, s.N), a.alloc(kernels.Float32, s.N)
			dx, dw := a.garbage(kernels.Float32, s.N*s.C), a.alloc(kernels.Float32, s.C)
			be.LayerNormForward(out, mean, rstd, x, w, b, s.N, s.C)
			be.LayerNormBackward(dx, dw, db, Rres, R, x, w, mean, rstd, s.N, s.C)
			xs, gs := [][]float32{xh, wh}, [][]float32{read(dx), read(dw)}
			if s.bias {
				xs, gs = append(xs, bh), append(gs, read(db))
			}
			// The objective has a residual term Σ Rres·x, whose gradient is dres.
			checkGrads(t, fmt.Sprintf("N%d C%d", s.N, s.C), xs, gs, func(v [][]float64) float64 {
				var bb []float64
				if s.bias {
					bb = v[2]
				}
				return dot64(Rh, layernorm64(v[0], v[1], bb, s.N, s.C)) + dot64(Rresh, v[0])
			})
		}
	})

	t.Run("residual-layernorm", func(t *testing.T) {
		// res = x + y and out = LN(res): objective Σ R1·res + Σ R2·out; the gradient of
		// x and of y is dres = R1 + LN's input gradient.
		const N, C = 3, 9
		x, xh := in(N*C, 1)
		y, yh := in(N*C, 1)
		w, wh := in(C, 1)
		b, bh := in(C, 1)
		R1, R1h := in(N*C, 1)
		R2, R2h := in(N*C, 1)
		res, out, mean, rstd := a.alloc(kernels.Float32, N*C), a.alloc(kernels.Float32, N*C), a.alloc(kernels.Float32, N), a.alloc(kernels.Float32, N)
		be.ResidualLayerNormForward(res, out, mean, rstd, x, y, w, b, N, C)
		dw, db := a.alloc(kernels.Float32, C), a.alloc(kernels.Float32, C)
		be.LayerNormBackward(R1, dw, db, R1, R2, res, w, mean, rstd, N, C) // dres in place
		d := read(R1)
		checkGrads(t, "N3 C9", [][]float32{xh, yh, wh, bh}, [][]float32{d, d, read(dw), read(db)}, func(v [][]float64) float64 {
			s := make([]float64, N*C)
			for i := range s {
				s[i] = v[0][i] + v[1][i]
			}
			return dot64(R1h, s) + dot64(R2h, layernorm64(s, v[2], v[3], N, C))
		})
	})

	t.Run("attention", func(t *testing.T) {
		// Awkward shapes: T not a multiple of any block, one head, head sizes 8, 64, 128.
		for _, s := range []struct{ B, T, C, NH int }{
			{2, 4, 6, 2}, {1, 5, 3, 3}, {1, 1, 4, 1}, {1, 9, 8, 1}, {1, 67, 8, 1}, {1, 70, 128, 2}, {1, 66, 128, 1}, {2, 3, 24, 3},
		} {
			qkv, qkvh := in(s.B*s.T*3*s.C, 1)
			R, Rh := in(s.B*s.T*s.C, 1)
			out, lse := a.alloc(kernels.Float32, s.B*s.T*s.C), a.alloc(kernels.Float32, s.B*s.NH*s.T)
			dqkv := a.garbage(kernels.Float32, s.B*s.T*3*s.C)
			be.AttentionForward(out, lse, qkv, s.B, s.T, s.C, s.NH)
			be.AttentionBackward(dqkv, R, qkv, out, lse, s.B, s.T, s.C, s.NH)
			name := fmt.Sprintf("B%d T%d C%d NH%d", s.B, s.T, s.C, s.NH)
			// The forward agrees with the float64 definition too.
			if err := closeEnough(read(out), f32s(attention64(f64(qkvh), s.B, s.T, s.C, s.NH)), tolTranscend); err != nil {
				t.Errorf("%s: forward: %v", name, err)
			}
			checkGrads(t, name, [][]float32{qkvh}, [][]float32{read(dqkv)}, func(v [][]float64) float64 {
				return dot64(Rh, attention64(v[0], s.B, s.T, s.C, s.NH))
			})
		}
	})

	t.Run("classifier", func(t *testing.T) {
		for _, s := range []struct{ N, C, V, Vp, chunk int }{{3, 4, 5, 8, 2}, {2, 3, 1, 1, 1}, {5, 6, 11, 11, 3}, {4, 8, 7, 16, 4}} {
			x, xh := in(s.N*s.C, 1)
			w, wh := in(s.Vp*s.C, 1)
			targets := make([]int32, s.N)
			for j := range targets {
				targets[j] = int32(r.IntN(s.V))
			}
			if s.N > 2 {
				targets[1] = -1
			}
			const dloss = 0.7
			losses, dx, dw := a.garbage(kernels.Float32, s.N), a.garbage(kernels.Float32, s.N*s.C), a.alloc(kernels.Float32, s.Vp*s.C)
			be.Classifier(losses, kernels.Tensor{}, dx, dw, a.garbage(kernels.Float32, s.chunk*s.Vp), x, w, a.ids(targets), dloss, s.N, s.C, s.V, s.Vp)
			name := fmt.Sprintf("N%d C%d V%d Vp%d chunk%d", s.N, s.C, s.V, s.Vp, s.chunk)
			// The padded rows of the embedding get no gradient.
			dwh := read(dw)
			for j := s.V * s.C; j < s.Vp*s.C; j++ {
				if dwh[j] != 0 {
					t.Fatalf("%s: padded row %d of dweight = %v, want 0", name, j/s.C, dwh[j])
				}
			}
			checkGrads(t, name, [][]float32{xh, wh}, [][]float32{read(dx), dwh}, func(v [][]float64) float64 {
				var sum float64
				for _, l := range classifier64(v[0], v[1], targets, s.N, s.C, s.V) {
					sum += dloss * l
				}
				return sum
			})
			// The losses agree with the float64 definition.
			want := classifier64(f64(xh), f64(wh), targets, s.N, s.C, s.V)
			got := read(losses)
			for j := range want {
				if math.Abs(float64(got[j])-want[j]) > 1e-5*(1+want[j]) {
					t.Errorf("%s: loss[%d] = %v, want %v", name, j, got[j], want[j])
				}
			}
		}
	})

	t.Run("encoder", func(t *testing.T) {
		const B, T, C, V = 2, 3, 4, 5
		inp := []int32{0, 3, 3, 4, 0, 1}
		_, wteh := in(V*C, 1)
		_, wpeh := in(T*C, 1)
		R, Rh := in(B*T*C, 1)
		dwte, dwpe := a.alloc(kernels.Float32, V*C), a.alloc(kernels.Float32, T*C)
		be.EncoderBackward(dwte, dwpe, R, a.ids(inp), B, T, C)
		checkGrads(t, "B2 T3 C4", [][]float32{wteh, wpeh}, [][]float32{read(dwte), read(dwpe)}, func(v [][]float64) float64 {
			return dot64(Rh, encoder64(v[0], v[1], inp, B, T, C))
		})
	})

	t.Run("dropout", func(t *testing.T) {
		const n = 50
		_, xh := in(n, 1)
		R, Rh := in(n, 1)
		dd := a.garbage(kernels.Float32, n)
		be.DropoutBackward(dd, R, 0.3, 99)
		checkGrads(t, "dropout", [][]float32{xh}, [][]float32{read(dd)}, func(v [][]float64) float64 {
			return dot64(Rh, dropout64(v[0], 0.3, 99))
		})
	})
	a.checkGuards(t, "gradcheck")
}

func f32s(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}
