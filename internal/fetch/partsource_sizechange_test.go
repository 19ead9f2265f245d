package fetch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestResumeWithOtherTotalIsNotSpliced: a server with neither ETag nor Last-Modified (no
// If-Range possible) whose file changes during the download: the resume's 206 announces
// another total than the first response, so the download starts over (the bytes were
// appended, and v1's first half plus v2's tail taken as complete).
func TestResumeWithOtherTotalIsNotSpliced(t *testing.T) {
	v1 := randomBytes(1<<20, 11)
	v2 := randomBytes(1200000, 12)
	srv := newTestServer(t, nil)
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, _ []byte) bool {
		if n == 0 {
			dropAfter(w, v1, len(v1)/2)
		}
		var start int
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &start); err != nil {
			w.Header().Set("Content-Length", fmt.Sprint(len(v2)))
			w.Write(v2)
			return true
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(v2)-1, len(v2)))
		w.Header().Set("Content-Length", fmt.Sprint(len(v2)-start))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(v2[start:])
		return true
	})
	dest := filepath.Join(t.TempDir(), "f.jsonl")
	if err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/f.jsonl"}, Dest: dest}, fastOptions(t)); err != nil {
		t.Logf("error (fine): %v", err)
	}
	got, err := os.ReadFile(dest)
	if err == nil && !bytes.Equal(got, v1) && !bytes.Equal(got, v2) {
		t.Fatalf("Dest (%d bytes) is spliced from two versions: requests %q", len(got), srv.log())
	}
}
