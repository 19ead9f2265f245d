package prep

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFilterSet reads 8 MB of 4 KB Pile-style lines (MB/s of JSONL) without a
// filter, with one that keeps every line (the cost of finding meta.pile_set_name),
// and with one that keeps none (a filtered-out line is scanned, never decoded):
//
//	go test ./prep -run '^$' -bench FilterSet -cpu 1
func BenchmarkFilterSet(b *testing.B) {
	line := append(benchLine(b, 4096), '\n') // meta.pile_set_name is "Pile-CC"
	data := bytes.Repeat(line, 8<<20/len(line))
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bench := range []struct{ name, set string }{{"none", ""}, {"keep-all", "Pile-CC"}, {"keep-none", "Enron Emails"}} {
		b.Run(bench.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for range b.N {
				_, err := ReadDocs(context.Background(), []string{path}, ReadOptions{FilterSet: bench.set}, func(Doc) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
