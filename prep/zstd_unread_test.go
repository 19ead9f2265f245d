package prep

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestCorruptFrameUnreadBytes corrupts one frame of a many-frame .jsonl.zst read
// with frames decoded in parallel: the file's bytes not read count from that frame
// on, and the error names where it starts, not how far the decoders had read ahead
// (they once said 0 bytes unread of a file broken near its start).
func TestCorruptFrameUnreadBytes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var in strings.Builder
	for i := range 60000 {
		fmt.Fprintf(&in, "{\"text\":\"line %d, %x\"}\n", i+1, i*2654435761)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	const frameSize, broken = 64 << 10, 3
	var data []byte
	var starts []int
	for rest := []byte(in.String()); len(rest) > 0; {
		n := min(frameSize, len(rest))
		starts = append(starts, len(data))
		data, rest = enc.EncodeAll(rest[:n], data), rest[n:]
	}
	if len(starts) < 10 {
		t.Fatalf("%d frames", len(starts))
	}
	data[starts[broken]+(starts[broken+1]-starts[broken])/2] ^= 0xff
	path := filepath.Join(t.TempDir(), "broken.jsonl.zst")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = readAll(t, []string{path}, ReadOptions{})
	if want := fmt.Sprintf("having read %d of the file's %d bytes", starts[broken], len(data)); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to say %q", err, want)
	}
	docs, stats, err := readAll(t, []string{path}, ReadOptions{AcceptTruncated: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(data) - starts[broken]); stats.UnreadBytes != want || stats.Truncated != 1 {
		t.Fatalf("unread %d bytes (truncated %d), want %d: the frames from the broken one on", stats.UnreadBytes, stats.Truncated, want)
	}
	if len(docs) == 0 || len(docs) > broken*frameSize/20 {
		t.Fatalf("%d documents kept, want those of the first %d frames", len(docs), broken)
	}
}
