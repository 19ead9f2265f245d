package prep

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"gptkit/internal/fetch"

	"github.com/klauspost/compress/zstd"
)

// pzstd writes a 12-byte skippable frame (the next frame's size) before each frame.
// The reader accepts such a file, and so does CheckDownload: it refused it, and
// Fetch then deleted a copy put in place by hand (no sha256 known, as for the
// Pile's shards).
func TestPzstdDownloadAccepted(t *testing.T) {
	enc, _ := zstd.NewWriter(nil)
	frame := enc.EncodeAll([]byte("{\"text\":\"hello\"}\n"), nil)
	data := []byte{0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0}
	data = binary.LittleEndian.AppendUint32(data, uint32(len(frame)))
	data = append(data, frame...)
	dir := t.TempDir()
	dest := filepath.Join(dir, "00.jsonl.zst")
	os.WriteFile(dest, data, 0o644)
	if docs, _, err := readAll(t, []string{dest}, ReadOptions{}); err != nil || len(docs) != 1 {
		t.Fatalf("reader: %d docs, %v", len(docs), err)
	}
	if err := CheckDownload(dest, data); err != nil {
		t.Errorf("CheckDownload: %v", err)
	}
	ferr := fetch.FetchOne(context.Background(), fetch.File{Dest: dest}, fetch.Options{Validate: CheckDownload})
	if _, serr := os.Stat(dest); serr != nil {
		t.Errorf("Fetch removed the hand-placed file (%v); Fetch: %v", serr, ferr)
	}
}
