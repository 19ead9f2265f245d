package prep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadParallel reads four .jsonl.zst files of 16 MB of text each (4 KB
// documents of $BENCH_CORPUS, default tinyshakespeare repeated) with 1, 2 and 4 readers
// (ReadRangeBatchesParallel) into a consumer that only hands the texts back: MB/s of
// text on all cores, and per CPU-second. The reader count a run uses grows with its
// workers (pipelines.fileReaders); on n cores, n readers should read ~n× one's MB/s.
//
//	BENCH_CORPUS=.cache/bench/mixed.txt go test ./prep -run '^$' -bench ReadParallel -benchtime 3x
func BenchmarkReadParallel(b *testing.B) {
	src := benchCorpus(b)
	const fileText = 16 << 20
	text := string(bytes.Repeat(src, (4*fileText)/len(src)+1)[:4*fileText])
	dir := b.TempDir()
	var ranges []FileRange
	for f := range 4 {
		name := fmt.Sprintf("part%d.jsonl.zst", f)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, compress(b, name, benchJSONL(text[f*fileText:(f+1)*fileText], 4096)), 0o644); err != nil {
			b.Fatal(err)
		}
		ranges = append(ranges, FileRange{File: path, End: -1})
	}
	for _, readers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			var text int64
			cpu0 := rusageCPU()
			for b.Loop() {
				pool := new(TextPool)
				opt := ReadOptions{TextPool: pool}
				st, err := ReadRangeBatchesParallel(context.Background(), ranges, opt, 1<<20, readers, func(docs []Doc) error {
					pool.Release(docs)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				text += st.TextBytes
			}
			if cpu := rusageCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(text)/1e6/cpu.Seconds(), "MB/cpu-s")
			}
			b.ReportMetric(float64(text)/1e6/b.Elapsed().Seconds(), "MB/s")
		})
	}
}
