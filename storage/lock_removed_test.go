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
