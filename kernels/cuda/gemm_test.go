package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gptkit/kernels/kerneltest"
	"gptkit/kernels/ref"
)

// The GEMM descriptors the backend hands cuBLAS are checked here without a GPU:
// hostGemm executes one with cuBLAS's column-major semantics over Go slices, and
// the attention data flow around them runs through Go transcriptions of the
// permute and softmax kernels. Results must match kernels/ref.

// space resolves device addresses to Go slices (in these tests, "device" memory
// is Go memory).
type space [][]float32

func (s *space) add(x []float32) uintptr { *s = append(*s, x); return dp(x) }

func (s space) at(p uintptr) ([]float32, int) {
	for _, x := range s {
		lo := dp(x)
		if p >= lo && p < lo+uintptr(4*len(x)) {
			return x, int(p-lo) / 4
		}
	}
	panic(fmt.Sprintf("address %#x outside every buffer", p))
}

// hostGemm runs g: C = alpha·op(A)·op(B) + beta·C, column-major, batched, in
// float64, reading only the elements cuBLAS would (an out-of-range index panics).
func hostGemm(s space, g gemm) {
	A, a0 := s.at(g.A)
	B, b0 := s.at(g.B)
	C, c0 := s.at(g.C)
	batch := max(g.batch, 1)
	for bi := 0; bi < batch; bi++ {
		ao, bo, co := a0+bi*int(g.strideA), b0+bi*int(g.strideB), c0+bi*int(g.strideC)
		for j := 0; j < g.n; j++ {
			for i := 0; i < g.m; i++ {
				var sum float64
				for l := 0; l < g.k; l++ {
					var a, b float32
					if g.transA {
						a = A[ao+l+i*g.lda] // op(A)[i,l] = A[l,i]
					} else {
						a = A[ao+i+l*g.lda]
					}
					if g.transB {
						b = B[bo+j+l*g.ldb]
					} else {
						b = B[bo+l+j*g.ldb]
					}
					sum += float64(a) * float64(b)
				}
				c := &C[co+i+j*g.ldc]
				v := float64(g.alpha) * sum
				if g.beta != 0 {
					v += float64(g.beta) * float64(*c)
				}
				*c = float32(v)
			}
		}
	}
}

