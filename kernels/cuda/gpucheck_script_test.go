package cuda

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGPUCheckWithoutGPU: tools/gpu/check.sh run without --dry on a machine with no
// GPU (no nvidia-smi, no libcuda) stops after looking for the device and the
// libraries, saying that there is no GPU and what to run instead (make
// gpu-check-dry), last, and writes its report. It ran every stage, each failing (and
// gpt2-ours and ptx-ab printed "ok": the benchmark skips without a GPU), then waited
// minutes for the CPU half of the loss curves, and never said why.
func TestGPUCheckWithoutGPU(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("nvidia-smi is here")
	}
	if _, err := Open(Options{}); !errors.Is(err, ErrNoDriver) {
		t.Skipf("the driver is here (%v)", err)
	}
	dir := t.TempDir()
	pkg, out := filepath.Join(dir, "pkg"), filepath.Join(dir, "out")
	if err := os.MkdirAll(filepath.Join(pkg, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// a stand-in for the build's trainer: any stage that ran it would fail at once
	if err := os.WriteFile(filepath.Join(pkg, "bin", "train"), []byte("#!/bin/sh\necho stub train \"$@\"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "tools", "gpu", "check.sh"), "--pkg", pkg)
	cmd.Env = append(os.Environ(), "OUT="+out, "TMPDIR="+dir)
	b, err := cmd.CombinedOutput()
	output := string(b)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("check.sh without a GPU: %v, want exit status 1:\n%s", err, output)
	}
	lines := strings.Split(strings.TrimSpace(output), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "no GPU here") || !strings.Contains(last, "make gpu-check-dry") {
		t.Errorf("the last line does not say there is no GPU and to run make gpu-check-dry: %q\n%s", last, output)
	}
	for _, stage := range []string{"== conformance", "== shakespeare", "stub train"} {
		if strings.Contains(output, stage) {
			t.Errorf("a stage ran (%q):\n%s", stage, output)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "gpu-check.md")); err != nil {
		t.Errorf("no report: %v", err)
	}
}
