package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoadCommittedPTX parses and decodes every module the CUDA backend embeds.
func TestLoadCommittedPTX(t *testing.T) {
	files, _ := filepath.Glob("../ptx/*.ptx")
	if len(files) == 0 {
		t.Fatal("no PTX in ../ptx")
	}
	dev := NewDevice(Config{Seed: 1})
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(filepath.Base(f), src)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		im, err := dev.Load(m)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		t.Logf("%s: %v", f, im.Kernels())
	}
}
