package train

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/kernels/cpu"
	"gptkit/train/checkpoint"
)

// TestFloat16LossScaling: float16 with a loss scale so large that the
// activation gradients overflow: the first steps are skipped, each halving the
// scale (logged), until training proceeds; the run resumes with the scale it
// had, bit-identical to an uninterrupted run; a scale of 1 that still overflows
// is an error.
func TestFloat16LossScaling(t *testing.T) {
	defer func(v float64) { lossScaleInit = v }(lossScaleInit)
	lossScaleInit = 1 << 24 // float16 overflows at 65504
	data := tinyDataset(t)
	cfg := tinyConfig(t, data)
	cfg.Dtype, cfg.Dropout = "float16", 0
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	if _, err := Run(context.Background(), cfg, cpu.New(1), Single{}, logger); err != nil {
		t.Fatal(err)
	}
	skips := strings.Count(log.String(), "step skipped")
	if skips < 2 || skips > 15 {
		t.Errorf("%d steps skipped for overflow, want some (the scale starts at 2^24)\n%s", skips, log.String())
	}
	ms := readMetricsFile(t, cfg.Out)
	first, last := ms[0].Loss, ms[len(ms)-1].Loss
	if !(last < first) || math.IsNaN(last) {
		t.Errorf("float16 loss %g after %g: did not learn", last, first)
	}
	st, err := ReadState(context.Background(), mustLatest(t, cfg.Out))
	if err != nil {
		t.Fatal(err)
	}
	if st.LossScale <= 0 || st.LossScale >= 1<<24 || st.LossScale != ms[len(ms)-1].LossScale {
		t.Errorf("checkpoint loss scale %g, want the halved scale of the last step (%g)", st.LossScale, ms[len(ms)-1].LossScale)
	}
	if st.SkippedSteps != skips {
		t.Errorf("checkpoint counts %d skipped steps, the log %d", st.SkippedSteps, skips)
	}

	// Interrupted after step 3 (during the skipped steps) and resumed: the same run.
	part := cfg
	part.Out = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, err := NewTrainer(ctx, part, cpu.New(1), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tr.OnStep = func(m Metrics) {
		if m.Step == 3 {
			cancel()
		}
	}
	tr.Train(ctx)
	tr.Close()
	if _, err := Run(context.Background(), part, cpu.New(1), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	sameMetrics(t, readMetricsFile(t, part.Out), ms)

	s := lossScaler{scale: 1}
	if err := s.update(false); err == nil || !strings.Contains(err.Error(), "bfloat16") {
		t.Errorf("overflow at scale 1: %v, want the error naming bfloat16", err)
	}
	s = lossScaler{scale: 1024}
	for range lossScaleWindow {
		s.update(true)
	}
	if s.scale != 2048 {
		t.Errorf("after %d good steps the scale is %g, want 2048", lossScaleWindow, s.scale)
	}
}

func mustLatest(t *testing.T, out string) string {
	t.Helper()
	cd, err := resolveCheckpoint(context.Background(), checkpoint.Manager{Logger: slog.Default()}, out)
	if err != nil {
		t.Fatal(err)
	}
	return cd.Path()
}

// mustLatestIn is latestCheckpoint(root) as a path and a step.
func mustLatestIn(t *testing.T, root string) (dir string, step int, found bool, err error) {
	t.Helper()
	cd, found, err := latestCheckpoint(context.Background(), root, nil)
	if !found {
		return "", 0, found, err
	}
	return cd.Path(), int(cd.Manifest.Step), found, err
}

// TestFloat16FirstUpdateAfterSkips: the first update after steps that float16's loss
// scaling skipped is AdamW's first (bias correction for step 1: every weight with a
// gradient moves by about lr), not damped as a later step's would be (after three
// skips by ~0.56, what counting them gave).
func TestFloat16FirstUpdateAfterSkips(t *testing.T) {
	defer func(v float64) { lossScaleInit = v }(lossScaleInit)
	lossScaleInit = 1 << 24
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Dtype, cfg.Dropout, cfg.WeightDecay, cfg.GradClip = "float16", 0, 0, 0
	cfg.LR, cfg.MinLR, cfg.WarmupSteps, cfg.LRDecaySteps, cfg.MaxSteps = 1e-3, 1e-3, 0, 0, 8
	tr, err := NewTrainer(context.Background(), cfg, cpu.New(1), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	prev := slices.Clone(tr.Model().ReadParams()) // (a view on the CPU)
	skipped, ratio := 0, 0.0
	tr.OnStep = func(m Metrics) {
		now := slices.Clone(tr.Model().ReadParams())
		if m.Skipped {
			skipped++
		} else if ratio == 0 && skipped > 0 {
			var r []float64
			for i := range now {
				if d := math.Abs(float64(now[i]) - float64(prev[i])); d > 0 {
					r = append(r, d/m.LR)
				}
			}
			slices.Sort(r)
			ratio = r[len(r)/2]
		}
		prev = now
	}
	if _, err := tr.Train(context.Background()); err != nil {
		t.Fatal(err)
	}
	if skipped == 0 || ratio == 0 {
		t.Fatalf("%d steps skipped, ratio %g: the test needs skips then an update", skipped, ratio)
	}
	if ratio < 0.9 || ratio > 1.1 {
		t.Errorf("after %d skipped steps the first update moved the weights by %.3g lr (median), want ~1 (AdamW's first step)", skipped, ratio)
	}
}

// TestInterruptedCheckpointFails: an interrupt whose checkpoint cannot be written
// ends with ErrCheckpointFailed, naming the newest checkpoint, not as a plain
// interrupt that would hide the lost steps.
func TestInterruptedCheckpointFails(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.CheckpointEvery, cfg.MaxSteps = 1000, 20
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr, err := NewTrainer(ctx, cfg, cpu.New(1), Single{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.OnStep = func(m Metrics) {
		if m.Step == 3 {
			dir := filepath.Join(cfg.Out, "checkpoints")
			os.RemoveAll(dir)
			os.WriteFile(dir, []byte("not a directory"), 0o644)
			cancel()
		}
	}
	_, err = tr.Train(ctx)
	if !errors.Is(err, ErrCheckpointFailed) || !strings.Contains(err.Error(), "interrupted at step 3") {
		t.Fatalf("Train = %v, want ErrCheckpointFailed at step 3", err)
	}
}

// TestInterruptedBeforeAStep: a stop before the first step of a run saves nothing
// and says so (InterruptedError.Taken 0; Stepping false until a step begins), naming
// the checkpoint a resumed run continued from; after a step, its checkpoint.
func TestInterruptedBeforeAStep(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.CheckpointEvery, cfg.MaxSteps = 1000, 20
	stopped := func(cancelAt int) (*InterruptedError, string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tr, err := NewTrainer(ctx, cfg, cpu.New(1), Single{}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if tr.Stepping() {
			t.Errorf("Stepping before Train")
		}
		tr.OnStep = func(m Metrics) {
			if m.Step == cancelAt {
				cancel()
			}
		}
		if cancelAt == 0 {
			cancel()
		}
		_, err = tr.Train(ctx)
		ie, ok := errors.AsType[*InterruptedError](err)
		if !ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("Train = %v, want an InterruptedError of context.Canceled", err)
		}
		if tr.Stepping() != (ie.Taken > 0) {
			t.Errorf("Stepping %v after %d steps taken", tr.Stepping(), ie.Taken)
		}
		return ie, err.Error()
	}
	ie, msg := stopped(0)
	if ie.Taken != 0 || ie.Step != 0 || ie.Checkpoint != "" || !strings.Contains(msg, "nothing saved") {
		t.Errorf("stopped before the first step: %+v: %s", ie, msg)
	}
	ie, msg = stopped(2)
	ckpt := filepath.Join(cfg.Out, CheckpointsDir, "step_00000002")
	if ie.Taken != 2 || ie.Step != 2 || ie.Checkpoint != ckpt || !strings.Contains(msg, "interrupted after step 2 (checkpoint "+ckpt+")") {
		t.Errorf("stopped after step 2: %+v: %s", ie, msg)
	}
	ie, msg = stopped(0) // resumed at step 2
	if ie.Taken != 0 || ie.Step != 2 || ie.Checkpoint != ckpt || !strings.Contains(msg, "nothing saved (checkpoint "+ckpt+" is still the newest)") {
		t.Errorf("resumed, then stopped before a step: %+v: %s", ie, msg)
	}
}
