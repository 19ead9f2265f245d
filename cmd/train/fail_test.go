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
	trainFail(ctx, &out, errors.New("train: interrupted after step 9"))
	if strings.TrimSpace(out.String()) != interruptedLine {
		t.Errorf("stderr %q, want %q", out.String(), interruptedLine)
	}
}
