package train

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"strings"
	"testing"

	"gptkit/kernels/cpu"
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
	dir, err := resolveCheckpoint(context.Background(), out, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
