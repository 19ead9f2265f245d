package prep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadParallel reads 64 MB of text (4 KB documents of $BENCH_CORPUS, default
// tinyshakespeare repeated) with 1, 2 and 4 readers (ReadRangeBatchesParallel) into a
// consumer that only hands the texts back: MB/s of text on all cores, and per
// CPU-second. The reader count a run uses grows with its workers
// (pipelines.fileReaders); on n cores, n readers should read ~n× one's MB/s. Inputs:
// four .jsonl.zst files of 16 MB of text (zst4: a compressed file is read from its start
// by one reader, the next ones only a few batches ahead), and one uncompressed .jsonl
// (jsonl1: read in pieces by all the readers).
//
//	BENCH_CORPUS=.cache/bench/mixed.txt go test ./prep -run '^$' -bench ReadParallel -benchtime 3x
func BenchmarkReadParallel(b *testing.B) {
	src := benchCorpus(b)
	const fileText = 16 << 20
	text := string(bytes.Repeat(src, (4*fileText)/len(src)+1)[:4*fileText])
	dir := b.TempDir()
	var zst4 []FileRange
	for f := range 4 {
		name := fmt.Sprintf("part%d.jsonl.zst", f)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, compress(b, name, benchJSONL(text[f*fileText:(f+1)*fileText], 4096)), 0o644); err != nil {
			b.Fatal(err)
		}
		zst4 = append(zst4, FileRange{File: path, End: -1})
	}
	jsonl1 := filepath.Join(dir, "all.jsonl")
	if err := os.WriteFile(jsonl1, benchJSONL(text, 4096), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		name   string
		ranges []FileRange
	}{{"zst4", zst4}, {"jsonl1", []FileRange{Whole(jsonl1)}}} {
		for _, readers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/readers=%d", in.name, readers), func(b *testing.B) {
				var text int64
				cpu0 := rusageCPU()
				for b.Loop() {
					pool := new(TextPool)
					opt := ReadOptions{TextPool: pool}
					st, err := ReadRangeBatchesParallel(context.Background(), in.ranges, opt, 1<<20, readers, func(docs []Doc) error {
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
}