func randn(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

func TestMatmulGemms(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range []struct{ N, C, OC int }{{1, 1, 1}, {3, 5, 7}, {13, 33, 29}, {64, 48, 96}} {
		N, C, OC := sh.N, sh.C, sh.OC
		inp, w, bias, dout := randn(r, N*C), randn(r, OC*C), randn(r, OC), randn(r, N*OC)
		dinp0, dw0 := randn(r, N*C), randn(r, OC*C)

		want := make([]float32, N*OC)
		ref.New().MatmulForward(want, inp, w, bias, N, C, OC)
		got := make([]float32, N*OC)
		for i := range got { // the bias_fill kernel
			got[i] = bias[i%OC]
		}
		var s space
		hostGemm(s.with(got, inp, w), matmulForwardGemm(dp(got), dp(inp), dp(w), N, C, OC, true))
		if err := kerneltest.Close(got, want, 1e-5, 1); err != nil {
			t.Errorf("forward N%d C%d OC%d: %v", N, C, OC, err)
		}

		wantDinp, wantDw := clone(dinp0), clone(dw0)
		ref.New().MatmulBackward(wantDinp, wantDw, nil, dout, inp, w, N, C, OC)
		dinp, dw := clone(dinp0), clone(dw0)
		s = nil
		s.with(dinp, dw, dout, inp, w)
		gi, gw := matmulBackwardGemms(dp(dinp), dp(dw), dp(dout), dp(inp), dp(w), N, C, OC)
		hostGemm(s, gi)
		hostGemm(s, gw)
		if err := kerneltest.Close(dinp, wantDinp, 1e-5, 1); err != nil {
			t.Errorf("backward dinp N%d C%d OC%d: %v", N, C, OC, err)
		}
		if err := kerneltest.Close(dw, wantDw, 1e-5, 1); err != nil {
			t.Errorf("backward dweight N%d C%d OC%d: %v", N, C, OC, err)
		}
	}
}

func (s *space) with(xs ...[]float32) space {
	for _, x := range xs {
		s.add(x)
	}
	return *s
}

// Go transcriptions of attention.cu's kernels, index for index.
func permute(q, k, v, qkv []float32, B, T, NH, hs int) {
	C := NH * hs
	for i := 0; i < B*NH*T*hs; i++ {
		d, r := i%hs, i/hs
		tt := r % T
		r /= T
		h, b := r%NH, r/NH
		src := (b*T+tt)*3*C + h*hs + d
		q[i], k[i], v[i] = qkv[src], qkv[src+C], qkv[src+2*C]
	}
}

func permuteBackward(dqkv, dq, dk, dv []float32, B, T, NH, hs int) {
	C := NH * hs
	for i := 0; i < B*NH*T*hs; i++ {
		d, r := i%hs, i/hs
		tt := r % T
		r /= T
		h, b := r%NH, r/NH
		dst := (b*T+tt)*3*C + h*hs + d
		dqkv[dst] += dq[i]
		dqkv[dst+C] += dk[i]
		dqkv[dst+2*C] += dv[i]
	}
}

func unpermute(out, y []float32, B, T, NH, hs int, backward bool) {
	C := NH * hs
	for i := 0; i < B*NH*T*hs; i++ {
		d, r := i%hs, i/hs
		tt := r % T
		r /= T
		h, b := r%NH, r/NH
		o := (b*T+tt)*C + h*hs + d
		if backward {
			y[i] = out[o]
		} else {
			out[o] = y[i]
		}
	}
}

func softmaxForward(att []float32, rows, T int) {
	for row := 0; row < rows; row++ {
		t, a := row%T, att[row*T:][:T]
		mx := math.Inf(-1)
		for j := 0; j <= t; j++ {
			mx = math.Max(mx, float64(a[j]))
		}
		var s float64
		for j := 0; j <= t; j++ {
			s += math.Exp(float64(a[j]) - mx)
		}
		for j := range a {
			if j <= t {
				a[j] = float32(math.Exp(float64(a[j])-mx) / s)
			} else {
				a[j] = 0
			}
		}
	}
}

func softmaxBackward(datt, att []float32, rows, T int) {
	for row := 0; row < rows; row++ {
		t, d, p := row%T, datt[row*T:][:T], att[row*T:][:T]
		var s float32
		for j := 0; j <= t; j++ {
			s += p[j] * d[j]
		}
		for j := range d {
			if j <= t {
				d[j] = p[j] * (d[j] - s)
			} else {
				d[j] = 0
			}
		}
	}
}

func TestAttentionGemms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct{ B, T, C, NH int }{{1, 1, 4, 1}, {2, 5, 12, 3}, {1, 17, 20, 5}, {2, 16, 32, 2}} {
		B, T, C, NH := sh.B, sh.T, sh.C, sh.NH
		hs, n, BH := C/NH, B*T*C, B*NH
		scale := float32(1 / math.Sqrt(float64(hs)))
		qkv, dout, dqkv0 := randn(r, B*T*3*C), randn(r, n), randn(r, B*T*3*C)
		name := fmt.Sprintf("B%d T%d C%d NH%d", B, T, C, NH)

		wantOut, wantAtt := make([]float32, n), make([]float32, BH*T*T)
		ref.New().AttentionForward(wantOut, wantAtt, qkv, B, T, C, NH)
		q, k, v, y := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		out, att := make([]float32, n), make([]float32, BH*T*T)
		for i := range att {
			att[i] = float32(math.NaN()) // the scores GEMM must write every element (beta 0)
		}
		var s space
		s.with(q, k, v, y, att)
		permute(q, k, v, qkv, B, T, NH, hs)
		gs, gv := attnForwardGemms(dp(att), dp(q), dp(k), dp(v), dp(y), BH, T, hs, scale)
		hostGemm(s, gs)
		softmaxForward(att, BH*T, T)
		hostGemm(s, gv)
		unpermute(out, y, B, T, NH, hs, false)
		if err := kerneltest.Close(out, wantOut, 1e-5, 1); err != nil {
			t.Errorf("forward out %s: %v", name, err)
		}
		if err := kerneltest.Close(att, wantAtt, 1e-5, 1); err != nil {
			t.Errorf("forward att %s: %v", name, err)
		}

		wantD := clone(dqkv0)
		ref.New().AttentionBackward(wantD, dout, qkv, wantAtt, B, T, C, NH)
		dy, dq, dk, dv, datt := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, BH*T*T)
		s = nil
		s.with(q, k, v, dy, dq, dk, dv, datt, wantAtt)
		dqkv := clone(dqkv0)
		permute(q, k, v, qkv, B, T, NH, hs)
		unpermute(dout, dy, B, T, NH, hs, true)
		gDatt, gDv, gDq, gDk := attnBackwardGemms(dp(datt), dp(wantAtt), dp(q), dp(k), dp(v), dp(dy), dp(dq), dp(dk), dp(dv), BH, T, hs, scale)
		hostGemm(s, gDatt)
		hostGemm(s, gDv)
		softmaxBackward(datt, wantAtt, BH*T, T)
		hostGemm(s, gDq)
		hostGemm(s, gDk)
		permuteBackward(dqkv, dq, dk, dv, B, T, NH, hs)
		if err := kerneltest.Close(dqkv, wantD, 1e-5, 1); err != nil {
			t.Errorf("backward %s: %v", name, err)
		}
	}
}
