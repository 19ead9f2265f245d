package storage

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLockRemovedWhileHeld: an S3 lock object removed while its holder runs (by hand,
// aws s3 rm) is free for any writer; the holder learns it at its next renewal (a PUT
// with If-Match on an object that is gone: 404, not 412) and stops, saying so, rather
// than taking the 404 for an unreachable server, writing on for half a lease and then
// failing with "the S3 server is unreachable?".
func TestLockRemovedWhileHeld(t *testing.T) {
	oldLease, oldRenew := lockLease, lockRenew
	lockLease, lockRenew = 20*time.Second, 300*time.Millisecond // lost after 10 s unrenewed
	defer func() { lockLease, lockRenew = oldLease, oldRenew }()
	st, _ := storeCases[1].open(t, Options{})
	s := st.(*s3Store)
	l, err := LockDir(ctx, st, "ds", "the first writer")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	key := s.lockKey("ds")
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	select {
	case <-l.Lost():
		if d := time.Since(removed); d > 3*time.Second {
			t.Errorf("the holder learnt after %s, want at its next renewal", d)
		}
		if err := l.Check(); err == nil || !strings.Contains(err.Error(), "removed") {
			t.Errorf("Check = %v, want it to say the lock was removed", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the holder of a removed lock wrote on for 8 s (it took the 404 for an unreachable server)")
	}
}

// releasingTransport removes the lock object just before the first PUT that takes it
// over with If-Match: its holder released it between the taker's read and its PUT.
type releasingTransport struct {
	remove func()
	done   atomic.Bool
}

func (rt *releasingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, writerLockName) && r.Header.Get("If-Match") != "" && rt.done.CompareAndSwap(false, true) {
		rt.remove()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestLockReleasedAtTakeover: a lock whose lease has ended, released by its holder just
// as the next writer takes it over (its If-Match PUT then finds no object: 404), is
// taken as a free lock, not failed with "NoSuchKey: The specified key does not exist".
func TestLockReleasedAtTakeover(t *testing.T) {
	plain, loc := storeCases[1].open(t, Options{})
	ps := plain.(*s3Store)
	key := ps.lockKey("ds")
	rt := &releasingTransport{remove: func() {
		if _, err := ps.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &ps.bucket, Key: &key}); err != nil {
			t.Error(err)
		}
	}}
	st := mustOpen(t, loc, Options{HTTPClient: &http.Client{Transport: rt}})
	now := time.Now()
	data, _ := json.Marshal(lockInfo{Owner: "a writer elsewhere", Host: "another-host", PID: 1, PIDNS: "x", Expires: now.Add(-time.Second)})
	if _, err := ps.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &ps.bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	l, err := LockDir(ctx, st, "ds", "me")
	if err != nil {
		t.Fatalf("a lock released as it was taken over: %v, want it taken", err)
	}
	l.Release()
	if !rt.done.Load() {
		t.Fatal("no takeover PUT was seen")
	}
}
