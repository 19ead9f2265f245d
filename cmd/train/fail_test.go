package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gptkit/train"
)

// TestInterruptedFailureKeepsCheckpointError: after an interrupt, a failed checkpoint
// is what the one line says (not "interrupted", which would hide the lost steps).
func TestInterruptedFailureKeepsCheckpointError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	trainFail(ctx, &out, fmt.Errorf("train: interrupted at step 664, and %w: no space left on device", train.ErrCheckpointFailed))
	if !strings.Contains(out.String(), "no space left on device") {
		t.Errorf("stderr %q, want the checkpoint's error", out.String())
	}
	out.Reset()
	trainFail(ctx, &out, &train.InterruptedError{Step: 9, Taken: 9, Checkpoint: "out/checkpoints/step_00000009", Cause: context.Canceled})
	if strings.TrimSpace(out.String()) != interruptedLine {
		t.Errorf("stderr %q, want %q", out.String(), interruptedLine)
	}
	// Stopped before a step (Train's own, or while starting): nothing was saved.
	for _, err := range []error{&train.InterruptedError{Cause: context.Canceled}, errors.New("loader: open: context canceled")} {
		out.Reset()
		trainFail(ctx, &out, err)
		if !strings.Contains(out.String(), "nothing was saved") {
			t.Errorf("%v: stderr %q, want that nothing was saved", err, out.String())
		}
	}
}
