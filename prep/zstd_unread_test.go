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
// with frames decoded in parallel: the error and the file's bytes not read name a
// place within that frame (it is decoded again as a stream, up to the damage), not
// how far the decoders had read ahead (they once said 0 bytes unread of a file broken
// near its start).
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
	var read, size int
	if err == nil {
		t.Fatal("no error")
	}
	if i := strings.Index(err.Error(), "having read "); i < 0 {
		t.Fatalf("error %v: does not say how far it read", err)
	} else if _, serr := fmt.Sscanf(err.Error()[i:], "having read %d of the file's %d bytes", &read, &size); serr != nil || size != len(data) || read < starts[broken] || read > starts[broken+1] {
		t.Fatalf("error %v: want a place within the broken frame [%d,%d] of %d bytes", err, starts[broken], starts[broken+1], len(data))
	}
	docs, stats, err := readAll(t, []string{path}, ReadOptions{AcceptTruncated: true})
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := int64(len(data)-starts[broken+1]), int64(len(data)-starts[broken]); stats.UnreadBytes < lo || stats.UnreadBytes > hi || stats.Truncated != 1 {
		t.Fatalf("unread %d bytes (truncated %d), want [%d,%d]: the frames from within the broken one on", stats.UnreadBytes, stats.Truncated, lo, hi)
	}
	if len(docs) < broken*frameSize/40 || len(docs) > (broken+1)*frameSize/20 {
		t.Fatalf("%d documents kept, want those of the first %d frames and the broken one's up to the damage", len(docs), broken)
	}
}

// TestTruncatedStreamUnreadBytes: a single-frame .jsonl.zst (zstd's own output: no
// content size, so the streaming decoder) cut short reports the bytes it did read,
// not 0 (the parallel path's frame start) and the whole file unread.
func TestTruncatedStreamUnreadBytes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var in strings.Builder
	for i := range 60000 {
		fmt.Fprintf(&in, "{\"text\":\"line %d, %x\"}\n", i+1, i*2654435761)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	data := enc.EncodeAll([]byte(in.String()), nil)
	data[len(data)/2] ^= 0xff // a known-size frame: decoded by a worker
	path := filepath.Join(t.TempDir(), "cut.jsonl.zst")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = readAll(t, []string{path}, ReadOptions{})
	if err == nil || strings.Contains(err.Error(), "having read 0 of") {
		t.Fatalf("error %v: want the bytes read", err)
	}
	_, stats, err := readAll(t, []string{path}, ReadOptions{AcceptTruncated: true})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Truncated != 1 || stats.UnreadBytes >= int64(len(data))/2 {
		t.Fatalf("unread %d of %d bytes (truncated %d): want the few the decoder had not read", stats.UnreadBytes, len(data), stats.Truncated)
	}
}
