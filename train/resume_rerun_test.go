package train

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/kernels/cpu"
	"gptkit/train/checkpoint"
)

// A command with resume PATH, interrupted and run again (what the interrupted
// line says to do), continues from its own newest checkpoint in out: it went
// back to PATH, redid the steps and overwrote them (another run directory's
// checkpoint) or set them aside (a rollback within out). A resume PATH into an
// out holding another run's checkpoints is refused rather than overwrite them.
func TestRerunOfResumeContinues(t *testing.T) {
	data := tinyDataset(t)
	a := tinyConfig(t, data)
	a.MaxSteps, a.LRDecaySteps = 10, 10
	if _, err := Run(context.Background(), a, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	rootA := filepath.Join(a.Out, CheckpointsDir)

	// From another run directory's checkpoint.
	b := tinyConfig(t, data)
	b.Resume, b.MaxSteps, b.LRDecaySteps = filepath.Join(rootA, checkpoint.DirName(5)), 12, 12
	first := trainInterrupted(t, b, 7)
	var logs bytes.Buffer
	res, err := Run(context.Background(), b, cpu.New(2), Single{}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || res.ResumedFrom != first.Checkpoint || res.Step != 12 {
		t.Fatalf("the same command again: from %q to step %d, %v; want from %q (its own) to 12", res.ResumedFrom, res.Step, err, first.Checkpoint)
	}
	if !strings.Contains(logs.String(), "continuing this run from its newest checkpoint") {
		t.Errorf("no line says why:\n%s", logs.String())
	}
	// The same command with PATH spelled otherwise (a trailing slash, a "./") is
	// still this run.
	respelled := b
	respelled.Resume = rootA + "/./" + checkpoint.DirName(5) + "/"
	respelled.MaxSteps, respelled.LRDecaySteps = 14, 14
	if res, err := Run(context.Background(), respelled, cpu.New(2), Single{}, testLogger(t)); err != nil {
		t.Fatalf("the command again with resume %s: %v", respelled.Resume, err)
	} else if res.ResumedFrom == b.Resume || res.Step != 14 {
		t.Fatalf("the command again with resume %s: from %q to step %d; want from its own newest to 14", respelled.Resume, res.ResumedFrom, res.Step)
	}
	other := b
	other.Resume = a.Out // another resume: another run
	if _, err := Run(context.Background(), other, cpu.New(2), Single{}, testLogger(t)); err == nil || !strings.Contains(err.Error(), "already holds checkpoints of another run") {
		t.Fatalf("resume %s into an out of another run: %v, want a refusal", other.Resume, err)
	}

	// A rollback within out, interrupted and run again.
	back := a
	back.Resume, back.MaxSteps, back.LRDecaySteps = filepath.Join(rootA, checkpoint.DirName(5)), 12, 12
	first = trainInterrupted(t, back, 7)
	res, err = Run(context.Background(), back, cpu.New(2), Single{}, testLogger(t))
	if err != nil || res.ResumedFrom != first.Checkpoint || res.Step != 12 {
		t.Fatalf("the rollback again: from %q to step %d, %v; want from %q to 12", res.ResumedFrom, res.Step, err, first.Checkpoint)
	}
	if asides, _ := filepath.Glob(filepath.Join(rootA, checkpoint.AsidePrefix+"*")); len(asides) != 1 {
		t.Errorf("set-aside directories %v, want the first rollback's only", asides)
	}

	// The same rollback with another lr (the loss-spike routine) is another run:
	// it goes back to PATH again.
	again := back
	again.LR = 3e-3
	res, err = Run(context.Background(), again, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatalf("the rollback with another lr: %v", err)
	}
	if res.ResumedFrom != back.Resume {
		t.Fatalf("the rollback with another lr: from %q, want from %q", res.ResumedFrom, back.Resume)
	}
	// A newest checkpoint whose trainer.json is damaged does not stop a rollback
	// past it.
	newest := filepath.Join(rootA, checkpoint.DirName(12), StateFile)
	raw, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	if err := os.WriteFile(newest, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = Run(context.Background(), back, cpu.New(2), Single{}, testLogger(t))
	if err != nil {
		t.Fatalf("a rollback past a damaged newest checkpoint: %v", err)
	}
	if res.ResumedFrom != back.Resume {
		t.Fatalf("a rollback past a damaged newest checkpoint: from %q, want from %q", res.ResumedFrom, back.Resume)
	}
}
