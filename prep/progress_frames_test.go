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

// TestProgressWhileSkipping: the documents a resumed run skips (SkipDocs) are read,
// and their bytes now count as read while they are: a resumed prep's line stayed at
// 0% until the first document after them.
func TestProgressWhileSkipping(t *testing.T) {
	var sb strings.Builder
	const docs = 20000
	for i := range docs {
		fmt.Fprintf(&sb, "{\"text\": \"document %d\"}\n", i)
	}
	path := filepath.Join(t.TempDir(), "f.jsonl")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var bytesAt int64
	first := int64(-1) // the bytes reported when the first document was handed on
	_, err := ReadDocs(context.Background(), []string{path}, ReadOptions{SkipDocs: docs * 3 / 4, Progress: func(b, _ int64) { bytesAt += b }},
		func(Doc) error {
			if first < 0 {
				first = bytesAt
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if size := int64(sb.Len()); first < size/2 || bytesAt != size {
		t.Errorf("%d bytes reported when the first document after the skipped ones came, %d in all; want at least half the file's %d, then all", first, bytesAt, size)
	}
}
