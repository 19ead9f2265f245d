package dist

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Ranks whose all-reduce lengths differ, on buffers larger than a link holds,
// fail at once naming the disagreement: each rank's sender was blocked writing to
// a peer that had stopped reading, and the two waited for the collective timeout,
// then blamed the network.
func TestMismatchLargeBuffers(t *testing.T) {
	for _, tr := range transports[:3] {
		t.Run(tr.name, func(t *testing.T) {
			o := tr.o
			o.Timeout, o.CollectiveTimeout = 30*time.Second, 20*time.Second
			comms := startGroup(t, 2, o, ServerConfig{})
			start := time.Now()
			errs := each(comms, func(r int, c *Comm) error {
				return c.AllReduceSum(context.Background(), make([]float32, (12<<20)-r*(2<<20)))
			})
			for r, err := range errs {
				if err == nil || !strings.Contains(err.Error(), "disagree") {
					t.Errorf("rank %d: %v, want a disagreement", r, err)
				}
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v: the ranks waited for the collective timeout", d)
			}
		})
	}
}

// A value too large for the store is refused by Publish (the store dropped the
// rank, and the group failed blaming its death).
func TestPublishTooLarge(t *testing.T) {
	comms := startGroup(t, 2, Options{Timeout: 30 * time.Second}, ServerConfig{})
	err := comms[0].Publish(context.Background(), "k", make([]byte, 3200<<10))
	if err == nil || !strings.Contains(err.Error(), "over what the store holds") {
		t.Fatalf("publish of 3.2 MB: %v", err)
	}
	for r, err := range each(comms, func(_ int, c *Comm) error { return c.Barrier(context.Background()) }) {
		if err != nil {
			t.Errorf("rank %d after a refused publish: %v", r, err)
		}
	}
}
