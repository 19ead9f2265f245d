package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gptkit/internal/testfiles"
	"gptkit/kernels"
	"gptkit/train"
)

// babyArgs are configs/shakespeare-char.yaml for 20 steps (an evaluation of a
// single batch at the end, no checkpoint).
func babyArgs(data, out, device string) []string {
	return []string{"--config", filepath.Join("..", "..", "configs", "shakespeare-char.yaml"), "--data", data, "--out", out,
		"--device", device, "--max-steps", "20", "--eval-every", "0", "--eval-steps", "1", "--checkpoint-every", "0",
		"--cache-dir", out + "-cache"}
}

// TestCudaSim: --device cuda-sim (the CUDA backend's kernels, committed PTX
// and all, on the simulated GPU) trains the baby config on tiny Shakespeare for
// 20 steps with losses within 1e-3 (relative) of --device cpu; and two ranks on
// cuda-sim, reducing through the simulated NCCL whose unique id travels through
// the rendezvous store, train like one rank with their global batch.
func TestCudaSim(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on the simulated GPU (about three minutes of CPU)")
	}
	text := testfiles.Read(t, "corpora/tinyshakespeare.txt")
	data, _ := makeCharDatasetOf(t, string(text))
	dir := t.TempDir()
	cpuOut, simOut, dpOut := filepath.Join(dir, "cpu"), filepath.Join(dir, "sim"), filepath.Join(dir, "sim-dp")
	if code, _, stderr := runTrain(t, babyArgs(data, cpuOut, "cpu")...); code != 0 {
		t.Fatalf("cpu: %s", stderr)
	}
	code, stdout, stderr := runTrain(t, babyArgs(data, simOut, "cuda-sim")...)
	if code != 0 {
		t.Fatalf("cuda-sim: %s", stderr)
	}
	if !strings.Contains(stderr, "cuda-sim (simulated sm_80)") {
		t.Errorf("the run does not say it is on the simulated GPU:\n%s", stderr)
	}
	if s := parseSummary(t, stdout); s.Step != 20 {
		t.Errorf("summary %+v", s)
	}
	cpu, sim := readMetrics(t, cpuOut), readMetrics(t, simOut)
	closeLosses(t, sim, cpu, 1e-3)
	// The device's allocations are in the metrics and the step lines, the host's not.
	if m := sim[len(sim)-1].MemoryMetrics; m.DeviceBytes < m.ParamsBytes+m.GradsBytes+m.OptimizerBytes || cpu[0].DeviceBytes != 0 {
		t.Errorf("memory: cuda-sim %+v, cpu %+v", m, cpu[0].MemoryMetrics)
	}
	if !strings.Contains(stderr, " mem_device=") {
		t.Errorf("the cuda-sim step lines lack mem_device:\n%s", stderr)
	}
	t.Logf("step 20: cpu loss %.6f, cuda-sim %.6f", cpu[len(cpu)-1].Loss, sim[len(sim)-1].Loss)

	// 2 ranks × batch 6 = 1 rank × batch 12, over the simulated NCCL
	args := append(babyArgs(data, dpOut, "cuda-sim"), "--batch-size", "6", "--nproc-per-node", "2", "--master-port", freePort(t))
	r := trainProc(t, 15*time.Minute, nil, args...)
	if r.code != 0 {
		t.Fatalf("2 ranks: exit %d:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"[rank 0] ", "[rank 1] ", "via=\"simulated nccl over the ring\""} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	closeLosses(t, readMetrics(t, dpOut), sim, 1e-5)
}

// TestCudaSimBFloat16: the mixed-precision path on the simulated GPU (bf16
// weights copy and activations, the tensor-core FlashAttention kernels, bf16
// cuBLAS GEMMs, AdamW writing the bf16 copy) trains like the CPU backend's
// bfloat16, which rounds where the GPU stores: 10 steps of the baby config,
// losses within 0.2% (the two differ in summation order and in where the
// attention's blocks round).
func TestCudaSimBFloat16(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on the simulated GPU")
	}
	text := testfiles.Read(t, "corpora/tinyshakespeare.txt")
	data, _ := makeCharDatasetOf(t, string(text))
	dir := t.TempDir()
	var losses [2][]train.Metrics
	for i, device := range []string{"cpu", "cuda-sim"} {
		out := filepath.Join(dir, device)
		args := append(babyArgs(data, out, device), "--dtype", "bfloat16", "--max-steps", "10")
		code, _, stderr := runTrain(t, args...)
		if code != 0 {
			t.Fatalf("%s: %s", device, stderr)
		}
		if !strings.Contains(stderr, "dtype=bfloat16") {
			t.Errorf("%s: the run does not log its dtype:\n%s", device, stderr)
		}
		losses[i] = readMetrics(t, out)
	}
	closeLosses(t, losses[1], losses[0], 2e-3)
	t.Logf("step 10: cpu bfloat16 loss %.6f, cuda-sim %.6f", losses[0][9].Loss, losses[1][9].Loss)
}

