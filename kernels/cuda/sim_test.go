package cuda

import (
	"testing"

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

// TestSimConformance runs the kernel conformance suite on the simulated GPU:
// the committed PTX of every kernel, instruction by instruction, against the
// reference backend, with the suite's float32 tolerances (fp32 matmuls).
func TestSimConformance(t *testing.T) {
	b := openSim(t, FP32, SimOptions{Seed: 1})
	kerneltest.Conformance(t, func() kernels.Backend { return b })
}

// TestSimDeterministic: with random block and warp orders every launch, the
// kernels still give bit-identical results run after run (the backend's
// reductions have a fixed order).
func TestSimDeterministic(t *testing.T) {
	b := openSim(t, FP32, SimOptions{Seed: 2})
	kerneltest.Deterministic(t, b, b)
}

// TestSimAgreesWithItself checks Agree's plumbing without a GPU: two simulated
// GPUs with different seeds (schedules) give bit-identical results, but for the
// ops whose approximations differ with the seed.
func TestSimAgreesWithItself(t *testing.T) {
	a := openSim(t, FP32, SimOptions{Seed: 1})
	b := openSim(t, FP32, SimOptions{Seed: 2})
	kerneltest.Agree(t, a, b, kerneltest.Tolerance)
}
