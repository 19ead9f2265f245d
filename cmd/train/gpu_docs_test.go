package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gptkit/train"
)

// gpuDocs are the pages a user reads to train on GPUs.
var gpuDocs = []string{"README.md", "docs/gpu.md", "docs/cuda-sim.md", "docs/mixed-precision.md", "docs/kernels.md"}

// TestGPUDocsFlagValues: every --device and --dtype value the GPU pages show is one
// train takes (gpu.md wrote `--dtype bf16`/`fp16`, which train refuses: "dtype
// \"bf16\": want auto, float32, bfloat16 or float16").
func TestGPUDocsFlagValues(t *testing.T) {
	flag := regexp.MustCompile("--(device|dtype)[ =]([a-z][a-z0-9_-]*)")
	seen := 0
	for _, name := range gpuDocs {
		b, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range flag.FindAllStringSubmatch(line, -1) {
				seen++
				c := train.Default()
				c.Data = "data/shakespeare"
				if m[1] == "device" {
					c.Device = m[2]
				} else {
					c.Dtype = m[2]
				}
				if err := c.Validate(); err != nil && strings.Contains(err.Error(), m[1]+" ") {
					t.Errorf("%s:%d: %s: %v", name, i+1, m[0], err)
				}
			}
		}
	}
	if seen < 10 {
		t.Errorf("only %d --device and --dtype values in %v: did the pages move?", seen, gpuDocs)
	}
}
