package train

import (
	"bytes"
	"context"
	"log/slog"
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
}
