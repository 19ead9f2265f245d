//go:build linux

package pipelines

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/tokenize"
)

// benchStripeBytes is the stripe size of the striped benchmarks: $BENCH_STRIPE_MB MiB
// (default 4, so that the default 64 MB corpus has 16 stripes, as a 1 GB file has of
// the runs' 64 MiB).
func benchStripeBytes() int64 {
	mb := 4
	if v, err := strconv.Atoi(os.Getenv("BENCH_STRIPE_MB")); err == nil && v > 0 {
		mb = v
	}
	return int64(mb) << 20
}

// BenchmarkStripeSkip measures what a worker pays for the stripes of a shared .jsonl.zst
// file it does not own, against what tokenizing costs, on the same file (benchJSONL,
// $BENCH_RUN_MB MB, zstd level 3). All figures are MB/s of uncompressed JSONL, one
// goroutine reading:
//
//   - decode_MB/s: the zstd stream alone, to io.Discard;
//   - skip_MB/s: a striped range that owns none of the file's stripes (decompression
//     and the newline scan that finds where each line starts: what skipping costs);
//   - parse_MB/s: the file read whole, every line parsed and its text handed on;
//   - tok_MB/s_per_core: the tokenizer (GPT-2) alone on the texts, one core;
//   - skip_per_tok: skip_MB/s / tok_MB/s_per_core, the number of cores whose
//     tokenizing one skipping reader keeps up with;
//   - zstd_ratio: the JSONL's size over the .jsonl.zst's;
//   - gz_skip_MB/s: skip_MB/s for the same JSONL gzipped (.jsonl.gz, level 6), and
//     gz_skip_per_tok.
//
// A worker that shares a file of n uncompressed bytes with k-1 others decompresses and
// scans n bytes and tokenizes n/k: with c cores, about n/skip + n/(k·c·tok) of work
// for the reader and the tokenizers, which overlap (the reader runs ahead while the
// tokenizers work through its queue).
func BenchmarkStripeSkip(b *testing.B) {
	corpus, size := benchJSONL(b)
	zst := filepath.Join(b.TempDir(), "corpus.jsonl.zst")
	compressZstd(b, corpus, zst)
	gz := filepath.Join(b.TempDir(), "corpus.jsonl.gz")
	compressGzip(b, corpus, gz)
	ctx := context.Background()
	var texts []string
	var textBytes int64
	if _, err := prep.ReadDocs(ctx, []string{zst}, prep.ReadOptions{}, func(d prep.Doc) error {
		texts = append(texts, d.Text)
		textBytes += int64(len(d.Text))
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	tok := gpt2(b)
	// Owns stripe 2^30-1 only: none of this file's.
	none := prep.Striped(zst, benchStripeBytes(), 1<<30, 1<<30-1)
	gzNone := prep.Striped(gz, benchStripeBytes(), 1<<30, 1<<30-1)
	skip := func(rg prep.FileRange) time.Duration {
		t0 := time.Now()
		st, err := prep.ReadRanges(ctx, []prep.FileRange{rg}, prep.ReadOptions{}, func(prep.Doc) error {
			b.Fatal("a document of a stripe not owned")
			return nil
		})
		if err != nil || st.Docs != 0 {
			b.Fatalf("%+v %v", st, err)
		}
		return time.Since(t0)
	}
	var tDecode, tSkip, tGzSkip, tParse, tTok time.Duration
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f, err := os.Open(zst)
		if err != nil {
			b.Fatal(err)
		}
		zr, err := zstd.NewReader(f, zstd.WithDecoderMaxWindow(1<<29))
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, zr); err != nil || n != size {
			b.Fatalf("decoded %d bytes of %d: %v", n, size, err)
		}
		zr.Close()
		f.Close()
		tDecode += time.Since(t0)

		tSkip += skip(none)
		tGzSkip += skip(gzNone)

		t0 = time.Now()
		var n int64
		if _, err := prep.ReadDocs(ctx, []string{zst}, prep.ReadOptions{}, func(d prep.Doc) error {
			n += int64(len(d.Text))
			return nil
		}); err != nil || n != textBytes {
			b.Fatalf("%d bytes of text, want %d: %v", n, textBytes, err)
		}
		tParse += time.Since(t0)

		t0 = time.Now()
		runtime.KeepAlive(tok.EncodeBatch(texts, 1))
		tTok += time.Since(t0)
	}
	mbs := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(mbs(tDecode), "decode_MB/s")
	b.ReportMetric(mbs(tSkip), "skip_MB/s")
	b.ReportMetric(mbs(tParse), "parse_MB/s")
	b.ReportMetric(mbs(tTok), "tok_MB/s_per_core")
	b.ReportMetric(mbs(tSkip)/mbs(tTok), "skip_per_tok")
	if fi, err := os.Stat(zst); err == nil {
		b.ReportMetric(float64(size)/float64(fi.Size()), "zstd_ratio")
	}
	b.ReportMetric(mbs(tGzSkip), "gz_skip_MB/s")
	b.ReportMetric(mbs(tGzSkip)/mbs(tTok), "gz_skip_per_tok")
}

