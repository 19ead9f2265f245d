package cuda

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPTXUpToDate regenerates the PTX with nvcc, where nvcc is installed, and
// fails if the committed files differ (make check-ptx runs the same check). CI
// machines without nvcc skip it: the committed PTX is what every build embeds.
func TestPTXUpToDate(t *testing.T) {
	nvcc, err := exec.LookPath("nvcc")
	if err != nil {
		t.Skip("no nvcc: the committed PTX is not checked against the sources here")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	cu, err := readDirNames(".", ".cu")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range cu {
		out := filepath.Join(dir, f[:len(f)-len(".cu")]+".ptx")
		cmd := exec.Command(nvcc, append(nvccFlags(), "-o", out, f)...)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nvcc %s: %v\n%s", f, err, msg)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("ptx", filepath.Base(out)))
		if err != nil {
			t.Fatalf("%v: run make ptx", err)
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("ptx/%s differs from what nvcc makes of %s: run make ptx and commit", filepath.Base(out), f)
		}
	}
}

// nvccFlags are the PTX build's flags; the Makefile's ptx target uses the same.
func nvccFlags() []string {
	return []string{"-ptx", "-arch=compute_80", "-fmad=false", "-O3"}
}
