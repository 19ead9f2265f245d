package dist

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// Rank 0 publishes a value (NCCL's unique id, say); the others look it up,
// before or after it is set, through the store behind the job token.
func TestPublishLookup(t *testing.T) {
	comms := startGroup(t, 3, Options{Timeout: 20 * time.Second}, ServerConfig{})
	id := bytes.Repeat([]byte{0xab, 0x01}, 64)
	got := make([][]byte, 3)
	errs := each(comms, func(r int, c *Comm) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if r == 0 {
			time.Sleep(100 * time.Millisecond) // the others ask first
			if err := c.Publish(ctx, "nccl-id", id); err != nil {
				return err
			}
		}
		v, err := c.Lookup(ctx, "nccl-id")
		got[r] = v
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if !bytes.Equal(got[r], id) {
			t.Errorf("rank %d got %x", r, got[r])
		}
	}
	// a key nobody publishes: the lookup ends with its context
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := comms[1].Lookup(ctx, "missing"); err == nil {
		t.Error("lookup of a missing key returned")
	}
}