func compressGzip(b *testing.B, src, dst string) {
	in, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	zw := gzip.NewWriter(out)
	if _, err := zw.Write(in); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	out.Close()
}

// BenchmarkStripedParts runs the k parts (the -cpu flag's GOMAXPROCS workers each) that
// share one .jsonl.zst file by stripes (benchJSONL, stripes of $BENCH_STRIPE_MB MiB),
// one after the other, as the tasks of an array job would each run on a node of their
// own, against a single run of the file; k is $BENCH_STRIPE_PARTS (default 4). It
// reports
//
//   - speedup: the single run's wall time over the slowest part's (k at most: the parts
//     tokenize 1/k each but all decompress the whole file);
//   - cpu_speedup: the same in CPU time of this process, steadier where other processes
//     share the cores;
//   - extra_cpu_pct: the CPU time the k parts take together beyond the single run's, in
//     % of it: the k-1 extra decompressions, and each part's fixed costs (its shards:
//     one at least per stripe it owns, its journal, its manifest).
//
// The sub-benchmark jsonl is the control: the same text as one uncompressed .jsonl
// file, which the k parts cut into byte ranges (no stripes, nothing read twice), so that
// the difference of the two extra_cpu_pct is what sharing by stripes costs.
func BenchmarkStripedParts(b *testing.B) {
	corpus, size := benchJSONL(b)
	zst := filepath.Join(b.TempDir(), "corpus.jsonl.zst")
	compressZstd(b, corpus, zst)
	tok := gpt2(b)
	k := 4
	if v, err := strconv.Atoi(os.Getenv("BENCH_STRIPE_PARTS")); err == nil && v > 1 {
		k = v
	}
	b.Run("zst", func(b *testing.B) { benchParts(b, zst, size, k, tok) })
	b.Run("jsonl", func(b *testing.B) { benchParts(b, corpus, size, k, tok) })
}

// benchParts is BenchmarkStripedParts over file, of size bytes uncompressed.
func benchParts(b *testing.B, file string, size int64, k int, tok *tokenize.Tokenizer) {
	ctx := context.Background()
	var tSingle, tSlowest, cSingle, cSlowest, cParts time.Duration
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		t0, c0 := time.Now(), processCPU()
		single := &TokenizeRun{Inputs: []string{file}, Store: dirStore(b, dir+"/single"), Name: "bench", Tokenizer: tok, AppendEOD: true, ShardBytes: 64 << 20}
		if _, _, err := single.Run(ctx); err != nil {
			b.Fatal(err)
		}
		tSingle, cSingle = tSingle+time.Since(t0), cSingle+processCPU()-c0
		var slowest, slowestCPU time.Duration
		st := dirStore(b, dir+"/parts")
		for j := range k {
			t0, c0 := time.Now(), processCPU()
			part := &TokenizeRun{Inputs: []string{file}, Store: st, Name: "bench", Tokenizer: tok, AppendEOD: true, ShardBytes: 64 << 20,
				NumWorkers: k, WorkerIndex: j, Command: fmt.Sprint("part ", j), stripeBytes: benchStripeBytes()}
			m, _, err := part.Run(ctx)
			if err != nil {
				b.Fatal(err)
			}
			// A .jsonl.zst is shared by stripes, a .jsonl cut into byte ranges.
			if striped := len(m.Shards) > 0 && m.Shards[0].Stripe != nil; j == 0 && striped == prep.Splittable(file) {
				b.Fatalf("part 0 of %d of %s: %+v", k, file, m.Shards)
			}
			c := processCPU() - c0
			slowest, slowestCPU, cParts = max(slowest, time.Since(t0)), max(slowestCPU, c), cParts+c
		}
		tSlowest, cSlowest = tSlowest+slowest, cSlowest+slowestCPU
		if _, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(tSingle.Seconds()/tSlowest.Seconds(), "speedup")
	b.ReportMetric(cSingle.Seconds()/cSlowest.Seconds(), "cpu_speedup")
	b.ReportMetric(100*(cParts-cSingle).Seconds()/cSingle.Seconds(), "extra_cpu_pct")
	b.ReportMetric(float64(size)*float64(b.N)/tSingle.Seconds()/1e6, "MB/s_single")
}
