package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/train/checkpoint"
)

// TestResumeFallbackMatchesOlder: resume auto over a newest checkpoint whose AdamW file
// is damaged at its end (its weights and most of its AdamW state read into place before
// the sha256 says so) falls back to the one before, and continues exactly as a resume
// of that one: nothing of the damaged checkpoint is left in the weights or the state.
// On one CPU rank, on the fake device, and on 2 ranks with ZeRO off and on.
func TestResumeFallbackMatchesOlder(t *testing.T) {
	data := tinyDataset(t)
	for _, tc := range []struct {
		name        string
		world, zero int
		be          func() kernels.Backend
	}{
		{"cpu", 1, 0, func() kernels.Backend { return cpu.New(2) }},
		{"fake device", 1, 0, func() kernels.Backend { return newFakeDevice() }},
		{"2 ranks", 2, 0, nil},
		{"2 ranks zero", 2, 1, nil},
		{"2 ranks on the fake device", 2, 0, func() kernels.Backend { return newFakeDevice() }},
		{"2 ranks zero on the fake device", 2, 1, func() kernels.Backend { return newFakeDevice() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig(t, data)
			cfg.Dropout, cfg.EvalSteps, cfg.Zero = 0, 0, tc.zero
			cfg.BatchSize /= tc.world
			run := func(c Config) *Result {
				t.Helper()
				if tc.world == 1 {
					res, err := Run(context.Background(), c, tc.be(), Single{}, testLogger(t))
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				newBE := func(int) kernels.Backend { return cpu.New(1) }
				if tc.be != nil {
					newBE = func(int) kernels.Backend { return tc.be() }
				}
				res, errs := runRanksOn(t, context.Background(), c, startComms(t, tc.world), newBE, nil)
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
				return res
			}
			run(cfg)
			later := func(name string) Config {
				c := cfg
				c.Out = filepath.Join(t.TempDir(), name)
				if err := os.CopyFS(c.Out, os.DirFS(cfg.Out)); err != nil {
					t.Fatal(err)
				}
				c.MaxSteps, c.LRDecaySteps = 22, 22
				return c
			}
			damaged, older := later("damaged"), later("older")
			file := filepath.Join(damaged.Out, CheckpointsDir, checkpoint.DirName(20), OptimizerFile)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-2] ^= 0x40
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(older.Out, CheckpointsDir, checkpoint.DirName(20))); err != nil {
				t.Fatal(err)
			}
			got, want := run(damaged), run(older)
			if want15 := filepath.Join(damaged.Out, CheckpointsDir, checkpoint.DirName(15)); got.ResumedFrom != want15 || got.Step != 22 {
				t.Fatalf("resumed from %q to step %d, want from %q to 22", got.ResumedFrom, got.Step, want15)
			}
			sameCheckpointFiles(t, got.Checkpoint, want.Checkpoint)
			if got.Loss != want.Loss {
				t.Errorf("final loss %v, want %v", got.Loss, want.Loss)
			}
		})
	}
}

// TestResumeRanksDamagedNamed: 2 ranks resuming a checkpoint named to them whose
// AdamW file is damaged at its end (no fallback: it was named) stop, rank 0 with
// checkpoint.ErrCorrupt naming the file, rank 1 with rank 0's error: rank 0 finds
// the damage after it has broadcast the state, tensor by tensor, while rank 1 waits
// for more of it. ZeRO off and on.
func TestResumeRanksDamagedNamed(t *testing.T) {
	data := tinyDataset(t)
	for _, zero := range []int{0, 1} {
		cfg := tinyConfig(t, data)
		cfg.Dropout, cfg.EvalSteps, cfg.Zero, cfg.MaxSteps, cfg.LRDecaySteps = 0, 0, zero, 5, 5
		cfg.BatchSize /= 2
		if _, errs := runRanks(t, context.Background(), cfg, startComms(t, 2), nil); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		dir := filepath.Join(cfg.Out, CheckpointsDir, checkpoint.DirName(5))
		file := filepath.Join(dir, OptimizerFile)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-2] ^= 0x40
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		named := cfg
		named.Resume, named.Out, named.MaxSteps, named.LRDecaySteps = dir, filepath.Join(t.TempDir(), "run"), 7, 7
		_, errs := runRanks(t, context.Background(), named, startComms(t, 2), nil)
		if !errors.Is(errs[0], checkpoint.ErrCorrupt) || !strings.Contains(errs[0].Error(), file) {
			t.Errorf("zero %d: rank 0: %v, want checkpoint.ErrCorrupt naming %s", zero, errs[0], file)
		}
		if errs[1] == nil || !strings.Contains(errs[1].Error(), "rank 0") || !strings.Contains(errs[1].Error(), file) {
			t.Errorf("zero %d: rank 1: %v, want rank 0's error, naming %s", zero, errs[1], file)
		}
	}
}
