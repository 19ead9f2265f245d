package main

import (
	"strings"
	"testing"

	"gptkit/kernels/cuda"
)

// TestFallbackReason: --device auto's log line says why it runs on the CPU without
// the reason's own advice to use --device cpu (what auto does). The commonest
// reason, no driver, ends " or use --device cpu" and kept it.
func TestFallbackReason(t *testing.T) {
	none := ""
	for name, o := range map[string]cuda.Options{
		"no driver": {DriverLibs: []string{"libcuda-gptkit-test-none.so.1"}},
		"no device": {Sim: &cuda.SimOptions{GPUs: 2, VisibleDevices: &none}},
	} {
		_, err := cuda.Open(o)
		if err == nil {
			t.Fatalf("%s: opened", name)
		}
		if !strings.Contains(err.Error(), "--device cpu") {
			t.Fatalf("%s: %v: the reason gives no advice to leave out", name, err)
		}
		if got := fallbackReason(err); strings.Contains(got, "--device cpu") || !strings.HasPrefix(err.Error(), got) || got == "" {
			t.Errorf("%s: reason %q (from %q)", name, got, err)
		}
	}
}
