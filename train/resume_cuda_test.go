package train

import (
	"os"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/cuda"
)

// TestResumeBitIdenticalCUDA is TestResumeBitIdentical on the CUDA backend in
// mixed precision (bfloat16, what --device cuda runs by default): straight,
// and interrupted then resumed, to the same metrics and the same weights and
// AdamW state bit for bit, as the kernels' fixed reduction orders and cuBLAS's
// fixed order for a shape on one GPU promise. "sim" runs on the simulated GPU
// (every CI run); "gpu" on the machine's GPU 0 and skips without one (the GPU
// check runs it: tools/gpu/check.sh's train-tests stage).
func TestResumeBitIdenticalCUDA(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func() cuda.Options
	}{
		// One seed: the seed also fixes the errors of the approximate
		// instructions, which on one GPU are one function. Each launch's block
		// and warp order is drawn anew all the same.
		{"sim", func() cuda.Options { return cuda.Options{Sim: &cuda.SimOptions{Seed: 1}} }},
		{"gpu", func() cuda.Options { return cuda.Options{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "sim" && testing.Short() {
				t.Skip("three runs on the simulator; make test runs them")
			}
			if tc.name == "gpu" {
				be, err := cuda.Open(tc.opts())
				if err != nil {
					if os.Getenv("GPTKIT_REQUIRE_GPU") != "" { // the GPU check: a skip would hide a broken load
						t.Fatalf("GPTKIT_REQUIRE_GPU is set: %v", err)
					}
					t.Skipf("no GPU: %v", err)
				}
				be.Close()
			}
			open := func() kernels.Backend {
				be, err := cuda.Open(tc.opts())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { be.Close() })
				return be
			}
			resumeBitIdentical(t, func(c Config) Config {
				c.Dtype = "bfloat16"
				c.NEmbd = 32 // head size 16: the tensor-core (flash) attention, not the SIMT one
				return c
			}, open, open, open)
		})
	}
}
