package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"gptkit/kernels"
	"gptkit/kernels/kerneltest"
	"gptkit/kernels/ref"
)

// The GEMM descriptors the backend hands cuBLAS are checked here without a GPU:
// hostGemm executes one with cuBLAS's column-major semantics over Go slices.
// Results must match kernels/ref.

// dp is a Go slice's address (in these tests, "device" memory is Go memory).
func dp(x []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(x))) }

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

		H := kernels.Host
		want := make([]float32, N*OC)
		ref.New().MatmulForward(H(want), H(inp), H(w), H(bias), N, C, OC)
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
		ref.New().MatmulBackward(H(wantDinp), H(wantDw), kernels.Tensor{}, H(dout), H(inp), H(w), kernels.Tensor{}, N, C, OC)
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

// TestClassifierGemms: the classifier's three GEMMs over a chunk of R rows
// (logits over all Vp columns, dinp written, dweight accumulated, the padded
// columns of dlogits 0 as the row kernel leaves them) against plain loops: the
// padding adds nothing to dinp or dweight.
func TestClassifierGemms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const R, C, V, Vp = 5, 7, 11, 16
	x, w, dw0 := randn(r, R*C), randn(r, Vp*C), randn(r, Vp*C)
	logits := make([]float32, R*Vp)
	var s space
	s.with(logits, x, w)
	gl, gi, gw := classifierGemms(dp(logits), dp(x), dp(w), 0, 0, R, C, Vp)
	hostGemm(s, gl)
	for i := 0; i < R; i++ {
		for j := 0; j < Vp; j++ {
			var want float64
			for c := 0; c < C; c++ {
				want += float64(x[i*C+c]) * float64(w[j*C+c])
			}
			if d := float64(logits[i*Vp+j]) - want; d > 1e-5 || d < -1e-5 {
				t.Fatalf("logits[%d,%d] = %v, want %v", i, j, logits[i*Vp+j], want)
			}
		}
	}
	for i := 0; i < R; i++ {
		clear(logits[i*Vp+V : (i+1)*Vp]) // dlogits: the row kernel's zeros
	}
	dinp, dw := make([]float32, R*C), clone(dw0)
	s = nil
	s.with(logits, x, w, dinp, dw)
	_, gi, gw = classifierGemms(dp(logits), dp(x), dp(w), dp(dinp), dp(dw), R, C, Vp)
	hostGemm(s, gi)
	hostGemm(s, gw)
	for i := 0; i < R; i++ {
		for c := 0; c < C; c++ {
			var want float64
			for j := 0; j < V; j++ {
				want += float64(logits[i*Vp+j]) * float64(w[j*C+c])
			}
			if d := float64(dinp[i*C+c]) - want; d > 1e-4 || d < -1e-4 {
				t.Fatalf("dinp[%d,%d] = %v, want %v", i, c, dinp[i*C+c], want)
			}
		}
	}
	for j := 0; j < Vp; j++ {
		for c := 0; c < C; c++ {
			want := float64(dw0[j*C+c])
			if j < V {
				for i := 0; i < R; i++ {
					want += float64(logits[i*Vp+j]) * float64(x[i*C+c])
				}
			}
			if d := float64(dw[j*C+c]) - want; d > 1e-4 || d < -1e-4 {
				t.Fatalf("dweight[%d,%d] = %v, want %v", j, c, dw[j*C+c], want)
			}
		}
	}
}
