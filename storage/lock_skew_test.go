package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLockHolderClockBehind: an S3 lock just renewed by a live holder whose clock runs
// 10 minutes behind this writer's (its recorded lease ended long ago by this clock) is
// refused, not taken over at once: the lease is told by the server's clock (how long
// ago the object was written), as the wait for a holder that stopped renewing is, so
// that two writers never both hold it.
func TestLockHolderClockBehind(t *testing.T) {
	oldLease, oldRenew := lockLease, lockRenew
	lockLease, lockRenew = 4*time.Second, 500*time.Millisecond
	defer func() { lockLease, lockRenew = oldLease, oldRenew }()
	st, _ := storeCases[1].open(t, Options{})
	s := st.(*s3Store)
	key := s.lockKey("ds")
	then := time.Now().Add(-10 * time.Minute) // the holder's clock
	data, _ := json.Marshal(lockInfo{Owner: "a live writer with a slow clock", Host: "another-host", PID: 1, PIDNS: "x",
		Since: then, Renewed: then, Expires: then.Add(4 * time.Second), RenewEveryMS: 500})
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	l, err := LockDir(ctx, st, "ds", "me")
	if err == nil {
		l.Release()
		t.Fatal("took over a lock its holder renewed a moment ago (by the server's clock), as its clock runs behind")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "a live writer with a slow clock") {
		t.Fatalf("got %v, want ErrLocked naming the holder", err)
	}
}

// TestLockRefusalLeaseEndServerClock: the refusal of a lock whose holder's clock runs
// 10 minutes behind names the lease's end as this writer judges it (the server's clock:
// a lease from when the object was written), not the holder's recorded expiry, which
// reads 8 minutes past.
func TestLockRefusalLeaseEndServerClock(t *testing.T) {
	st, _ := storeCases[1].open(t, Options{})
	s := st.(*s3Store)
	key := s.lockKey("ds")
	then := time.Now().Add(-10 * time.Minute) // the holder's clock
	data, _ := json.Marshal(lockInfo{Owner: "a live writer with a slow clock", Host: "another-host", PID: 1, PIDNS: "x",
		Since: then, Renewed: then, Expires: then.Add(lockLease), RenewEveryMS: lockRenew.Milliseconds()})
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	l, err := LockDir(ctx, st, "ds", "me")
	if err == nil {
		l.Release()
		t.Fatal("took over a lock renewed a moment ago")
	}
	m := regexp.MustCompile(`lease to end \(at ([^ )]+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("got %v, want it to say when the lease ends", err)
	}
	end, perr := time.Parse(time.RFC3339, m[1])
	if perr != nil {
		t.Fatal(perr)
	}
	if lo, hi := before.Add(lockLease-5*time.Second), time.Now().Add(lockLease+2*time.Second); end.Before(lo) || end.After(hi) {
		t.Fatalf("the refusal says the lease ends at %s, want about a lease (%s) from now (%s): %v", m[1], lockLease, before.UTC().Format(time.RFC3339), err)
	}
}
