package fetch

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestChangedFileBetweenRunsIsNotSpliced: a file with no known size or sha256 changes
// on the server between two runs; the rerun resumes with If-Range from the validator
// recorded beside the .part, so the server sends the new version whole (a bare Range
// request spliced the old version's first half onto the new one's second).
func TestChangedFileBetweenRunsIsNotSpliced(t *testing.T) {
	v1 := bytes.Repeat([]byte("{\"text\": \"old version\"}\n"), 40000)
	v2 := bytes.Repeat([]byte("{\"text\": \"NEW VERSION\"}\n"), 40000)
	srv := newTestServer(t, nil)
	var cur []byte
	var etag string
	cut := true
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, _ []byte) bool {
		srv.mu.Lock()
		content, tag, drop := cur, etag, cut
		srv.mu.Unlock()
		w.Header().Set("ETag", tag)
		if drop {
			dropAfter(w, content, len(content)/2)
		}
		http.ServeContent(w, r, "c.jsonl", time.Time{}, bytes.NewReader(content))
		return true
	})
	dest := filepath.Join(t.TempDir(), "c.jsonl")
	f := File{URLs: []string{srv.URL + "/c.jsonl"}, Dest: dest}

	// Run 1: v1, the connection drops half way and there are no retries left.
	cur, etag = v1, `"v1"`
	opt := fastOptions(t)
	opt.Retries = -1
	if err := FetchOne(context.Background(), f, opt); err == nil {
		t.Fatal("run 1 succeeded")
	}
	if info, err := os.Stat(dest + ".part"); err != nil || info.Size() != int64(len(v1)/2) {
		t.Fatalf("part after run 1: %v %v", info, err)
	}

	// Between runs, the server's file is replaced.
	srv.mu.Lock()
	cur, etag, cut = v2, `"v2"`, false
	srv.mu.Unlock()
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dest)
	if !bytes.Equal(got, v2) {
		t.Fatalf("Dest is neither version: its first half is v1's (%v), its second v2's (%v); requests %q",
			bytes.Equal(got[:len(v1)/2], v1[:len(v1)/2]), bytes.Equal(got[len(v1)/2:], v2[len(v1)/2:]), srv.log())
	}
}
