package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLockDir: a directory's writer lock excludes a second writer, which is told who holds
// it; released, it can be taken again; other directories are not affected.
func TestLockDir(t *testing.T) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			st, _ := c.open(t, Options{})
			a, err := LockDir(ctx, st, "ds", "writer A (pid 1)")
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Check(); err != nil {
				t.Fatal(err)
			}
			_, err = LockDir(ctx, st, "ds", "writer B")
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "writer A (pid 1)") {
				t.Fatalf("second lock = %v, want ErrLocked naming writer A", err)
			}
			other, err := LockDir(ctx, st, "other", "writer C")
			if err != nil {
				t.Fatalf("another directory: %v", err)
			}
			other.Release()
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
			b, err := LockDir(ctx, st, "ds", "writer B")
			if err != nil {
				t.Fatalf("after release: %v", err)
			}
			b.Release()
			if got := listKeys(t, st, ""); got != "" {
				t.Errorf("List shows %q: the lock must not be listed", got)
			}
		})
	}
}

// TestLockDeadHolder: a writer killed while holding the lock does not block the next one:
// at once on a directory store (the kernel drops its flock) and, on S3, at once on the
// same host (the holder's process is gone; see TestLockLeaseExpiry for other hosts).
func TestLockDeadHolder(t *testing.T) {
	const lease = 2 * time.Second
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			st, loc := c.open(t, Options{})
			cmd := startHelper(t, "lock", loc, "ds", "HELPER_LEASE="+lease.String())
			if _, err := LockDir(ctx, st, "ds", "next"); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "the helper") {
				t.Fatalf("while the helper lives: %v, want ErrLocked naming it", err)
			}
			cmd.Process.Kill()
			cmd.Wait()
			deadline := time.Now().Add(time.Minute)
			for {
				l, err := LockDir(ctx, st, "ds", "next")
				if err == nil {
					l.Release()
					return
				}
				if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
					t.Fatalf("after the holder died: %v", err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// TestLockTakenOver: an S3 holder whose lock another writer took over learns it at its
// next renewal: Lost closes and Check fails, so it stops before its next commit.
func TestLockTakenOver(t *testing.T) {
	old := lockLease
	lockLease = time.Second
	defer func() { lockLease = old }()
	st, _ := storeCases[1].open(t, Options{})
	s := st.(*s3Store)
	l, err := LockDir(ctx, st, "ds", "holder")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	key := s.lockKey("ds")
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: strings.NewReader(`{"owner": "usurper"}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("the holder never noticed")
	}
	if err := l.Check(); err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("Check = %v", err)
	}
}

// TestLockLeaseExpiry: an S3 lock of a holder on another host blocks until its lease
// expires, then is taken over; a garbled lock object reads as expired.
func TestLockLeaseExpiry(t *testing.T) {
	st, _ := storeCases[1].open(t, Options{})
	s := st.(*s3Store)
	key := s.lockKey("ds")
	forge := func(expires time.Time) {
		data, _ := json.Marshal(lockInfo{Owner: "a writer elsewhere", Host: "another-host", PID: 1, PIDNS: "x", Expires: expires})
		if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	forge(time.Now().Add(time.Hour))
	if _, err := LockDir(ctx, st, "ds", "me"); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "a writer elsewhere") {
		t.Fatalf("live lease: %v, want ErrLocked", err)
	}
	forge(time.Now().Add(-time.Second))
	l, err := LockDir(ctx, st, "ds", "me")
	if err != nil {
		t.Fatalf("expired lease: %v", err)
	}
	l.Release()
	if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: strings.NewReader("garbage")}); err != nil {
		t.Fatal(err)
	}
	if l, err = LockDir(ctx, st, "ds", "me"); err != nil {
		t.Fatalf("garbled lock: %v", err)
	}
	l.Release()
}

// FuzzProcStartTime: the /proc/PID/stat parser never panics, and finds field 22 whatever
// the command name holds.
func FuzzProcStartTime(f *testing.F) {
	f.Add("1234 (gptkit) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 98765 1000 200", "x")
	f.Add("1 (a) b) c) R", ") (")
	f.Fuzz(func(t *testing.T, stat, comm string) {
		procStartTime(stat)
		if strings.ContainsAny(comm, "\n") {
			return
		}
		line := "42 (" + comm + ") S 1 1 1 0 -1 4 1 0 0 0 1 2 0 0 20 0 3 0 777 1000 200"
		if got := procStartTime(line); got != "777" {
			t.Fatalf("%q: start %q, want 777", line, got)
		}
	})
}

// FuzzLockedError: a lock file of any bytes (garbled, an older version's plain owner, a
// binary file) is named in the one line ErrLocked's message starts with: no line breaks
// or other control characters, and at most a few hundred bytes of it.
func FuzzLockedError(f *testing.F) {
	good, _ := json.Marshal(lockInfo{Owner: LockOwner("tokenize run"), Since: time.Unix(1700000000, 0), Expires: time.Unix(1700000300, 0), RenewEveryMS: 30000})
	f.Add(good)
	f.Add([]byte("garbage"))
	f.Add([]byte("line one\nline two\x1b[31m"))
	f.Add([]byte(`{"owner":"a\nb","renew_every_ms":9223372036854775807,"expires":"2030-01-01T00:00:00Z"}`))
	f.Add(bytes.Repeat([]byte{0xff, 0}, 40000))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var info lockInfo
		json.Unmarshal(raw, &info)
		msg := lockedError("/d/.gptkit-writer.lock", info, raw).Error()
		line, _, _ := strings.Cut(msg, "\n---> HINT: ")
		if strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("control characters in the first line: %.300q", line)
		}
		if len(line) > 600 {
			t.Fatalf("first line of %d bytes: %.200q...", len(line), line)
		}
	})
}

// TestLockStoppedRenewing: an S3 lock whose holder on another host stopped renewing it
// (killed -9: an AWS Batch attempt retried elsewhere) makes the next writer wait for the
// lease to end, saying so in one line, and take it over, rather than fail; a lock still
// renewed (a live holder) is refused at once, as is one renewed during the wait.
func TestLockStoppedRenewing(t *testing.T) {
	oldLease, oldRenew := lockLease, lockRenew
	lockLease, lockRenew = 4*time.Second, 500*time.Millisecond // stale after 2 s
	defer func() { lockLease, lockRenew = oldLease, oldRenew }()
	var logs syncBuffer
	st, _ := storeCases[1].open(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s := st.(*s3Store)
	key := s.lockKey("ds")

	// A live holder, renewing: refused at once, however long it has held the lock.
	live, err := LockDir(ctx, st, "ds", "a live writer")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	start := time.Now()
	if _, err := LockDir(ctx, st, "ds", "me"); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "a live writer") {
		t.Fatalf("live holder: %v, want ErrLocked naming it", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a live holder was refused after %s, want at once", d)
	}
	live.Release()

	forge := func(lease time.Duration) {
		now := time.Now()
		data, _ := json.Marshal(lockInfo{Owner: "a task killed on another host", Host: "another-host", PID: 1, PIDNS: "x",
			Renewed: now, Expires: now.Add(lease), RenewEveryMS: 500})
		if _, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	// Just renewed: it may be alive, refused at once.
	forge(4 * time.Second)
	if _, err := LockDir(ctx, st, "ds", "me"); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "not renewed its lock for 2s") {
		t.Fatalf("just renewed: %v, want ErrLocked saying when a writer waits", err)
	}
	// Not renewed for two renewals: wait for the lease's end, then take it.
	time.Sleep(3200 * time.Millisecond)
	start = time.Now()
	l, err := LockDir(ctx, st, "ds", "me")
	if err != nil {
		t.Fatalf("a holder that stopped renewing: %v, want the lock after its lease", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s, want the lease's rest (under 1 s)", d)
	}
	l.Release()
	if got := logs.String(); strings.Count(got, "waiting") != 1 || !strings.Contains(got, "a task killed on another host") || !strings.Contains(got, "lease_ends=") {
		t.Errorf("log:\n%s\nwant one line saying it waits, naming the holder and the lease's end", got)
	}

	// Renewed while the next writer waits: refused then.
	forge(8 * time.Second)
	time.Sleep(3200 * time.Millisecond)
	errc := make(chan error, 1)
	go func() {
		l, err := LockDir(ctx, st, "ds", "me")
		if err == nil {
			l.Release()
		}
		errc <- err
	}()
	time.Sleep(time.Second)
	forge(8 * time.Second)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("renewed during the wait: %v, want ErrLocked", err)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("renewed during the wait, the writer still waits")
	}
}

// syncBuffer is a bytes.Buffer that a logger may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
