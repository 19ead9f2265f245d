package storage

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRerunRemovesDeadTemps: a writer killed before Commit leaves a temp file; the next
// Create of the same key removes it, and no sweep (whatever its age limit) ever removes
// a live writer's temp file (issue 15, item 14).
func TestRerunRemovesDeadTemps(t *testing.T) {
	st, loc := storeCases[0].open(t, Options{})
	const key = "data/a_text_document.bin"
	cmd := startHelper(t, "crash", loc, key)
	// While the writer lives its temp file stays, even for a sweep of any age.
	if n, err := Sweep(ctx, st, key, 0); err != nil || n != 0 {
		t.Fatalf("Sweep of a live writer's temp file = %d, %v; want 0", n, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := leftovers(t, st, key); n != 1 {
		t.Fatalf("%d temp files after the kill, want 1", n)
	}
	// The rerun: a live writer of the key (this one) beside the dead one's temp file.
	live, err := st.Create(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	if n := leftovers(t, st, key); n != 1 {
		t.Fatalf("%d temp files while the rerun writes, want its own only", n)
	}
	other, err := st.Create(ctx, key) // a second live writer must not remove the first's
	if err != nil {
		t.Fatal(err)
	}
	other.Abort()
	live.Write([]byte("x"))
	if err := live.Commit(); err != nil {
		t.Fatalf("the rerun's commit: %v", err)
	}
	assertNoLeftovers(t, st, key)
}

// TestSymlinkOutsideRefused: a key that is a symbolic link leading out of the store's
// directory is refused by Open, Stat, LocalPath and Fetch; one that stays inside is an
// object like any other (issue 15, item 15).
func TestSymlinkOutsideRefused(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("not yours"), 0o644)
	os.WriteFile(filepath.Join(root, "real.bin"), []byte("inside"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "a.bin"))
	os.Symlink("real.bin", filepath.Join(root, "b.bin"))
	os.Symlink(outside, filepath.Join(root, "sub"))
	st := mustOpen(t, root, Options{})
	for _, key := range []string{"a.bin", "sub/secret"} {
		if _, err := st.Open(ctx, key); err == nil || !strings.Contains(err.Error(), "outside the store's directory") {
			t.Errorf("Open(%s) = %v, want a refusal", key, err)
		}
		if _, err := st.Stat(ctx, key); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("Stat(%s) = %v, want a refusal", key, err)
		}
		if p, ok := st.LocalPath(key); ok {
			t.Errorf("LocalPath(%s) = %s", key, p)
		}
		if _, err := Fetch(ctx, st, key, t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("Fetch(%s) = %v, want a refusal", key, err)
		}
	}
	if o, err := st.Open(ctx, "b.bin"); err != nil {
		t.Errorf("a link inside the store: %v", err)
	} else {
		o.Close()
	}
	// A store whose own directory is reached through a link is fine.
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(root, link)
	if o, err := mustOpen(t, link, Options{}).Open(ctx, "real.bin"); err != nil {
		t.Errorf("a store opened through a link: %v", err)
	} else {
		o.Close()
	}
}

// TestS3Stall: an S3 endpoint that accepts connections and then says nothing (a stopped
// server), or stops in the middle of a body, fails the request after the stall timeout
// and its retries, with an error that says so, instead of hanging (issue 15, item 6).
// The test bounds itself: a hang fails it after a minute.
func TestS3Stall(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "us-east-1")
	const stall = 300 * time.Millisecond
	t.Setenv("GPTKIT_S3_STALL_TIMEOUT", stall.String())
	bounded := func(t *testing.T, what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- f() }()
		select {
		case err := <-done:
			t.Logf("%s: %s: %v", what, time.Since(start).Round(time.Millisecond), err)
			return err
		case <-time.After(time.Minute):
			t.Fatalf("%s: still hanging after a minute (stall timeout %s)", what, stall)
			return nil
		}
	}

	t.Run("silent server", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var held []net.Conn
		var mu sync.Mutex
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				held = append(held, c) // accepted, never answered
				mu.Unlock()
			}
		}()
		defer func() {
			mu.Lock()
			for _, c := range held {
				c.Close()
			}
			mu.Unlock()
		}()
		err = bounded(t, "Open", func() error {
			_, err := Open(ctx, "s3://bucket/x", Options{S3Endpoint: "http://" + ln.Addr().String()})
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "stalled") || !strings.Contains(err.Error(), "stopped answering") {
			t.Errorf("Open = %v, want a stall named", err)
		}
	})

	t.Run("body stops", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		var gets atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("ETag", `"e"`)
			h.Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
			switch {
			case r.URL.Path == "/bucket" || r.URL.Path == "/bucket/":
				w.WriteHeader(200)
			case r.Method == http.MethodHead:
				h.Set("Content-Length", "100")
				w.WriteHeader(200)
			default:
				h.Set("Content-Length", "100")
				h.Set("Content-Range", "bytes 0-99/100")
				w.WriteHeader(206)
				if gets.Add(1) == 1 {
					w.Write(make([]byte, 10)) // then nothing more, on any connection
				}
				w.(http.Flusher).Flush()
				select { // stopped in the middle of the body
				case <-release:
				case <-r.Context().Done():
				}
			}
		}))
		defer srv.Close()
		st, err := Open(ctx, "s3://bucket/x", Options{S3Endpoint: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		obj, err := st.Open(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		defer obj.Close()
		err = bounded(t, "Read", func() error {
			_, err := io.ReadAll(obj)
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "stalled") {
			t.Errorf("Read = %v, want a stall named", err)
		}
	})
}
