package pipelines

import (
	"strings"
	"testing"
	"time"
)

// TestSummaryAlreadyComplete: the table of a rerun that found its dataset finished
// shows the dataset's counts and no speeds (it read 8000000000 tokens/s: the counts
// over the microseconds the rerun took).
func TestSummaryAlreadyComplete(t *testing.T) {
	s := RunStats{AlreadyComplete: true, Docs: 40, Tokens: 8000, TextBytes: 30000, Elapsed: time.Microsecond}
	got := s.Summary("out", "")
	if strings.Contains(got, "8000000000") || !strings.Contains(got, "8000") {
		t.Fatalf("summary of an already complete run:\n%s", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "total") && strings.Count(line, " -") != 3 {
			t.Errorf("total row %q: want - for time, MB/s and tokens/s", line)
		}
	}
}
