package prep

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// BenchmarkReaderAlone measures what `tokenize run`'s single reader goroutine does for
// each batch, alone: ReadBatches (JSON parsing, decompression, the text arrays of a
// TextPool, released once a batch is handed on) over $BENCH_CORPUS (default
// tinyshakespeare) repeated to 64 MB of text, as 4 KB JSONL documents, .jsonl,
// .jsonl.zst (klauspost's streaming writer, its defaults: one frame) and .jsonl.gz. MB of text per CPU-second of the process:
// divided by a tokenizer's MB per CPU-second, how many tokenizers one reader keeps
// busy on a many-core node.
//
//	BENCH_CORPUS=$PWD/.cache/bench/mixed.txt go test ./prep -run '^$' -bench ReaderAlone -cpu 1
func BenchmarkReaderAlone(b *testing.B) {
	src := benchCorpus(b)
	text := string(bytes.Repeat(src, (64<<20)/len(src)+1)[:64<<20])
	jsonl := benchJSONL(text, 4096)
	dir := b.TempDir()
	for _, name := range []string{"docs.jsonl", "docs.jsonl.zst", "docs.jsonl.gz"} {
		path := filepath.Join(dir, name)
		data := jsonl
		switch {
		case strings.HasSuffix(name, ".zst"): // as BenchmarkEndToEndVsTokenizer writes it
			var buf bytes.Buffer
			zw, err := zstd.NewWriter(&buf)
			if err != nil {
				b.Fatal(err)
			}
			zw.Write(data)
			if err := zw.Close(); err != nil {
				b.Fatal(err)
			}
			data = buf.Bytes()
		case strings.HasSuffix(name, ".gz"):
			data = compress(b, name, data)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			pool := new(TextPool)
			opt := ReadOptions{OnError: Fail, TextPool: pool}
			var textBytes int64
			b.ResetTimer()
			cpu0 := rusageCPU()
			for range b.N {
				st, err := ReadBatches(context.Background(), []string{path}, opt, 1<<20, func(docs []Doc) error {
					pool.Release(docs)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				textBytes = st.TextBytes
			}
			if cpu := rusageCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(textBytes)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
			}
		})
	}
}
