package train

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"gptkit/kernels/cpu"
)

// lockedBuffer is a bytes.Buffer a logger may write from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunWideLinesRankZero: of a job's setup lines that are the same on every
// rank (the memory estimate, the model, its memory, data parallel), only rank 0
// logs them at Info; rank 1 has them at Debug, not a second copy in the job's log.
func TestRunWideLinesRankZero(t *testing.T) {
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.Zero = 1
	comms := startComms(t, 2)
	logs := []*lockedBuffer{{}, {}}
	trs := make([]*Trainer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range trs {
		log := slog.New(slog.NewTextHandler(logs[r], &slog.HandlerOptions{Level: slog.LevelDebug}))
		wg.Go(func() { trs[r], errs[r] = NewTrainer(context.Background(), cfg, cpu.New(1), comms[r], log) })
	}
	wg.Wait()
	for _, tr := range trs {
		if tr != nil {
			tr.Close()
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	lines := []string{`msg=memory estimate=`, `msg=model `, `msg=memory params=`, `msg="data parallel"`}
	for r, log := range logs {
		got := log.String()
		for _, l := range lines {
			want := "level=INFO " + l
			if r > 0 {
				want = "level=DEBUG " + l
			}
			if !strings.Contains(got, want) {
				t.Errorf("rank %d: no %q line in its log:\n%s", r, want, got)
			}
		}
	}
}
