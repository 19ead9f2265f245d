package train

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gptkit/kernels/ref"
	"gptkit/shards"
	"gptkit/storage"
)

// TestOpenDataHint: the hint to set eval_steps 0 comes only with the error of a data
// set that has no valid split, not with every data-open error (issue 15, item 13).
func TestOpenDataHint(t *testing.T) {
	const hint = "set eval_steps 0"
	missing := tinyConfig(t, filepath.Join(t.TempDir(), "nowhere"))
	_, err := Run(context.Background(), missing, ref.New(), Single{}, testLogger(t))
	if err == nil || strings.Contains(err.Error(), hint) {
		t.Errorf("missing data: %v, want an error without the eval_steps hint", err)
	}
	noValid := tinyConfig(t, writeTrainOnlyDataset(t, t.TempDir()))
	_, err = Run(context.Background(), noValid, ref.New(), Single{}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), hint) {
		t.Errorf("no valid split: %v, want the eval_steps hint", err)
	}
}

// writeTrainOnlyDataset writes a dataset whose manifest labels its one shard "train".
func writeTrainOnlyDataset(t testing.TB, dir string) string {
	t.Helper()
	writeTinyDataset(t, dir, patternDoc(3000, 20, 1), patternDoc(100, 20, 2), 20, "tiny-fp-1")
	m := readManifestFile(t, dir)
	m.Shards = m.Shards[:1]
	m.Documents, m.Tokens = m.Shards[0].Documents, m.Shards[0].Tokens
	writeManifestFile(t, dir, m)
	return dir
}

func readManifestFile(t testing.TB, dir string) *shards.Manifest {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := shards.ReadManifest(context.Background(), st, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeManifestFile replaces dir's manifest with m.
func writeManifestFile(t testing.TB, dir string, m *shards.Manifest) {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := shards.WriteManifest(context.Background(), st, "", m); err != nil {
		t.Fatal(err)
	}
}

// TestResumeSkipWarns: a newest checkpoint with a truncated optimizer file, or a garbage
// checkpoint.json, is skipped for an older one with a warning that names it and says why
// (issue 15, item 9).
func TestResumeSkipWarns(t *testing.T) {
	data := tinyDataset(t)
	for _, tc := range []struct {
		name, why string
		damage    func(dir string) error
	}{
		{"truncated optimizer", OptimizerFile, func(dir string) error {
			return os.Truncate(filepath.Join(dir, OptimizerFile), 10)
		}},
		{"garbage checkpoint.json", "checkpoint.json", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "checkpoint.json"), []byte("{garbage"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t, data)
			cfg.MaxSteps, cfg.LRDecaySteps, cfg.CheckpointEvery, cfg.EvalEvery = 4, 4, 2, 0
			if _, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t)); err != nil {
				t.Fatal(err)
			}
			newest := filepath.Join(cfg.Out, CheckpointsDir, "step_00000004")
			if err := tc.damage(newest); err != nil {
				t.Fatal(err)
			}
			var logs strings.Builder
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			cfg.MaxSteps, cfg.LRDecaySteps = 5, 5
			if _, err := Run(context.Background(), cfg, ref.New(), Single{}, log); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "step_00000004") || !strings.Contains(logs.String(), tc.why) {
				t.Errorf("no warning naming the skipped checkpoint and why:\n%s", logs.String())
			}
		})
	}
}

