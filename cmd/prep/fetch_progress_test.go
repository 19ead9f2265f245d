package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gptkit/internal/fetch"
)

// TestParallelDownloadsCountProgress fetches several files at once with progress
// on and off: the progress callback runs on every downloading goroutine (it once
// wrote a plain map from all of them, "fatal error: concurrent map writes" on any
// real-size prep with parallel downloads).
func TestParallelDownloadsCountProgress(t *testing.T) {
	const files, size = 8, 8 << 20
	body := bytes.Repeat([]byte("{\"text\": \"x\"}\n"), size/14+1)[:size]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "f.jsonl", time.Time{}, bytes.NewReader(body))
	}))
	defer srv.Close()
	for _, mode := range []string{"on", "off"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			j := &job{flags: &jobFlags{downloads: files, progress: mode}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), stderr: io.Discard}
			for i := range files {
				j.fetches = append(j.fetches, fetch.File{URLs: []string{fmt.Sprintf("%s/f%d.jsonl", srv.URL, i)}, Dest: filepath.Join(dir, fmt.Sprintf("f%d.jsonl", i)), Size: size})
			}
			if err := j.fetch(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, f := range j.fetches {
				if st, err := os.Stat(f.Dest); err != nil || st.Size() != size {
					t.Fatalf("%s: %v, %v", f.Dest, st, err)
				}
			}
		})
	}
}

// TestDownloadProgressCountsAgainstServerSizes resumes a download whose size only
// the server knows (the Pile's, Enron's: the catalog has none): the bar once counted
// against the catalog's sizes only, so a Pile download showed no total, percentage or
// ETA although the plan had just printed the server's size; and it counted the
// resumed .part's bytes as downloaded at once, inflating the MB/s. Now it counts this
// run's bytes against what is still to come.
func TestDownloadProgressCountsAgainstServerSizes(t *testing.T) {
	const size, kept = 1 << 20, 300 << 10
	body := bytes.Repeat([]byte("{\"text\": \"y\"}\n"), size/14+1)[:size]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "f.jsonl", time.Time{}, bytes.NewReader(body))
	}))
	defer srv.Close()
	dir := t.TempDir()
	dest := filepath.Join(dir, "f.jsonl")
	if err := os.WriteFile(dest+".part", body[:kept], 0o644); err != nil {
		t.Fatal(err)
	}
	var logs, stderr bytes.Buffer
	j := &job{name: "x", flags: &jobFlags{downloads: 1, progress: "on"}, log: slog.New(slog.NewTextHandler(&logs, nil)), stderr: &stderr}
	j.fetches = []fetch.File{{URLs: []string{srv.URL + "/f.jsonl"}, Dest: dest}}
	if err := j.fetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(dest); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("%s: %d bytes, %v", dest, len(got), err)
	}
	want := fmt.Sprintf(`msg="download done" bytes=%d total_bytes=%d percent=100 `, size-kept, size-kept)
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("the download's summary is not %q:\n%s", want, logs.String())
	}
	// The plan says what is left, of what size (it said "1 file, 1.0 MB").
	if want := "to download: 1 file, 741.4 kB of 1.0 MB left (sizes from the server): "; !strings.Contains(stderr.String(), want) {
		t.Errorf("the plan does not say %q:\n%s", want, stderr.String())
	}
	if strings.Contains(logs.String(), "docs=") { // a download has none: it said docs=0
		t.Fatalf("the download's log counts documents:\n%s", logs.String())
	}
}
