package prep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestProgressFollowsFrames: the bytes a .jsonl.zst of a few large frames reports to
// Progress follow the data handed on, not the reading ahead of the frames decoded in
// parallel. They once reached the file's size with the first documents (a progress
// line at 100%, "ETA 0:00", from the start of a prep of such a file).
func TestProgressFollowsFrames(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // frames are decoded in parallel from 2 procs up
	rng := rand.New(rand.NewPCG(7, 8))
	var sb strings.Builder
	const docs = 24000
	for i := range docs {
		fmt.Fprintf(&sb, "{\"text\": \"doc %d %x %x %x\"}\n", i, rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	data := []byte(sb.String())
	comp := zstdFrames(t, data, len(data)/6+1, true)
	path := filepath.Join(t.TempDir(), "f.jsonl.zst")
	if err := os.WriteFile(path, comp, 0o644); err != nil {
		t.Fatal(err)
	}
	var bytesAt, docsAt, calls int64
	var early int64 = -1 // the bytes reported once a quarter of the documents were
	_, err := ReadDocs(context.Background(), []string{path}, ReadOptions{Progress: func(b, d int64) {
		bytesAt += b
		docsAt += d
		calls++
		if early < 0 && docsAt >= docs/4 {
			early = bytesAt
		}
	}}, func(d Doc) error {
		if d.Line == 1 {
			time.Sleep(200 * time.Millisecond) // a slow consumer (the tokenizers): the frames are read ahead meanwhile
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if bytesAt != int64(len(comp)) || docsAt != docs {
		t.Fatalf("reported %d bytes, %d documents; want %d, %d", bytesAt, docsAt, len(comp), docs)
	}
	if early < 0 || early > int64(len(comp))/2 {
		t.Errorf("a quarter of the documents in, %d of the file's %d bytes were reported (%d calls); want at most half", early, len(comp), calls)
	}
}
