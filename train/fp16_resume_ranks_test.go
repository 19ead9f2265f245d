package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gptkit/kernels/cpu"
)

// TestFloat16ResumeSkippedOnEveryRank: a float16 run whose loss scaling skipped steps,
// resumed on 2 data-parallel ranks: every rank continues with the checkpoint's
// skipped-step count (AdamW's bias-correction step is step - skipped). shareStart
// broadcast step, cursor, scale and good but not skipped: rank 1 kept 0, and the ranks'
// weights diverged (a false "diverged" error; with zero 1, wrong updates silently).
func TestFloat16ResumeSkippedOnEveryRank(t *testing.T) {
	defer func(v float64) { lossScaleInit = v }(lossScaleInit)
	lossScaleInit = 1 << 24 // the first steps overflow and are skipped
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Dtype, cfg.Dropout = "float16", 0
	cfg.MaxSteps, cfg.CheckpointEvery, cfg.EvalSteps = 12, 0, 0
	if _, err := Run(context.Background(), cfg, cpu.New(1), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	st, err := ReadState(context.Background(), mustLatest(t, cfg.Out))
	if err != nil {
		t.Fatal(err)
	}
	if st.SkippedSteps == 0 {
		t.Fatal("the test needs skipped steps in the checkpoint")
	}

	// Resume copies on 2 ranks with the same global batch, without and with
	// ZeRO-1 (there each rank's shard gets its own bias correction: no error).
	for zero := range 2 {
		t.Run(fmt.Sprint("zero", zero), func(t *testing.T) {
			c := cfg
			c.Out = filepath.Join(t.TempDir(), "run")
			if err := os.CopyFS(c.Out, os.DirFS(cfg.Out)); err != nil {
				t.Fatal(err)
			}
			c.MaxSteps, c.BatchSize, c.Zero = 14, cfg.BatchSize/2, zero
			var skipped [2]int
			_, errs := runRanks(t, context.Background(), c, startComms(t, 2), func(r int, tr *Trainer) { skipped[r] = tr.skipped })
			if skipped[0] != st.SkippedSteps || skipped[1] != st.SkippedSteps {
				t.Errorf("after the resume rank 0 counts %d skipped steps, rank 1 %d; the checkpoint %d", skipped[0], skipped[1], st.SkippedSteps)
			}
			if err := errors.Join(errs...); err != nil {
				t.Errorf("resumed run: %v", err)
			} else {
				t.Log("resumed run: no error")
			}
		})
	}
}
