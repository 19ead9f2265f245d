package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gptkit/kernels/cuda/sim"
	"gptkit/kernels/kerneltest"
)

// runGemm queues g on the simulated cuBLAS and waits for it.
func runGemm(t *testing.T, b *Backend, g gemm) error {
	t.Helper()
	if g.compute == 0 {
		g.compute = b.compute
	}
	if err := b.blas.gemm(b.stream, g); err != nil {
		return err
	}
	return b.drv.streamSynchronize(b.stream)
}

func nans(x []float32) {
	for i := range x {
		x[i] = float32(math.NaN())
	}
}

// The simulated GEMM honours transposes, leading dimensions (the padding it
// must not read holds NaN), batch strides, alpha and beta (beta 0 ignores a
// NaN C), against hostGemm's float64 sums.
func TestSimGemmArguments(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		ta, tb      bool
		m, n, k     int
		pad, batch  int
		alpha, beta float32
	}{
		{false, false, 5, 7, 3, 0, 1, 1, 0}, {true, false, 9, 4, 13, 2, 1, 0.5, 1}, {false, true, 3, 3, 33, 1, 3, 1, -2},
		{true, true, 17, 6, 8, 3, 2, 2, 0}, {false, false, 1, 1, 1, 0, 5, 1, 1}, {true, false, 64, 48, 100, 0, 2, 0.125, 0.5},
	} {
		rowsA, colsA := c.m, c.k
		if c.ta {
			rowsA, colsA = c.k, c.m
		}
		rowsB, colsB := c.k, c.n
		if c.tb {
			rowsB, colsB = c.n, c.k
		}
		lda, ldb, ldc := rowsA+c.pad, rowsB+c.pad, c.m+c.pad
		sA, sB, sC := lda*colsA+c.pad, ldb*colsB, ldc*c.n+2*c.pad
		A, B, C := hostBuf(t, b, sA*c.batch), hostBuf(t, b, sB*c.batch), hostBuf(t, b, sC*c.batch)
		nans(A)
		nans(B)
		for bi := 0; bi < c.batch; bi++ {
			for j := 0; j < colsA; j++ {
				for i := 0; i < rowsA; i++ {
					A[bi*sA+j*lda+i] = float32(r.NormFloat64())
				}
			}
			for j := 0; j < colsB; j++ {
				for i := 0; i < rowsB; i++ {
					B[bi*sB+j*ldb+i] = float32(r.NormFloat64())
				}
			}
			for i := range C[bi*sC : (bi+1)*sC] {
				C[bi*sC+i] = float32(r.NormFloat64())
				if c.beta == 0 {
					C[bi*sC+i] = float32(math.NaN())
				}
			}
		}
		g := gemm{transA: c.ta, transB: c.tb, m: c.m, n: c.n, k: c.k, alpha: c.alpha, beta: c.beta,
			A: dp(A), lda: lda, strideA: int64(sA), B: dp(B), ldb: ldb, strideB: int64(sB), C: dp(C), ldc: ldc, strideC: int64(sC), batch: c.batch}
		want := clone(C)
		var s space
		s.with(A, B, want)
		gw := g
		gw.C = dp(want)
		hostGemm(s, gw)
		if err := runGemm(t, b, g); err != nil {
			t.Fatal(err)
		}
		for bi := 0; bi < c.batch; bi++ {
			for j := 0; j < c.n; j++ {
				got, exp := C[bi*sC+j*ldc:][:c.m], want[bi*sC+j*ldc:][:c.m]
				if err := kerneltest.Close(got, exp, 1e-5, 1); err != nil {
					t.Errorf("%+v batch %d column %d: %v", c, bi, j, err)
				}
			}
		}
	}
}

