package storage

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// takeoverTransport replaces the lock object just before the first DELETE of it: a
// writer took the lock over (its lease expired) between the holder's read and delete
// at release. The MinIO the tests run ignores If-Match on DELETE (AWS S3 honours it
// since 2024): the transport answers a DELETE whose If-Match is not the new ETag as S3
// does, 412 PreconditionFailed.
type takeoverTransport struct {
	takeover func() string // the new ETag
	done     atomic.Bool
}

func (rt *takeoverTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, writerLockName) && rt.done.CompareAndSwap(false, true) {
		etag := rt.takeover()
		if m := r.Header.Get("If-Match"); m != "" && m != etag {
			body := "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>"
			return &http.Response{StatusCode: http.StatusPreconditionFailed, Status: "412 Precondition Failed", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestLockReleaseKeepsTakeover: a holder releasing its S3 lock just after another
// writer took it over (between the release's read and its DELETE) leaves the new
// holder's lock alone: the DELETE is conditional on the ETag read (If-Match), so the
// new writer is not left writing without a lock that a third could take.
func TestLockReleaseKeepsTakeover(t *testing.T) {
	plain, loc := storeCases[1].open(t, Options{})
	ps := plain.(*s3Store)
	key := ps.lockKey("ds")
	theirs, _ := json.Marshal(lockInfo{Owner: "the writer that took over", Host: "another-host", PID: 1, PIDNS: "x", Since: time.Now(), Renewed: time.Now(), Expires: time.Now().Add(lockLease)})
	rt := &takeoverTransport{takeover: func() string {
		out, err := ps.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &ps.bucket, Key: &key, Body: bytes.NewReader(theirs)})
		if err != nil {
			t.Error(err)
			return ""
		}
		return aws.ToString(out.ETag)
	}}
	st := mustOpen(t, loc, Options{HTTPClient: &http.Client{Transport: rt}})
	l, err := LockDir(ctx, st, "ds", "me")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v, want nil (the lock was no longer ours: nothing to delete)", err)
	}
	if !rt.done.Load() {
		t.Fatal("no DELETE of the lock was seen")
	}
	_, raw, held, err := ps.readLock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if held == "" || !bytes.Equal(raw, theirs) {
		t.Fatalf("the lock of the writer that took over was deleted by the old holder's release (lock now %q)", raw)
	}
}