// TestResumeRefusesOnlyDamaged: a run directory whose checkpoints are all damaged (a
// garbage checkpoint.json, a truncated file) is not one without checkpoints: resume
// auto, resume none and a restarted job refuse, naming the checkpoint and why, and leave
// it and metrics.jsonl as they were. They started afresh: metrics.jsonl was cut to step
// 0 and the damaged checkpoint, whose weights may be intact, replaced at its step.
func TestResumeRefusesOnlyDamaged(t *testing.T) {
	data := tinyDataset(t)
	for _, tc := range []struct {
		name, why string
		damage    func(dir string) error
	}{
		{"garbage checkpoint.json", "checkpoint.json", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "checkpoint.json"), []byte("{garbage"), 0o644)
		}},
		{"truncated optimizer", OptimizerFile, func(dir string) error {
			return os.Truncate(filepath.Join(dir, OptimizerFile), 10)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t, data)
			cfg.MaxSteps, cfg.LRDecaySteps, cfg.CheckpointEvery, cfg.EvalEvery = 4, 4, 0, 0
			if _, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t)); err != nil {
				t.Fatal(err)
			}
			only := filepath.Join(cfg.Out, CheckpointsDir, "step_00000004")
			if err := tc.damage(only); err != nil {
				t.Fatal(err)
			}
			manifest, _ := os.ReadFile(filepath.Join(only, "checkpoint.json"))
			cfg.MaxSteps, cfg.LRDecaySteps = 6, 6
			none, restarted := cfg, cfg
			none.Resume = "none"
			restarted.Resume, restarted.Restarts = "none", 1
			for _, c := range []Config{cfg, none, restarted} {
				_, err := Run(context.Background(), c, ref.New(), Single{}, testLogger(t))
				if err == nil || !strings.Contains(err.Error(), "step_00000004") || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "HINT") {
					t.Errorf("resume %s (restarts %d) over only a damaged checkpoint: %v; want a refusal naming it, why, and what to do", c.Resume, c.Restarts, err)
				}
			}
			if n := len(readMetricsFile(t, cfg.Out)); n != 4 {
				t.Errorf("metrics.jsonl has %d lines, want the 4 of the damaged run", n)
			}
			if after, _ := os.ReadFile(filepath.Join(only, "checkpoint.json")); !bytes.Equal(after, manifest) {
				t.Errorf("the damaged checkpoint was replaced")
			}
		})
	}
}

// TestTrainRefusesIDsOutsideVocab: token ids at or above the manifest's vocabulary stop
// the run before its first step, naming the shard and the offset, instead of a panic
// mid-run after some steps of metrics (issue 15, item 4).
func TestTrainRefusesIDsOutsideVocab(t *testing.T) {
	train := patternDoc(6000, 20, 1)
	train[4000] = 25 // a vocabulary of 20 ids
	dir := writeTinyDataset(t, t.TempDir(), train, patternDoc(1500, 20, 2), 20, "tiny-fp-1")
	cfg := tinyConfig(t, dir)
	_, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "tiny_text_document.bin: byte 8000") || !strings.Contains(err.Error(), "token id 25") {
		t.Fatalf("Run = %v, want a refusal naming the shard and the offset", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, MetricsName)); err == nil {
		t.Error("metrics were written: the run started")
	}
}

// TestTrainRefusesHugeModel: a shape that cannot fit (--n-embd 1000000 asks for tens of
// terabytes) is refused in one line with the bytes needed and available, before
// anything is allocated, instead of a runtime "out of memory" and a stack dump (issue 15,
// item 7).
func TestTrainRefusesHugeModel(t *testing.T) {
	if _, _, ok := AvailableMemory(ref.New()); !ok {
		t.Skip("no MemAvailable here")
	}
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.NEmbd, cfg.NHead = 1000000, 2
	_, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "need") || !strings.Contains(err.Error(), "TiB") || !strings.Contains(err.Error(), "available (MemAvailable") {
		t.Fatalf("Run = %v, want a refusal with the bytes needed and available", err)
	}
}

