package fetch

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer serves files on 127.0.0.1, logs every request and counts the body bytes
// it sends.
type testServer struct {
	*httptest.Server

	mu       sync.Mutex
	files    map[string][]byte // URL path -> content
	requests []string          // "PATH RANGE" of every request, in order
	sent     int64             // body bytes written, all requests together
	// serve, if set, answers request n (0-based, counting every path) instead of
	// http.ServeContent when it returns true.
	serve func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool
}

func newTestServer(t *testing.T, files map[string][]byte) *testServer {
	t.Helper()
	s := &testServer{files: files}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, strings.TrimSpace(r.URL.Path+" "+r.Header.Get("Range")))
		serve := s.serve
		content, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		cw := &countingWriter{ResponseWriter: w, s: s}
		if serve != nil && serve(cw, r, n, content) {
			return
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(cw, r, filepath.Base(r.URL.Path), time.Time{}, bytes.NewReader(content))
	}))
	t.Cleanup(s.Close)
	return s
}

// log returns the requests so far.
func (s *testServer) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// bytesSent returns the body bytes written so far.
func (s *testServer) bytesSent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// setServe installs a custom handler (see testServer.serve).
func (s *testServer) setServe(fn func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool) {
	s.mu.Lock()
	s.serve = fn
	s.mu.Unlock()
}

// countingWriter counts the body bytes a handler writes.
type countingWriter struct {
	http.ResponseWriter
	s *testServer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.s.mu.Lock()
	w.s.sent += int64(n)
	w.s.mu.Unlock()
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer (to flush).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// dropAfter sends a full Content-Length and the first n bytes of content, then cuts
// the connection.
func dropAfter(w http.ResponseWriter, content []byte, n int) {
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	w.WriteHeader(http.StatusOK)
	w.Write(content[:n])
	http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sha(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// fastOptions retries quickly and logs to t.
func fastOptions(t *testing.T) Options {
	return Options{Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Logger: testLogger(t)}
}

// wantFile fails the test unless path holds exactly want, with no .part or .lock beside it.
func wantFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, sha256 %s; want %d bytes, sha256 %s", path, len(got), sha(got), len(want), sha(want))
	}
	for _, p := range []string{path + ".part", path + ".lock"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind (stat error %v)", p, err)
		}
	}
}

// noFile fails the test if path exists.
func noFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (stat error %v)", path, err)
	}
}

// errorContains fails the test unless err contains every one of want.
func errorContains(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
