package prep

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadDocs reads 8 MB of 4 KB Pile-style lines, plain and compressed (MB/s
// of JSONL). The zstd file has a 128 MiB window (zstd --long=27), whose setup, about
// 15 ms a file, is a good part of the time on a file this small.
//
//	go test ./prep -run '^$' -bench ReadDocs -cpu 1
func BenchmarkReadDocs(b *testing.B) {
	line := append(benchLine(b, 4096), '\n')
	data := bytes.Repeat(line, 8<<20/len(line))
	for _, name := range []string{"bench.jsonl", "bench.jsonl.zst", "bench.jsonl.gz"} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), name)
			if err := os.WriteFile(path, compress(b, name, data), 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				_, err := ReadDocs(context.Background(), []string{path}, ReadOptions{}, func(Doc) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
