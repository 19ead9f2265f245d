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
		num := make([]float64, len(xs[k]))
		maxNum := 0.0
		for j := range num {
			orig := x[k][j]
			h := 1e-4 * math.Max(1, math.Abs(orig))
			x[k][j] = orig + h
			fp := objective(x)
			x[k][j] = orig - h
			fm := objective(x)
			x[k][j] = orig
			num[j] = (fp - fm) / (2 * h)
			maxNum = math.Max(maxNum, math.Abs(num[j]))
		}
		for j := range num {
			a := float64(grads[k][j])
			e := math.Abs(a-num[j]) / (math.Abs(a) + math.Abs(num[j]) + 1e-3*maxNum + 1e-30)
			if !(e <= tolGrad) {
				t.Errorf("%s: input %d element %d: backward %v, finite difference %v (relative error %.3g)", name, k, j, a, num[j], e)
				return
			}
		}
	}
}

func gradCheck(t *testing.T, be kernels.Backend) {
	a := &arena{be: be}
	r := newRand(7)
	in := func(n int, s float64) []float32 { return a.copy(normal(r, n, s)) }

	t.Run("matmul", func(t *testing.T) {
		for _, s := range []struct {
			N, C, OC int
			bias     bool
		}{{3, 5, 4, true}, {2, 17, 3, false}, {1, 1, 1, true}} {
			x, w := in(s.N*s.C, 1), in(s.OC*s.C, 1)
			var b, db []float32
			if s.bias {
				b, db = in(s.OC, 1), a.alloc(s.OC)
			}
			R := in(s.N*s.OC, 1)
			dx, dw := a.alloc(s.N*s.C), a.alloc(s.OC*s.C)
			out := a.alloc(s.N * s.OC)
			be.MatmulForward(out, x, w, b, s.N, s.C, s.OC)
			be.MatmulBackward(dx, dw, db, R, x, w, s.N, s.C, s.OC)
			be.Sync()
			xs, gs := [][]float32{x, w}, [][]float32{dx, dw}
			if s.bias {
				xs, gs = append(xs, b), append(gs, db)
			}
			checkGrads(t, fmt.Sprintf("N%d C%d OC%d", s.N, s.C, s.OC), xs, gs, func(v [][]float64) float64 {
				var bb []float64
				if s.bias {
					bb = v[2]
				}
				return dot64(R, matmul64(v[0], v[1], bb, s.N, s.C, s.OC))
			})
		}
	})

	t.Run("layernorm", func(t *testing.T) {
		for _, s := range []struct {
			N, C int
			bias bool
		}{{3, 7, true}, {2, 5, false}, {1, 33, true}} {
			x, w := in(s.N*s.C, 2), in(s.C, 1)
			var b, db []float32
			if s.bias {
				b, db = in(s.C, 1), a.alloc(s.C)
			}
			R := in(s.N*s.C, 1)
			out, mean, rstd := a.alloc(s.N*s.C), a.alloc(s.N), a.alloc(s.N)
			dx, dw := a.alloc(s.N*s.C), a.alloc(s.C)
			be.LayerNormForward(out, mean, rstd, x, w, b, s.N, s.C)
			be.LayerNormBackward(dx, dw, db, R, x, w, mean, rstd, s.N, s.C)
			be.Sync()
			xs, gs := [][]float32{x, w}, [][]float32{dx, dw}
			if s.bias {
				xs, gs = append(xs, b), append(gs, db)
			}
			checkGrads(t, fmt.Sprintf("N%d C%d", s.N, s.C), xs, gs, func(v [][]float64) float64 {
				var bb []float64
				if s.bias {
					bb = v[2]
				}
				return dot64(R, layernorm64(v[0], v[1], bb, s.N, s.C))
			})
		}
	})

	t.Run("attention", func(t *testing.T) {
		for _, s := range []struct{ B, T, C, NH int }{{2, 4, 6, 2}, {1, 5, 3, 3}, {1, 1, 4, 1}, {1, 9, 8, 1}} {
			qkv := in(s.B*s.T*3*s.C, 1)
			R := in(s.B*s.T*s.C, 1)
			out, att := a.alloc(s.B*s.T*s.C), a.alloc(s.B*s.NH*s.T*s.T)
			dqkv := a.alloc(s.B * s.T * 3 * s.C)
			be.AttentionForward(out, att, qkv, s.B, s.T, s.C, s.NH)
			be.AttentionBackward(dqkv, R, qkv, att, s.B, s.T, s.C, s.NH)
			be.Sync()
			checkGrads(t, fmt.Sprintf("B%d T%d C%d NH%d", s.B, s.T, s.C, s.NH), [][]float32{qkv}, [][]float32{dqkv}, func(v [][]float64) float64 {
				return dot64(R, attention64(v[0], s.B, s.T, s.C, s.NH))
			})
		}
	})

	t.Run("gelu", func(t *testing.T) {
		for _, n := range []int{1, 17, 40} {
			x := in(n, 2.5)
			R := in(n, 1)
			out, dx := a.alloc(n), a.alloc(n)
			be.GeluForward(out, x)
			be.GeluBackward(dx, x, R)
			be.Sync()
			checkGrads(t, fmt.Sprintf("n%d", n), [][]float32{x}, [][]float32{dx}, func(v [][]float64) float64 {
				return dot64(R, gelu64(v[0]))
			})
		}
	})

	t.Run("crossentropy", func(t *testing.T) {
		for _, s := range []struct{ N, V, Vp int }{{3, 5, 8}, {2, 1, 1}, {4, 11, 11}} {
			logits := in(s.N*s.Vp, 2)
			targets := make([]int32, s.N)
			for j := range targets {
				targets[j] = int32(r.IntN(s.V))
			}
			if s.N > 2 {
				targets[1] = -1
			}
			const dloss = 0.7
			losses, probs, dl := a.alloc(s.N), a.alloc(s.N*s.Vp), a.alloc(s.N*s.Vp)
			be.CrossEntropyForward(losses, probs, logits, targets, s.N, s.V, s.Vp)
			be.CrossEntropyBackward(dl, probs, targets, dloss, s.N, s.V, s.Vp)
			be.Sync()
			checkGrads(t, fmt.Sprintf("N%d V%d Vp%d", s.N, s.V, s.Vp), [][]float32{logits}, [][]float32{dl}, func(v [][]float64) float64 {
				var sum float64
				for _, l := range crossEntropy64(v[0], targets, s.N, s.V, s.Vp) {
					sum += dloss * l
				}
				return sum
			})
			// The forward's losses agree with the float64 definition.
			want := crossEntropy64(f64(logits), targets, s.N, s.V, s.Vp)
			for j := range want {
				if math.Abs(float64(losses[j])-want[j]) > 1e-5*(1+want[j]) {
					t.Errorf("N%d V%d: loss[%d] = %v, want %v", s.N, s.V, j, losses[j], want[j])
				}
			}
		}
	})

	t.Run("encoder", func(t *testing.T) {
		const B, T, C, V = 2, 3, 4, 5
		inp := []int32{0, 3, 3, 4, 0, 1}
		wte, wpe := in(V*C, 1), in(T*C, 1)
		R := in(B*T*C, 1)
		out, dwte, dwpe := a.alloc(B*T*C), a.alloc(V*C), a.alloc(T*C)
		be.EncoderForward(out, inp, wte, wpe, B, T, C)
		be.EncoderBackward(dwte, dwpe, R, inp, B, T, C)
		be.Sync()
		checkGrads(t, "B2 T3 C4", [][]float32{wte, wpe}, [][]float32{dwte, dwpe}, func(v [][]float64) float64 {
			return dot64(R, encoder64(v[0], v[1], inp, B, T, C))
		})
	})

	t.Run("residual-dropout", func(t *testing.T) {
		const n = 50
		x, y, R := in(n, 1), in(n, 1), in(n, 1)
		dx, dy := a.alloc(n), a.alloc(n)
		be.ResidualBackward(dx, dy, R)
		be.Sync()
		checkGrads(t, "residual", [][]float32{x, y}, [][]float32{dx, dy}, func(v [][]float64) float64 {
			var s float64
			for i := range v[0] {
				s += float64(R[i]) * (v[0][i] + v[1][i])
			}
			return s
		})
		dd := a.alloc(n)
		be.DropoutBackward(dd, R, 0.3, 99)
		be.Sync()
		checkGrads(t, "dropout", [][]float32{x}, [][]float32{dd}, func(v [][]float64) float64 {
			return dot64(R, dropout64(v[0], 0.3, 99))
		})
	})
	a.checkGuards(t, "gradcheck")
}
