//go:build linux

package pipelines

import (
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
//     tokenizing one skipping reader keeps up with.
//
// A worker that shares a file of n uncompressed bytes with k-1 others decompresses and
// scans n bytes and tokenizes n/k: with c cores, about n/skip + n/(k·c·tok) of work
// for the reader and the tokenizers, which overlap (the reader runs ahead while the
// tokenizers work through its queue).
func BenchmarkStripeSkip(b *testing.B) {
	corpus, size := benchJSONL(b)
	zst := filepath.Join(b.TempDir(), "corpus.jsonl.zst")
	compressZstd(b, corpus, zst)
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
	var tDecode, tSkip, tParse, tTok time.Duration
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

		t0 = time.Now()
		st, err := prep.ReadRanges(ctx, []prep.FileRange{none}, prep.ReadOptions{}, func(prep.Doc) error {
			b.Fatal("a document of a stripe not owned")
			return nil
		})
		if err != nil || st.Docs != 0 {
			b.Fatalf("%+v %v", st, err)
		}
		tSkip += time.Since(t0)

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
}

// BenchmarkStripedParts runs the k parts (the -cpu flag's GOMAXPROCS workers each) that
// share one .jsonl.zst file by stripes (benchJSONL, stripes of $BENCH_STRIPE_MB MiB),
// one after the other, as the tasks of an array job would each run on a node of their
// own, against a single run of the file. It reports speedup, the single run's time over
// the slowest part's (k is the most it could be: the parts tokenize 1/k each but all
// decompress the whole file), and skip_pct, the share of the slowest part's time that
// would be left without the stripes it does not own (1 - (single/k)/slowest, in %).
// k is $BENCH_STRIPE_PARTS (default 4).
func BenchmarkStripedParts(b *testing.B) {
	corpus, size := benchJSONL(b)
	zst := filepath.Join(b.TempDir(), "corpus.jsonl.zst")
	compressZstd(b, corpus, zst)
	tok := gpt2(b)
	ctx := context.Background()
	k := 4
	if v, err := strconv.Atoi(os.Getenv("BENCH_STRIPE_PARTS")); err == nil && v > 1 {
		k = v
	}
	var tSingle, tSlowest time.Duration
	b.SetBytes(size)
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		t0 := time.Now()
		single := &TokenizeRun{Inputs: []string{zst}, Store: dirStore(b, dir+"/single"), Name: "bench", Tokenizer: tok, AppendEOD: true, ShardBytes: 64 << 20}
		if _, _, err := single.Run(ctx); err != nil {
			b.Fatal(err)
		}
		tSingle += time.Since(t0)
		var slowest time.Duration
		st := dirStore(b, dir+"/parts")
		for j := range k {
			t0 := time.Now()
			part := &TokenizeRun{Inputs: []string{zst}, Store: st, Name: "bench", Tokenizer: tok, AppendEOD: true, ShardBytes: 64 << 20,
				NumWorkers: k, WorkerIndex: j, Command: fmt.Sprint("part ", j), stripeBytes: benchStripeBytes()}
			m, _, err := part.Run(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if j == 0 && (len(m.Shards) == 0 || m.Shards[0].Stripe == nil) {
				b.Fatalf("part 0 of %d holds no stripe: %+v", k, m.Shards)
			}
			slowest = max(slowest, time.Since(t0))
		}
		tSlowest += slowest
		if _, err := shards.MergeParts(ctx, st, "", shards.MergePartsOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(tSingle.Seconds()/tSlowest.Seconds(), "speedup")
	b.ReportMetric(100*(1-tSingle.Seconds()/float64(k)/tSlowest.Seconds()), "skip_pct")
	b.ReportMetric(float64(size)*float64(b.N)/tSingle.Seconds()/1e6, "MB/s_single")
}
