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