// A device error on the simulated GPU (here: its memory is too small) ends the
// run with one line saying what was asked and what is free, not a stack dump.
func TestCudaSimErrorIsOneLine(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	t.Setenv(envSimMemory, "65536")
	code, _, stderr := runTrain(t, append(tinyArgs(data, out, "2"), "--device", "cuda-sim")...)
	if code == 0 {
		t.Fatalf("trained in 1 MiB of simulated GPU memory")
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	// The trainer's estimate refuses the run before allocating (train/memory.go); an
	// allocation the estimate missed would end in the backend's out-of-memory line.
	refused := strings.Contains(last, "available (free on the device (cuda(cuda-sim") ||
		strings.Contains(last, "out of memory on cuda-sim (simulated sm_80) allocating")
	if !refused || strings.Contains(stderr, "goroutine ") {
		t.Errorf("stderr:\n%s", stderr)
	}

	// In bfloat16 the refusal names the GEMMs the run would have run: it said
	// "fp32 matmuls", cuda-sim's precision for float32 operands, as no bfloat16
	// tensor existed yet.
	code, _, stderr = runTrain(t, append(tinyArgs(data, out, "2"), "--device", "cuda-sim", "--dtype", "bfloat16")...)
	if code == 0 || !strings.Contains(stderr, "(simulated sm_80), bf16 matmuls, float32 ones in fp32)") {
		t.Errorf("a bfloat16 run in 64 KiB: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestCudaSimBadPrecisionNamesEnv: a bad $GPTKIT_CUDA_PRECISION is refused naming the
// variable and its default. It was `cuda: precision "BF16": want bf16, tf32 or fp32`,
// which did not say where the value came from.
func TestCudaSimBadPrecisionNamesEnv(t *testing.T) {
	data, _ := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	t.Setenv(envPrecision, "BF16")
	code, _, stderr := runTrain(t, append(tinyArgs(data, out, "2"), "--device", "cuda-sim")...)
	if code == 0 || !strings.Contains(stderr, `--device cuda-sim: GPTKIT_CUDA_PRECISION="BF16": want bf16, tf32 or fp32, or unset it for the default (fp32 on cuda-sim)`) {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestCudaSimZeroFitsEstimate: two ranks under ZeRO-1 on simulated GPUs of exactly the
// memory the pre-flight estimates train and save their checkpoint. The estimate left
// out the device staging NCCL gives one chunk of the AdamW state that a checkpoint
// gathers: such a run passed the pre-flight, trained, and ended at its first
// checkpoint with "gather the AdamW state's exp_avg...: out of memory on cuda-sim".
func TestCudaSimZeroFitsEstimate(t *testing.T) {
	data, tok := makeCharDataset(t)
	out := filepath.Join(t.TempDir(), "run")
	cfg := train.Default()
	cfg.NLayer, cfg.NHead, cfg.NEmbd, cfg.BlockSize, cfg.BatchSize, cfg.Zero = 1, 2, 16, 16, 4, 1
	est := train.EstimateMemory(cfg, tok.VocabSize(), 2, kernels.Float32)
	env := []string{envSimMemory + "=" + strconv.FormatInt(int64(math.Ceil(est.Total())), 10)}
	args := append(tinyArgs(data, out, "2"), "--device", "cuda-sim", "--zero", "1", "--nproc-per-node", "2", "--master-port", freePort(t))
	r := trainProc(t, 5*time.Minute, env, args...)
	if r.code != 0 || !strings.Contains(r.stdout, `"checkpoint":`) {
		t.Fatalf("in %s of simulated memory (the estimate, %s): exit %d, stderr:\n%s", env[0], est, r.code, r.stderr)
	}
}

// TestCudaSimFitsEstimate: one rank on a simulated GPU of exactly the memory the
// pre-flight estimates trains (in each dtype, with and without dropout and bias).
// The estimate left out the trainer's step statistics (the gradient norm's
// partial sums) and the backend's per-op scratch (the column sums of the bias and
// LayerNorm gradients, attention's and the gradient norm's partials, the
// embedding's buckets): such a run passed the pre-flight and failed on its first
// step, "out of memory on cuda-sim".
func TestCudaSimFitsEstimate(t *testing.T) {
	data, tok := makeCharDataset(t)
	for _, tc := range []struct {
		dtype   string
		dropout string
		bias    bool
	}{{"float32", "0", true}, {"float32", "0.1", false}, {"bfloat16", "0", true}} {
		t.Run(tc.dtype+"-dropout"+tc.dropout+"-bias"+strconv.FormatBool(tc.bias), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			cfg := train.Default()
			cfg.NLayer, cfg.NHead, cfg.NEmbd, cfg.BlockSize, cfg.BatchSize, cfg.Bias = 2, 8, 64, 16, 4, tc.bias
			cfg.Dropout, _ = strconv.ParseFloat(tc.dropout, 64)
			dt := kernels.Float32
			if tc.dtype == "bfloat16" {
				dt = kernels.BFloat16
			}
			est := train.EstimateMemory(cfg, tok.VocabSize(), 1, dt)
			t.Setenv(envSimMemory, strconv.FormatInt(int64(math.Ceil(est.Total())), 10))
			code, stdout, stderr := runTrain(t, append(tinyArgs(data, out, "2"), "--device", "cuda-sim", "--dtype", tc.dtype,
				"--dropout", tc.dropout, "--bias="+strconv.FormatBool(tc.bias), "--n-layer", "2", "--n-head", "8", "--n-embd", "64")...)
			if code != 0 || !strings.Contains(stdout, `"step":2`) {
				t.Fatalf("in %s bytes of simulated memory (the estimate, %s): exit %d, stderr:\n%s", os.Getenv(envSimMemory), est, code, stderr)
			}
		})
	}
}
