package train

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/kernels/cpu"
	"gptkit/kernels/ref"
	"gptkit/train/tensorboard/tbtest"
)

// TestFLOPsPerToken: nanoGPT's estimate_mfu for GPT-2 124M (N = 124M non-embedding
// parameters with the 50304-row wte, L 12, H 12, Q 64, T 1024).
func TestFLOPsPerToken(t *testing.T) {
	def := Default()
	mc := def.Model(50257)
	n := float64(mc.NumParams() - 1024*768)
	want := 6*n + 12*12*12*64*1024
	if got := mc.FLOPsPerToken(); got != want || math.Abs(n-124.0e6) > 0.5e6 {
		t.Errorf("FLOPsPerToken = %g with N = %g, want %g with N about 124M", got, n, want)
	}
}

// TestMetricsThroughputAndTensorBoard: every step's metrics carry samples/s, tokens/s,
// TFLOPS per device and MFU (the CPU backend knows its peak; ref does not) and the
// parameter and activation memory, and the event file in tensorboard_dir holds the same scalars, read by an independent decoder.
func TestMetricsThroughputAndTensorBoard(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.EvalEvery = 6, 3
	cfg.TensorboardDir = filepath.Join(t.TempDir(), "tb")
	var log bytes.Buffer
	if _, err := Run(context.Background(), cfg, cpu.New(1), Single{}, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	// The step lines carry the same figures.
	// (The model line gives the peak the MFU divides by.)
	for _, want := range []string{"msg=step step=6 ", " samples_per_s=", " tflops=", " mfu=", " tokens_per_s=", " mem_params=", " mem_activations=", " peak_tflops="} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log has no %q:\n%s", want, log.String())
		}
	}
	ms := readMetricsFile(t, cfg.Out)
	fpt := cfg.Model(20).FLOPsPerToken()
	for _, m := range ms {
		T := float64(cfg.BlockSize)
		if m.SamplesPerS <= 0 || math.Abs(m.TokensPerS-m.SamplesPerS*T) > 1e-6*m.TokensPerS ||
			math.Abs(m.TFLOPS-m.TokensPerS*fpt/1e12) > 1e-9*m.TFLOPS || m.MFU <= 0 || m.MFU > 10 {
			t.Errorf("step %d: %+v", m.Step, m)
		}
		// float32 weights: as many bytes as their gradients, AdamW twice that; no device.
		if mm := m.MemoryMetrics; mm.ParamsBytes <= 0 || mm.GradsBytes != mm.ParamsBytes || mm.OptimizerBytes != 2*mm.ParamsBytes ||
			mm.ActivationsBytes <= 0 || mm.DeviceBytes != 0 || mm != ms[0].MemoryMetrics {
			t.Errorf("step %d memory: %+v", m.Step, mm)
		}
	}
	files, _ := filepath.Glob(filepath.Join(cfg.TensorboardDir, "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("event files %v, want one in %s", files, cfg.TensorboardDir)
	}
	events, err := tbtest.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2+len(ms) || events[0].FileVersion != "brain.Event:2" || events[1].SessionLog != 1 || events[1].Step != 1 {
		t.Fatalf("%d events (%d steps), first %+v, second %+v", len(events), len(ms), events[0], events[1])
	}
	for i, m := range ms {
		e := events[2+i]
		want := map[string]float64{"train/loss": m.Loss, "train/lr": m.LR, "train/grad_norm": m.GradNorm, "train/tokens_per_s": m.TokensPerS,
			"train/samples_per_s": m.SamplesPerS, "train/tflops_per_device": m.TFLOPS, "train/mfu": m.MFU,
			"memory/params_bytes": float64(m.ParamsBytes), "memory/activations_bytes": float64(m.ActivationsBytes)}
		if m.ValLoss != nil {
			want["val/loss"] = *m.ValLoss
		}
		if e.Step != int64(m.Step) || len(e.Scalars) != len(want) {
			t.Errorf("event %d: step %d, %v; want step %d, %v", i, e.Step, e.Scalars, m.Step, want)
		}
		for tag, v := range want {
			if got, ok := e.Scalars[tag]; !ok || got != float32(v) {
				t.Errorf("step %d %s = %v, want %v", m.Step, tag, got, float32(v))
			}
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, MetricsName)); err != nil {
		t.Error(err)
	}

	// The reference backend knows no peak: no MFU, in the metrics or the events.
	cfg.Out, cfg.TensorboardDir = t.TempDir(), ""
	if _, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(cfg.Out, MetricsName))
	if strings.Contains(string(data), "mfu") || !strings.Contains(string(data), `"tflops"`) {
		t.Errorf("metrics without a peak:\n%s", data)
	}
	if files, _ := filepath.Glob(filepath.Join(cfg.Out, "events.out.tfevents.*")); len(files) != 1 {
		t.Errorf("event files in the run directory: %v", files)
	}
}

// TestETAText: the time left in a step log line, readable at any size.
func TestETAText(t *testing.T) {
	for secs, want := range map[float64]string{42.4: "42s", 200: "3m20s", 5*3600 + 12*60 + 10: "5h12m", 63_115_200: "730.5d"} {
		if got := etaText(secs); got != want {
			t.Errorf("etaText(%v) = %q, want %q", secs, got, want)
		}
	}
}

// TestOutputDirsMadeDurably: tensorboard_dir and an export's directory are made as the
// checkpoint directories are (checkpoint.MkdirAll: the parent of each directory made
// is fsynced), so a crash after them cannot take the directory and its files with it
// (a plain os.MkdirAll made them).
func TestOutputDirsMadeDurably(t *testing.T) {
	var made []string
	old := mkdirAll
	t.Cleanup(func() { mkdirAll = old })
	mkdirAll = func(dir string) error {
		made = append(made, filepath.Clean(dir))
		return old(dir)
	}
	parent := t.TempDir()
	tb := filepath.Join(parent, "logs", "tb")
	tr := &Trainer{cfg: Config{TensorboardDir: tb}}
	if err := tr.openTensorBoard(); err != nil {
		t.Fatal(err)
	}
	if err := tr.tb.Close(); err != nil {
		t.Fatal(err)
	}
	hf := filepath.Join(parent, "export", "hf")
	if err := ExportHF(hf, tinyModel(t, ref.New(), true, 1), nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{tb, hf} {
		if !slices.Contains(made, want) {
			t.Errorf("%s was not made by checkpoint.MkdirAll (it made %v)", want, made)
		}
	}
}