// bf16 compute: the operands are rounded to bfloat16 first, the products
// are exact and summed in float32.
func TestSimGemmBF16(t *testing.T) {
	b := openSim(t, BF16, SimOptions{})
	r := rand.New(rand.NewPCG(13, 14))
	m, n, k := 7, 5, 300
	A, B, C := hostBuf(t, b, m*k), hostBuf(t, b, k*n), hostBuf(t, b, m*n)
	for i := range A {
		A[i] = float32(r.NormFloat64())
	}
	for i := range B {
		B[i] = float32(r.NormFloat64())
	}
	if err := runGemm(t, b, gemm{m: m, n: n, k: k, alpha: 1, A: dp(A), lda: m, B: dp(B), ldb: k, C: dp(C), ldc: m, batch: 1}); err != nil {
		t.Fatal(err)
	}
	bf := func(x float32) float64 { return float64(sim.FromBF16(sim.ToBF16(x))) }
	var maxErr, maxExact float64
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var sRounded, sExact float64
			for l := 0; l < k; l++ {
				sRounded += bf(A[l*m+i]) * bf(B[j*k+l])
				sExact += float64(A[l*m+i]) * float64(B[j*k+l])
			}
			maxErr = math.Max(maxErr, math.Abs(float64(C[j*m+i])-sRounded))
			maxExact = math.Max(maxExact, math.Abs(float64(C[j*m+i])-sExact))
		}
	}
	if maxErr > 1e-4 {
		t.Errorf("bf16 GEMM off the bf16-rounded sum by %v (float32 accumulation allows ~1e-5)", maxErr)
	}
	if maxExact < 1e-3 {
		t.Errorf("bf16 GEMM within %v of the unrounded sum: the operands were not rounded", maxExact)
	}
}

// cuBLASLt epilogues on the simulator: bias, GELU with its aux, the backward
// dGELU with the bias gradient, a bf16 D.
func TestSimGemmEpilogues(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	r := rand.New(rand.NewPCG(15, 16))
	m, n, k := 6, 4, 5
	A, B, bias := hostBuf(t, b, m*k), hostBuf(t, b, k*n), hostBuf(t, b, m)
	for _, x := range [][]float32{A, B, bias} {
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
	}
	plain := func(i, j int) float32 {
		var s float32
		for l := 0; l < k; l++ {
			s += A[l*m+i] * B[j*k+l]
		}
		return s
	}
	D, aux := hostBuf(t, b, m*n), hostBuf(t, b, m*n)
	g := gemm{m: m, n: n, k: k, alpha: 1, A: dp(A), lda: m, B: dp(B), ldb: k, C: dp(D), ldc: m, batch: 1,
		D: dp(D), ldd: m, epilogue: epiGeluAuxBias, bias: dp(bias), aux: dp(aux), ldaux: m}
	if err := runGemm(t, b, g); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			pre := plain(i, j) + bias[i]
			if d := math.Abs(float64(aux[j*m+i] - pre)); d > 1e-5 {
				t.Errorf("aux[%d,%d] = %v, want %v", i, j, aux[j*m+i], pre)
			}
			if d := math.Abs(float64(D[j*m+i] - gelu(pre))); d > 1e-5 {
				t.Errorf("D[%d,%d] = %v, want gelu %v", i, j, D[j*m+i], gelu(pre))
			}
		}
	}
	// backward: D2 = (A·B) ⊙ gelu'(aux), bias ← Σ_j D2
	D2, dbias := hostBuf(t, b, m*n), hostBuf(t, b, m)
	g = gemm{m: m, n: n, k: k, alpha: 1, A: dp(A), lda: m, B: dp(B), ldb: k, C: dp(D2), ldc: m, batch: 1,
		D: dp(D2), ldd: m, epilogue: epiDGeluBGrad, bias: dp(dbias), aux: dp(aux), ldaux: m}
	if err := runGemm(t, b, g); err != nil {
		t.Fatal(err)
	}
	// With float32 aux the epilogue's gelu' is off by up to dgeluEpilogueError,
	// as cuBLASLt's was on the H100.
	moved := 0.0
	for i := 0; i < m; i++ {
		var s float64
		for j := 0; j < n; j++ {
			want := plain(i, j) * dgelu(aux[j*m+i])
			d := math.Abs(float64(D2[j*m+i] - want))
			if d > 1e-6+dgeluEpilogueError*math.Abs(float64(plain(i, j))) {
				t.Errorf("dgelu D[%d,%d] = %v, want %v within %g of gelu'", i, j, D2[j*m+i], want, dgeluEpilogueError)
			}
			moved = math.Max(moved, d)
			s += float64(D2[j*m+i])
		}
		if math.Abs(float64(dbias[i])-s) > 1e-5 {
			t.Errorf("dbias[%d] = %v, want %v", i, dbias[i], s)
		}
	}
	if moved < 1e-6 {
		t.Errorf("dgelu within %g of the exact gelu': the simulated epilogue's error is missing", moved)
	}
	// a bf16 D, rounded to nearest even
	Dh := hostBuf(t, b, m*n) // room for m·n halves
	g = gemm{m: m, n: n, k: k, alpha: 1, A: dp(A), lda: m, B: dp(B), ldb: k, C: dp(Dh), ldc: m, batch: 1, cType: cudaR16BF}
	if err := runGemm(t, b, g); err != nil {
		t.Fatal(err)
	}
	bits := make([]uint16, m*n)
	for i := range bits {
		w := math.Float32bits(Dh[i/2])
		bits[i] = uint16(w >> (16 * (i % 2)))
	}
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			if got, want := bits[j*m+i], sim.ToBF16(plain(i, j)); got != want {
				t.Errorf("bf16 D[%d,%d] = %v, want %v", i, j, sim.FromBF16(got), sim.FromBF16(want))
			}
		}
	}
}

