package prep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// A .jsonl.zst cut just before its frame's 4-byte checksum fails, whether the frame
// names its size or not.
func TestZstdCutBeforeChecksum(t *testing.T) {
	text := []byte(strings.Repeat("{\"text\":\"hello world\"}\n", 1000))
	for _, known := range []bool{true, false} {
		var data []byte
		if known {
			enc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
			data = enc.EncodeAll(text, nil)
		} else {
			var b strings.Builder
			enc, _ := zstd.NewWriter(&b, zstd.WithEncoderCRC(true))
			enc.Write(text)
			enc.Close()
			data = []byte(b.String())
		}
		p := filepath.Join(t.TempDir(), "c.jsonl.zst")
		os.WriteFile(p, data[:len(data)-4], 0o644)
		_, _, err := readAll(t, []string{p}, ReadOptions{OnError: Fail})
		if err == nil {
			t.Errorf("size known %v: a file missing its checksum read without error", known)
		}
	}
}
