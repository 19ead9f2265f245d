package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestFallbackWarnsWithAGPU: --device auto falling back to the CPU on a machine with a
// GPU it cannot use (cuBLAS not on the library path, a driver too old) warns; it was
// the same INFO line as on a machine without a GPU, so a GPU node whose LD_LIBRARY_PATH
// lacked cuBLAS trained on the CPU with nothing but an information line to say so.
func TestFallbackWarnsWithAGPU(t *testing.T) {
	for _, tc := range []struct {
		err  error
		warn bool
	}{
		{fmt.Errorf("cuda: %w: library not found: libcublas.so.13; install cuBLAS", cuda.ErrNoCUBLAS), true},
		{fmt.Errorf("cuda: %w: the driver supports CUDA 11.4; update the NVIDIA driver", cuda.ErrDriverTooOld), true},
		{fmt.Errorf("cuda: load module attention.ptx: CUDA_ERROR_INVALID_PTX"), true},
		{fmt.Errorf("cuda: %w: cannot load the driver library; install the NVIDIA driver or use --device cpu", cuda.ErrNoDriver), false},
		{fmt.Errorf("cuda: %w: the driver sees no GPU; use --device cpu", cuda.ErrNoDevice), false},
	} {
		var buf bytes.Buffer
		logFallback(slog.New(slog.NewTextHandler(&buf, nil)), tc.err)
		if got := strings.Contains(buf.String(), "level=WARN"); got != tc.warn {
			t.Errorf("%v: warned %v, want %v: %s", tc.err, got, tc.warn, buf.String())
		}
		if !strings.Contains(buf.String(), "running on the CPU") {
			t.Errorf("%v: %s", tc.err, buf.String())
		}
	}
}

// TestSimMemorySizes: GPTKIT_SIM_MEMORY takes a size with a unit (8GiB, 500MB) as well
// as bytes; "8GiB" was refused ("want a number of bytes"). Nonsense is still refused.
func TestSimMemorySizes(t *testing.T) {
	for v, want := range map[string]uint64{"8589934592": 8 << 30, "8GiB": 8 << 30, "500MB": 500e6, "64kib": 64 << 10} {
		env := map[string]string{envSimMemory: v}
		so, err := simOptions(func(k string) string { return env[k] }, func(string) (string, bool) { return "", false })
		if err != nil || so.Memory != want {
			t.Errorf("%s=%s: %d %v, want %d", envSimMemory, v, so.Memory, err, want)
		}
	}
	for _, v := range []string{"0", "-1", "8G", "1.5GB", "lots"} {
		env := map[string]string{envSimMemory: v}
		if _, err := simOptions(func(k string) string { return env[k] }, func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "8GiB") {
			t.Errorf("%s=%s: %v, want an error showing a size", envSimMemory, v, err)
		}
	}
}

// TestHeadSizeTooLargeForGPU: a model whose head size (n_embd / n_head) is more than the
// GPU's attention kernels take (256) ends on cuda-sim with one line naming the head
// size and the way out, exit 1, before the data is opened; it was a panic with a
// stack dump at the first forward, then a line there.
func TestHeadSizeTooLargeForGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process")
	}
	data, _ := makeCharDataset(t)
	args := tinyArgs(data, filepath.Join(t.TempDir(), "run"), "2")
	for i := range args {
		if i > 0 && args[i-1] == "--device" {
			args[i] = "cuda-sim"
		}
		if i > 0 && args[i-1] == "--n-head" {
			args[i] = "1"
		}
		if i > 0 && args[i-1] == "--n-embd" {
			args[i] = "320"
		}
	}
	r := trainProc(t, time.Minute, nil, args...)
	if r.code != 1 || strings.Contains(r.stderr, "goroutine") || !strings.Contains(r.stderr, "head size 320") || !strings.Contains(r.stderr, "n_head") {
		t.Fatalf("exit %d, want 1 and one line naming the head size:\n%s", r.code, r.stderr)
	}
	// Refused in the setup, before the data is opened and the weights made (as
	// sample and score refuse it): it was refused at the first step.
	if strings.Contains(r.stderr, "loader:") || strings.Contains(r.stderr, "msg=model") {
		t.Errorf("refused after the setup had opened the data or made the model:\n%s", r.stderr)
	}
}

// TestSampleScoreHeadSizeTooLargeForGPU: sample and score of a model whose head size is
// more than the GPU's attention kernels take end on cuda-sim with one line naming the
// head size and --device cpu, exit 1, as training does; they were a panic with a stack
// dump, exit 2.
func TestSampleScoreHeadSizeTooLargeForGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process")
	}
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	args := tinyArgs(data, out, "2")
	for i := range args {
		if i > 0 && args[i-1] == "--n-head" {
			args[i] = "1"
		}
		if i > 0 && args[i-1] == "--n-embd" {
			args[i] = "320"
		}
	}
	if code, _, stderr := runTrain(t, args...); code != 0 {
		t.Fatalf("train on ref: exit %d: %s", code, stderr)
	}
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte("[[1,2,3,4]]"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{
		{"sample", "--ckpt", out, "--prompt", "to be", "--max-new-tokens", "2", "--device", "cuda-sim"},
		{"score", "--ckpt", out, "--tokens", tokens, "--device", "cuda-sim"},
	} {
		r := trainProc(t, time.Minute, nil, cmd...)
		if r.code != 1 || strings.Contains(r.stderr, "goroutine") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 ||
			!strings.Contains(r.stderr, "head size 320") || !strings.Contains(r.stderr, "--device cpu") || strings.Contains(r.stderr, "more heads") {
			t.Errorf("%s: exit %d, want 1 and one line naming the head size and --device cpu (a trained model cannot take more heads):\n%s", cmd[0], r.code, r.stderr)
		}
	}
}

// TestAutoBadPrecisionWithoutGPU: with GPTKIT_CUDA_PRECISION set to no precision,
// --device auto on a machine without a GPU warned "a GPU is here but cannot be used",
// naming the variable (cuda.Open refuses the precision before it looks for a GPU);
// now it says there is no usable GPU, at Info, as without the variable.
func TestAutoBadPrecisionWithoutGPU(t *testing.T) {
	if be, err := cuda.Open(cuda.Options{}); err == nil {
		be.Close()
		t.Skip("a GPU is here")
	}
	t.Setenv(envPrecision, "BF16")
	var buf bytes.Buffer
	if _, err := openBackendOn("auto", 1, 0, slog.New(slog.NewTextHandler(&buf, nil))); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); strings.Contains(out, "a GPU is here") || !strings.Contains(out, "no usable GPU") {
		t.Errorf("log:\n%s\nwant no usable GPU, not a GPU that is here", out)
	}
}
