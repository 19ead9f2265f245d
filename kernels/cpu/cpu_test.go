package cpu_test

import (
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/kerneltest"
)

func TestConformance(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(cpu.New(threads).Name(), func(t *testing.T) {
			kerneltest.Conformance(t, func() kernels.Backend { return cpu.New(threads) })
		})
	}
}

// TestDeterministic: results are bit-identical whatever the thread count.
func TestDeterministic(t *testing.T) {
	kerneltest.Deterministic(t, cpu.New(1), cpu.New(2), cpu.New(3), cpu.New(7))
}
