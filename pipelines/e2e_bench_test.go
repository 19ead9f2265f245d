//go:build linux

package pipelines

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"gptkit/internal/testfiles"
	"gptkit/prep"
)

// BenchmarkEndToEndVsTokenizer measures the goal "end-to-end MB/s of input text vs
// tokenizer-only MB/s on the same cores, in one run (≥ 90%)": the same corpus (benchJSONL,
// 64 MB by default, as .jsonl, .jsonl.zst and .jsonl.gz; make bench gives it the mixed
// corpus, which does not compress 20× as repeated text does) through (a) the whole `tokenize run`
// pipeline into a directory store and (b) the tokenizer alone, EncodeBatch over the same
// texts already in memory, on the same number of workers (GOMAXPROCS). Both are MB/s of
// document text; e2e_pct is (a) / (b), e2e_cpu_pct the same ratio per CPU-second of this
// process (steadier where other processes share the cores). The two alternate within
// each iteration, each first every other iteration, so that load from elsewhere on the
// machine, and what one leaves behind for the next, hit both alike.
func BenchmarkEndToEndVsTokenizer(b *testing.B) {
	corpus, _ := benchJSONL(b)
	zst := filepath.Join(b.TempDir(), "corpus.jsonl.zst")
	compressZstd(b, corpus, zst)
	gz := filepath.Join(b.TempDir(), "corpus.jsonl.gz")
	compressGzip(b, corpus, gz)
	tok := gpt2(b)
	ctx := context.Background()
	workers := runtime.GOMAXPROCS(0)
	for _, tc := range []struct{ name, file string }{{"jsonl", corpus}, {"jsonl.zst", zst}, {"jsonl.gz", gz}} {
		b.Run(tc.name, func(b *testing.B) {
			var texts []string
			var textBytes int64
			if _, err := prep.ReadDocs(ctx, []string{tc.file}, prep.ReadOptions{}, func(d prep.Doc) error {
				texts = append(texts, d.Text)
				textBytes += int64(len(d.Text))
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			out := b.TempDir()
			var tE2E, tTok, cE2E, cTok time.Duration
			b.SetBytes(textBytes)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
				encodeOnly := func() {
					t0, c0 := time.Now(), processCPU()
					ids := tok.EncodeBatch(texts, workers)
					tTok, cTok = tTok+time.Since(t0), cTok+processCPU()-c0
					runtime.KeepAlive(ids)
				}
				// Every other round the tokenizer alone goes first: the second of a
				// pair runs after the first's work (the run's written files'
				// writeback, say), which moved a pair of commands by a few percent
				// (tools/ab_cpu.py).
				if i%2 == 1 {
					encodeOnly()
				}
				t0, c0 := time.Now(), processCPU()
				run := &TokenizeRun{Inputs: []string{tc.file}, Store: dirStore(b, out), Name: "bench", Tokenizer: tok, AppendEOD: true, Workers: workers}
				_, stats, err := run.Run(ctx)
				if err != nil {
					b.Fatal(err)
				}
				tE2E, cE2E = tE2E+time.Since(t0), cE2E+processCPU()-c0
				if stats.TextBytes != textBytes {
					b.Fatalf("the run saw %d bytes of text, the reader %d", stats.TextBytes, textBytes)
				}
				if i%2 == 0 {
					encodeOnly()
				}
			}
			e2e := float64(textBytes) * float64(b.N) / tE2E.Seconds() / 1e6
			tokOnly := float64(textBytes) * float64(b.N) / tTok.Seconds() / 1e6
			b.ReportMetric(e2e, "e2e_MB/s")
			b.ReportMetric(tokOnly, "tok_MB/s")
			b.ReportMetric(100*e2e/tokOnly, "e2e_pct")
			// The same per CPU-second: what the pipeline costs beyond tokenizing,
			// whatever else the machine runs meanwhile.
			b.ReportMetric(100*cTok.Seconds()/cE2E.Seconds(), "e2e_cpu_pct")
		})
	}
}

// BenchmarkTokenizeRunPeakRSS runs `tokenize run` (GPT-2, GOMAXPROCS workers, into a
// directory store) over $BENCH_RSS_MB MB (default 256) of generated JSONL, and reports
// the process's peak resident memory during the run (VmHWM, reset first through
// /proc/self/clear_refs): the pipeline keeps at most ~2×workers batches of 4 MB text and
// their ids, whatever the input size (goal: under 1 GiB).
func BenchmarkTokenizeRunPeakRSS(b *testing.B) {
	mb := 256
	if v, err := strconv.Atoi(os.Getenv("BENCH_RSS_MB")); err == nil && v > 0 {
		mb = v
	}
	corpus := filepath.Join(b.TempDir(), "big.jsonl")
	writeBigJSONL(b, corpus, int64(mb)<<20)
	fi, _ := os.Stat(corpus)
	tok := gpt2(b)
	ctx := context.Background()
	out := b.TempDir()
	var peak int64
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		os.RemoveAll(out)
		debug.FreeOSMemory() // the baseline: what the process holds between runs
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			b.Skipf("cannot reset the peak RSS: %v", err)
		}
		b.StartTimer()
		run := &TokenizeRun{Inputs: []string{corpus}, Store: dirStore(b, out), Name: "rss", Tokenizer: tok, AppendEOD: true, ShardBytes: 64 << 20}
		if _, _, err := run.Run(ctx); err != nil {
			b.Fatal(err)
		}
		peak = max(peak, procStatusKB(b, "VmHWM"))
	}
	b.ReportMetric(float64(peak)/1024, "peak_rss_MiB")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "workers")
}

// writeBigJSONL writes size bytes of JSONL: tinyshakespeare in 1-8 KB documents.
func writeBigJSONL(b *testing.B, path string, size int64) {
	text := string(testfiles.Read(b, "corpora/tinyshakespeare.txt"))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	var written int64
	pos, seed := 0, uint32(7)
	for written < size {
		seed = seed*1664525 + 1013904223
		n := 1000 + int(seed>>8)%7000
		if pos+n > len(text) {
			pos = 0
		}
		enc.Encode(map[string]string{"text": text[pos : pos+n]})
		pos += n
		written += int64(n) + 12
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
}

func compressZstd(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	zw, err := zstd.NewWriter(out)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(zw, in); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	out.Close()
}

// procStatusKB reads a "Name: N kB" line of /proc/self/status.
func procStatusKB(b *testing.B, name string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", name)
	return 0
}
