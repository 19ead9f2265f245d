package dist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
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

// TestConcurrentLookups: Lookups of different keys on one rank at once each get
// their own key's value: a value is not taken (and dropped) by a Lookup of
// another key, which would then leave its own Lookup waiting for good.
func TestConcurrentLookups(t *testing.T) {
	comms := startGroup(t, 2, Options{Timeout: 20 * time.Second}, ServerConfig{})
	c := comms[1]
	for round := range 3 {
		other, key := fmt.Sprint("other-", round), fmt.Sprint("key-", round)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// Lookups of a key published last, all waiting while key's value comes.
		const n = 8
		errs := make(chan error, n)
		for range n {
			go func() {
				v, err := c.Lookup(ctx, other)
				if err == nil && string(v) != other {
					err = fmt.Errorf("Lookup(%q) = %q", other, v)
				}
				errs <- err
			}()
		}
		time.Sleep(50 * time.Millisecond)
		go func() {
			time.Sleep(50 * time.Millisecond)
			comms[0].Publish(ctx, key, []byte(key))
		}()
		lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
		v, err := c.Lookup(lctx, key)
		lcancel()
		if err != nil || string(v) != key {
			t.Fatalf("round %d: Lookup(%q) = %q, %v", round, key, v, err)
		}
		if err := comms[0].Publish(ctx, other, []byte(other)); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// TestStoreWriteFailureNamed: a Publish or Lookup whose request cannot be
// written to the store fails naming the request's key and the store's address
// and host, keeping the write's error as its cause, not with the bare socket error.
func TestStoreWriteFailureNamed(t *testing.T) {
	// No heartbeats: they would find the broken connection too, and the
	// communicator's abort would stand in for the errors under test.
	comms := startGroup(t, 2, Options{Timeout: 20 * time.Second, HeartbeatInterval: time.Hour}, ServerConfig{})
	c := comms[0]
	broken := errors.New("broken pipe (test)")
	c.store.w.mu.Lock()
	c.store.w.w = failingWriter{broken}
	c.store.w.mu.Unlock()
	want := fmt.Sprintf("rendezvous store at %s (the launcher of node 0)", c.store.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Publish(ctx, "nccl-id", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `publish "nccl-id"`) || !errors.Is(err, broken) {
		t.Errorf("publish: %v, want an error naming the key and the %s, caused by the write's", err, want)
	}
	_, err = c.Lookup(ctx, "nccl-id")
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `look up "nccl-id"`) || !errors.Is(err, broken) {
		t.Errorf("lookup: %v, want an error naming the key and the %s, caused by the write's", err, want)
	}
}

// failingWriter fails every write with err.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
