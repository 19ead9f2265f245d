package prep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gptkit/internal/testfiles"
)

// BenchmarkReadParallel reads four .jsonl.zst files of 16 MB of text each (4 KB
// documents of $BENCH_CORPUS, default tinyshakespeare repeated) with 1, 2 and 4 readers
// (ReadRangeBatchesParallel) into a consumer that only hands the texts back: MB/s of
// text on all cores, and per CPU-second. The reader count a run uses grows with its
// workers (pipelines.fileReaders); on n cores, n readers should read ~n× one's MB/s.
//
//	BENCH_CORPUS=.cache/bench/mixed.txt go test ./prep -run '^$' -bench ReadParallel -benchtime 3x
func BenchmarkReadParallel(b *testing.B) {
	var src []byte
	if p := os.Getenv("BENCH_CORPUS"); p != "" {
		var err error
		if src, err = os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	} else {
		src = testfiles.Read(b, "corpora/tinyshakespeare.txt")
	}
	const fileText, docText = 16 << 20, 4 << 10
	dir := b.TempDir()
	var ranges []FileRange
	off := 0
	for f := range 4 {
		var jsonl bytes.Buffer
		for n := 0; n < fileText; n += docText {
			if off+docText > len(src) {
				off = 0
			}
			line, _ := json.Marshal(map[string]string{"text": string(bytes.ToValidUTF8(src[off:off+docText], nil))})
			jsonl.Write(append(line, '\n'))
			off += docText
		}
		name := fmt.Sprintf("part%d.jsonl.zst", f)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, compress(b, name, jsonl.Bytes()), 0o644); err != nil {
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
