package fetch

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestFailedNextSourceKeepsPart: a file with two sources and no known sha256 (a Pile
// shard) whose first source goes down part way keeps its .part when the second fails
// too, so that a rerun resumes it (the .part was deleted before the second source even
// answered, and the rerun began at byte 0).
func TestFailedNextSourceKeepsPart(t *testing.T) {
	content := randomBytes(1<<20, 7)
	first := newTestServer(t, map[string][]byte{"/f.jsonl.zst": content})
	first.setServe(func(w http.ResponseWriter, r *http.Request, n int, c []byte) bool {
		if n == 0 {
			dropAfter(w, c, len(c)/2)
		}
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return true
	})
	dead := newTestServer(t, nil) // 404 for everything, as a dead host's parking page
	dest := filepath.Join(t.TempDir(), "f.jsonl.zst")
	opt := fastOptions(t)
	opt.Retries = 2
	err := FetchOne(context.Background(), File{URLs: []string{first.URL + "/f.jsonl.zst", dead.URL + "/f.jsonl.zst"}, Dest: dest}, opt)
	if err == nil {
		t.Fatal("no error")
	}
	t.Logf("error: %v", err)
	info, serr := os.Stat(dest + ".part")
	if serr != nil {
		t.Fatalf("after the failure, %s.part is gone (%v): the %d bytes downloaded are lost and a rerun starts from byte 0", filepath.Base(dest), serr, len(content)/2)
	}
	if info.Size() != int64(len(content)/2) {
		t.Fatalf("part holds %d bytes, want %d", info.Size(), len(content)/2)
	}
}