// Arguments cuBLAS refuses, and what the simulator does not implement, fail
// with the status cuBLAS would give, on one line.
func TestSimGemmRefusals(t *testing.T) {
	b := openSim(t, FP32, SimOptions{})
	A := hostBuf(t, b, 64)
	ok := gemm{m: 4, n: 4, k: 4, alpha: 1, A: dp(A), lda: 4, B: dp(A), ldb: 4, C: dp(A), ldc: 4, batch: 1}
	for _, c := range []struct {
		name string
		mod  func(g *gemm)
		want string
	}{
		{"lda", func(g *gemm) { g.lda = 3 }, "CUBLAS_STATUS_INVALID_VALUE: lda 3 < 4 rows of A"},
		{"ldc", func(g *gemm) { g.ldc = 2 }, "CUBLAS_STATUS_INVALID_VALUE: ldc 2 < m 4"},
		{"compute", func(g *gemm) { g.compute = 70 }, "CUBLAS_STATUS_NOT_SUPPORTED: compute type 70"},
		{"type", func(g *gemm) { g.aType, g.bType = 1, 1 }, "CUBLAS_STATUS_NOT_SUPPORTED: operand type cudaDataType 1"},
		{"bias", func(g *gemm) { g.epilogue = epiBias }, "without a bias pointer"},
	} {
		g := ok
		c.mod(&g)
		err := runGemm(t, b, g)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// an operand past its allocation: an execution failure at the next sync,
	// sticky (the context is lost, as on a GPU)
	b2, err := Open(Options{Precision: FP32, Sim: &SimOptions{Memory: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	A2 := hostBuf(t, b2, 64)
	g := gemm{m: 4, n: 4, k: 40, alpha: 1, A: dp(A2), lda: 4, B: dp(A2), ldb: 40, C: dp(A2), ldc: 4, batch: 1}
	err = runGemm(t, b2, g)
	if err == nil || !strings.Contains(err.Error(), "run 384 bytes past the end of the 256-byte managed allocation") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("out-of-bounds operand: %v", err)
	}
	if err2 := b2.drv.streamSynchronize(b2.stream); err2 == nil {
		t.Errorf("the error is not sticky")
	}
}