// TestEstimateMemoryMatchesBuffers: the estimate adds up the buffers the trainer
// really allocates (parameters, gradients, AdamW, activations), in each dtype.
func TestEstimateMemoryMatchesBuffers(t *testing.T) {
	for _, dropout := range []float64{0, 0.1} {
		for _, dt := range []string{"float32", "bfloat16"} {
			cfg := tinyConfig(t, tinyDataset(t))
			cfg.Dropout, cfg.Dtype = dropout, dt
			tr, err := NewTrainer(context.Background(), cfg, ref.New(), Single{}, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			est := EstimateMemory(cfg, tr.model.Config.VocabSize, 1, tr.model.DType())
			u := tr.Memory()
			got := MemoryEstimate{Params: float64(u.Params), Grads: float64(u.Grads), Optimizer: float64(u.Optimizer),
				Activations: float64(u.Activations)}
			tr.Close()
			if got.Params != est.Params || got.Grads != est.Grads || got.Optimizer != est.Optimizer || got.Activations != est.Activations {
				t.Errorf("dropout %g %s: buffers %+v, estimate %+v", dropout, dt, got, est)
			}
		}
	}
}

// TestEstimateMemoryMatchesBuffersZero: under ZeRO-1 the estimate is what each rank
// allocates, its shard of AdamW's m and v. It added the whole m and v again, for rank
// 0's copies of them while a checkpoint was gathered, after a save had stopped making
// them (gatherMoment): 8 bytes a parameter on every rank, enough for CheckMemory to
// refuse a run that fits (12 GB at 1.5B parameters).
func TestEstimateMemoryMatchesBuffersZero(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Zero, cfg.Dropout = 1, 0
	cfg.BatchSize /= 2
	comms := startComms(t, 2)
	trs := make([]*Trainer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range trs {
		wg.Go(func() { trs[r], errs[r] = NewTrainer(context.Background(), cfg, ref.New(), comms[r], testLogger(t)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r, tr := range trs {
		est := EstimateMemory(cfg, tr.model.Config.VocabSize, 2, tr.model.DType())
		if got := float64(tr.Memory().Optimizer); got != est.Optimizer {
			t.Errorf("rank %d of 2 with ZeRO-1: AdamW buffers %.0f bytes, estimate %.0f", r, got, est.Optimizer)
		}
		tr.Close()
	}
}

// FuzzParseMemAvailable: the /proc/meminfo parser never panics and reads its line.
func FuzzParseMemAvailable(f *testing.F) {
	f.Add([]byte("MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   23000000 kB\n"))
	f.Add([]byte("MemAvailable: 99999999999999999999 kB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseMemAvailable(data)
		if err == nil && n < 0 {
			t.Fatalf("%q: %d bytes", data, n)
		}
		if err == nil && !bytes.Contains(data, []byte("MemAvailable:")) {
			t.Fatalf("%q: found %d without the line", data, n)
		}
	})
}

// TestPruneFailureWarns: a checkpoint saved whose pruning of an old one fails (here a
// file made immutable; on NFS, a file another process holds open) lets the run go on
// with a warning naming the checkpoint saved. The run stopped at each such save, "save
// the checkpoint of step N" failing although it was saved (an interrupted run said
// its newest checkpoint was the one before it).
func TestPruneFailureWarns(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps, cfg.CheckpointEvery, cfg.KeepCheckpoints, cfg.EvalEvery = 6, 6, 2, 1, 0
	ctx := context.Background()
	tr, err := NewTrainer(ctx, cfg, ref.New(), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var held string
	tr.OnStep = func(m Metrics) {
		if m.Step != 3 {
			return
		}
		held = filepath.Join(cfg.Out, CheckpointsDir, "step_00000002", ModelFile)
		if out, err := exec.Command("chattr", "+i", held).CombinedOutput(); err != nil {
			t.Skipf("chattr +i %s: %v %s (no immutable files here)", held, err, out)
		}
		t.Cleanup(func() {
			// Wherever the prune moved it.
			matches, _ := filepath.Glob(filepath.Join(cfg.Out, CheckpointsDir, "*", ModelFile))
			for _, f := range matches {
				exec.Command("chattr", "-i", f).Run()
			}
		})
	}
	var logs strings.Builder
	tr.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := tr.Train(ctx)
	if err != nil || res.Step != 6 {
		t.Fatalf("run whose pruning fails: step %v, %v; want it to go on to step 6", res.Step, err)
	}
	if want := filepath.Join(cfg.Out, CheckpointsDir, "step_00000006"); res.Checkpoint != want {
		t.Errorf("checkpoint %q, want %q", res.Checkpoint, want)
	}
	if !strings.Contains(logs.String(), "old checkpoints could not be removed") || !strings.Contains(logs.String(), "step_00000004") {
		t.Errorf("no warning naming the checkpoint saved:\n%s", logs.String())
	}
	// The leftover that cannot be removed does not stop later saves from pruning
	// (keep 1: step 4 goes at step 6's save; it stayed, and every later one).
	if _, err := os.Stat(filepath.Join(cfg.Out, CheckpointsDir, "step_00000004")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("step_00000004 after step 6's save with keep 1: %v; want it pruned", err)
	}
}
