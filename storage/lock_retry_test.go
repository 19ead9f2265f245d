package storage

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// lostAnswers is a transport whose next drop PUTs of the writer lock reach the
// server but whose answers are lost (the connection resets): the SDK retries them,
// and the retry of a conditional PUT that did succeed is refused with 412.
type lostAnswers struct{ drop atomic.Int32 }

func (l *lostAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, writerLockName) && l.drop.Add(-1) >= 0 {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	return resp, err
}

// TestLockLostAnswerIsOurs: the lock this writer took, or renewed, with a PUT whose
// answer was lost is still this writer's: neither refused as held by another nor
// lost as taken over.
func TestLockLostAnswerIsOurs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a renewal of a lease long enough for the SDK's retry backoff; skipped with -short")
	}
	old := lockLease
	// A renewal's PUT may take lockLease/4: room for the SDK's retry backoff (up to 2 s).
	lockLease = 16 * time.Second
	defer func() { lockLease = old }()
	tr := &lostAnswers{}
	st := minioStore(t, Options{HTTPClient: &http.Client{Transport: tr}})
	tr.drop.Store(1)
	l, err := LockDir(ctx, st, "ds", "me")
	if err != nil {
		t.Fatalf("taking the lock, its first answer lost: %v", err)
	}
	defer l.Release()
	tr.drop.Store(1) // the next renewal's
	var dropped time.Time
	for deadline := time.Now().Add(lockLease); time.Now().Before(deadline); {
		if dropped.IsZero() && tr.drop.Load() < 0 {
			dropped = time.Now()
		}
		if !dropped.IsZero() && time.Since(dropped) > lockLease/4+time.Second {
			break // the renewal is over, retry and all
		}
		select {
		case <-l.Lost():
			t.Fatalf("renewal with its answer lost: %v", l.Check())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if dropped.IsZero() {
		t.Fatal("no renewal was dropped")
	}
	if err := l.Check(); err != nil {
		t.Fatal(err)
	}
}
