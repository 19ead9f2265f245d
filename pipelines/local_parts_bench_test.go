//go:build linux

package pipelines

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// BenchmarkTokenizeRunLocalParts: `tokenize run` over eight .jsonl.zst files (benchJSONL
// cut into eight, BENCH_CORPUS, BENCH_RUN_MB) on all cores (GOMAXPROCS workers), as one
// run (parts=1) and as local parts (SuggestLocalParts, at least 2): MB of text per second
// of wall time and per CPU-second. One run reads one file at a time, ~800 MB of text per
// CPU-second for zstd, which keeps ~5 tokenizers busy; on 2 cores both rows are alike,
// on many cores the parts row is the one that keeps them all busy.
//
//	BENCH_CORPUS=.cache/bench/mixed.txt go test ./pipelines -run '^$' -bench TokenizeRunLocalParts -benchtime 2x
func BenchmarkTokenizeRunLocalParts(b *testing.B) {
	corpus, _ := benchJSONL(b)
	data, err := os.ReadFile(corpus)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var inputs []string
	for i, rest := 0, data; i < 8; i++ {
		n := len(rest)
		if i < 7 {
			n = len(data) / 8
			n += bytes.IndexByte(rest[n:], '\n') + 1
		}
		plain := filepath.Join(dir, fmt.Sprintf("f%d.jsonl", i))
		if err := os.WriteFile(plain, rest[:n], 0o644); err != nil {
			b.Fatal(err)
		}
		zst := plain + ".zst"
		compressZstd(b, plain, zst)
		os.Remove(plain)
		inputs, rest = append(inputs, zst), rest[n:]
	}
	workers := runtime.GOMAXPROCS(0)
	tok := gpt2(b)
	for _, parts := range []int{1, max(2, SuggestLocalParts(inputs, workers))} {
		b.Run(fmt.Sprintf("parts=%d", parts), func(b *testing.B) {
			if parts > workers {
				b.Skipf("%d parts for %d workers", parts, workers)
			}
			var wall, cpu time.Duration
			var text int64
			for b.Loop() {
				out := filepath.Join(b.TempDir(), "out")
				t0, c0 := time.Now(), processCPU()
				run := &TokenizeRun{Inputs: inputs, Store: dirStore(b, out), Name: "bench", Tokenizer: tok, AppendEOD: true, Workers: workers, LocalParts: parts}
				_, stats, err := run.Run(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				wall, cpu = wall+time.Since(t0), cpu+processCPU()-c0
				text += stats.TextBytes
			}
			b.ReportMetric(float64(text)/wall.Seconds()/1e6, "text_MB/s")
			b.ReportMetric(float64(text)/cpu.Seconds()/1e6, "text_MB/cpu-s")
		})
	}
}
