package cuda

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"gptkit/kernels"
	"gptkit/kernels/kerneltest"
)

// openSim opens the backend on a simulated GPU.
func openSim(t testing.TB, precision string, o SimOptions) *Backend {
	t.Helper()
	if o.Memory == 0 {
		o.Memory = 4 << 30
	}
	b, err := Open(Options{Precision: precision, Sim: &o})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// managed allocates n float32s of managed memory on b's GPU, which the host
// addresses at the device address: the tests below write operands and read
// results in place (the backend itself never allocates managed memory). It
// returns the memory as a Go slice and as a tensor of b; t's cleanup frees it.
func managed(t testing.TB, b *Backend, n int) ([]float32, kernels.Tensor) {
	t.Helper()
	p, err := b.drv.memAllocManaged(4 * max(n, 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.drv.memFree(devicePtr(p)) }) // after a fault the context is gone: no error to check
	x := unsafe.Slice((*float32)(p), n)
	return x, kernels.NewTensor(kernels.NewBuffer(b, uintptr(p), nil, 4*n, "test operand"), kernels.Float32, n)
}

// hostBuf is managed's slice alone.
func hostBuf(t testing.TB, b *Backend, n int) []float32 {
	x, _ := managed(t, b, n)
	return x
}

// TestSimConformance runs the kernel conformance suite on the simulated GPU:
// the committed PTX of every kernel, instruction by instruction, against the
// reference backend, with the suite's float32 tolerances (fp32 matmuls) for
// float32 activations and its 16-bit ones for bfloat16 and float16. Every
// kernel of the PTX runs, but for those of the path without cuBLASLt
// epilogues, which TestSimWithoutEpilogues runs.
func TestSimConformance(t *testing.T) {
	b := openSim(t, FP32, SimOptions{Seed: 1})
	kerneltest.Conformance(t, func() kernels.Backend { return b })
	if never := unlaunched(b, func(name string) bool { return !epilogueFallback(name) }); len(never) > 0 {
		t.Errorf("the suite never launched %v", never)
	}
}

// TestSimWithoutEpilogues: the suite again where cuBLASLt has refused its
// epilogues (an old cuBLAS), so the bias and GELU run as elementwise kernels.
func TestSimWithoutEpilogues(t *testing.T) {
	skipShort(t)
	b := openSim(t, FP32, SimOptions{Seed: 4, RefuseEpilogues: true})
	kerneltest.Conformance(t, func() kernels.Backend { return b })
	if never := unlaunched(b, epilogueFallback); len(never) > 0 {
		t.Errorf("the suite never launched %v", never)
	}
}

// skipShort skips a second run of the suite under -short (make race: the
// simulator under the race detector is slow, and TestSimConformance has run
// every kernel).
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("another run of the conformance suite on the simulator")
	}
}

// epilogueFallback reports whether kernel name does what a cuBLASLt epilogue
// does otherwise.
func epilogueFallback(name string) bool {
	for _, p := range []string{"bias_fill_", "gelu_forward_", "gelu_backward_inplace_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// unlaunched lists the kernels of b's PTX that pick selects and that never ran.
func unlaunched(b *Backend, pick func(string) bool) []string {
	var never []string
	for name := range b.fns {
		if pick(name) && b.sim.launches[name] == 0 {
			never = append(never, name)
		}
	}
	slices.Sort(never)
	return never
}

// TestSimDeterministic: with random block and warp orders every launch, the
// kernels still give bit-identical results run after run (the backend's
// reductions have a fixed order).
func TestSimDeterministic(t *testing.T) {
	skipShort(t)
	b := openSim(t, FP32, SimOptions{Seed: 2})
	kerneltest.Deterministic(t, b, b)
}

// TestSimAgreesWithItself checks Agree's plumbing without a GPU: two simulated
// GPUs with different seeds (schedules) give bit-identical results, but for the
// ops whose approximations differ with the seed.
func TestSimAgreesWithItself(t *testing.T) {
	skipShort(t)
	a := openSim(t, FP32, SimOptions{Seed: 1})
	b := openSim(t, FP32, SimOptions{Seed: 2})
	kerneltest.Agree(t, a, b, kerneltest.Tolerance)
}
