package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"gptkit/kernels"
	"gptkit/kernels/kerneltest"
	"gptkit/kernels/ref"
)

// The tests here need a GPU: they skip without one, unless GPTKIT_REQUIRE_GPU is
// set (tools/gpu/verify.sh sets it), when they fail instead.

func openOrSkip(t *testing.T, precision string) *Backend {
	t.Helper()
	b, err := Open(Options{Device: LocalRank(), Precision: precision})
	if err != nil {
		if os.Getenv("GPTKIT_REQUIRE_GPU") != "" {
			t.Fatalf("GPTKIT_REQUIRE_GPU is set: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("%s", b.Info())
	return b
}

// TestConformanceFP32: with float32 matmuls the GPU backend passes the same suite
// (and tolerances) as the CPU backends, and is deterministic.
func TestConformanceFP32(t *testing.T) {
	b := openOrSkip(t, FP32)
	kerneltest.Conformance(t, func() kernels.Backend { return b })
	kerneltest.Deterministic(t, b, b)
}

// TestBF16VsRef: bfloat16 matmuls and flash attention at GPT-2 shapes against
// ref on the same bfloat16 inputs, on fresh random inputs each run, outputs
// poisoned with NaN first: ‖out − ref‖/‖ref‖ must stay under 1e-2, never NaN.
func TestBF16VsRef(t *testing.T) {
	b := openOrSkip(t, BF16)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	rb := ref.New()
	bf := kernels.BFloat16
	on := func(be kernels.Backend, dt kernels.DType, x []float32) kernels.Tensor {
		y, err := be.Alloc("test", dt, len(x))
		if err != nil {
			t.Fatal(err)
		}
		kernels.UploadFloat32(be, y, x)
		return y
	}
	nan := func(be kernels.Backend, dt kernels.DType, n int) kernels.Tensor {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.NaN())
		}
		return on(be, dt, x)
	}
	for _, s := range []struct{ N, C, OC int }{{256, 768, 2304}, {256, 3072, 768}, {512, 768, 50304}, {7, 33, 65}} {
		inp, w, bias := randn(r, s.N*s.C), randn(r, s.OC*s.C), randn(r, s.OC)
		scaleBy(w, 1/math.Sqrt(float64(s.C)))
		want := nan(rb, bf, s.N*s.OC)
		rb.MatmulForward(want, on(rb, bf, inp), on(rb, bf, w), on(rb, bf, bias), s.N, s.C, s.OC)
		got := nan(b, bf, s.N*s.OC)
		b.MatmulForward(got, on(b, bf, inp), on(b, bf, w), on(b, bf, bias), s.N, s.C, s.OC)
		normErr(t, fmt.Sprintf("matmul forward N%d C%d OC%d", s.N, s.C, s.OC), kernels.DownloadFloat32(b, got), kernels.ReadFloat32(want), 1e-2)
	}
	for _, s := range []struct{ B, T, C, NH int }{{2, 256, 768, 12}, {1, 1024, 768, 12}, {3, 17, 20, 5}} {
		qkv := randn(r, s.B*s.T*3*s.C)
		wantOut, wantLse := nan(rb, bf, s.B*s.T*s.C), nan(rb, kernels.Float32, s.B*s.NH*s.T)
		rb.AttentionForward(wantOut, wantLse, on(rb, bf, qkv), s.B, s.T, s.C, s.NH)
		out, lse := nan(b, bf, s.B*s.T*s.C), nan(b, kernels.Float32, s.B*s.NH*s.T)
		b.AttentionForward(out, lse, on(b, bf, qkv), s.B, s.T, s.C, s.NH)
		name := fmt.Sprintf("attention B%d T%d C%d NH%d", s.B, s.T, s.C, s.NH)
		normErr(t, name+" out", kernels.DownloadFloat32(b, out), kernels.ReadFloat32(wantOut), 1e-2)
		normErr(t, name+" lse", kernels.DownloadFloat32(b, lse), kernels.ReadFloat32(wantLse), 1e-3)
	}
}

func scaleBy(x []float32, s float64) {
	for i := range x {
		x[i] = float32(float64(x[i]) * s)
	}
}

// normErr checks ‖got − want‖/‖want‖ ≤ tol and that got has no NaN.
func normErr(t *testing.T, name string, got, want []float32, tol float64) {
	t.Helper()
	var d2, w2 float64
	for i := range want {
		if math.IsNaN(float64(got[i])) {
			t.Errorf("%s: element %d is NaN (unwritten or overflow)", name, i)
			return
		}
		d := float64(got[i]) - float64(want[i])
		d2 += d * d
		w2 += float64(want[i]) * float64(want[i])
	}
	e := math.Sqrt(d2 / w2)
	t.Logf("%s: relative error %.3g", name, e)
	if !(e <= tol) {
		t.Errorf("%s: relative error %.3g > %.3g", name, e, tol)
	}
}

// TestSimVsGPU: the simulator and the GPU agree on every op, bit for bit where
// the op's order of operations is fixed, within the suite's float32 tolerance
// where it is not (cuBLAS's summation order, the hardware's approximate
// exp2). tools/gpu/verify.sh runs it and records the per-op figures.
func TestSimVsGPU(t *testing.T) {
	gpu := openOrSkip(t, FP32)
	s := openSim(t, FP32, SimOptions{Seed: 1})
	kerneltest.Agree(t, gpu, s, kerneltest.Tolerance)
}
