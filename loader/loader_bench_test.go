package loader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gptkit/internal/miniotest"
	"gptkit/shards"
	"gptkit/storage"
)

// benchTokens is the size of the benchmark dataset: 100M uint16 tokens (200 MB) in
// documents of 500..1500 tokens, written once per test binary run into a temporary
// directory that TestMain removes.
const benchTokens = 100_000_000

var bench struct {
	once  sync.Once
	dir   string
	err   error
	sizes []int32
}

func TestMain(m *testing.M) {
	code := miniotest.Main(m)
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// benchSizes are document sizes adding up to benchTokens.
func benchSizes() []int32 {
	rnd := rand.New(rand.NewPCG(3, 4))
	var sizes []int32
	var n int64
	for n < benchTokens {
		s := int32(500 + rnd.IntN(1001))
		s = int32(min(int64(s), benchTokens-n))
		sizes = append(sizes, s)
		n += int64(s)
	}
	return sizes
}

// benchDataset writes (once) and returns the benchmark dataset's directory; its
// pages stay in the page cache after writing.
func benchDataset(b *testing.B) string {
	b.Helper()
	bench.once.Do(func() {
		bench.sizes = benchSizes()
		if bench.dir, bench.err = os.MkdirTemp("", "gptkit-loader-bench-"); bench.err != nil {
			return
		}
		ctx := context.Background()
		dir := filepath.Join(bench.dir, "data")
		st, err := storage.Open(ctx, dir, storage.Options{})
		if err != nil {
			bench.err = err
			return
		}
		m := shards.NewManifest(shards.TokenizerInfo{Name: "bench", Fingerprint: "bench", VocabSize: 50304, EODID: 0}, shards.Uint16, nil)
		w, err := shards.NewWriter(ctx, st, "bench_text_document", shards.Uint16)
		if err != nil {
			bench.err = err
			return
		}
		doc := make([]int, 1500)
		for d, n := range bench.sizes {
			for k := range doc[:n] {
				doc[k] = (d*131 + k*7) % 50304
			}
			if bench.err = w.AddDocument(doc[:n]); bench.err != nil {
				return
			}
		}
		info, err := w.Close()
		if err == nil {
			err = m.Add("", info)
		}
		if err == nil {
			err = shards.WriteManifest(ctx, st, "", m)
		}
		bench.err = err
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return filepath.Join(bench.dir, "data")
}

// BenchmarkDeliver measures tokens per second delivered to one consumer as int32
// micro-batches (8 samples of 2049 tokens) from a page-cached dataset of 100M
// tokens, OrderDefault: "prefetch" through a Prefetcher (the trainer's path),
// "direct" with Sampler.NextInt32 on the consumer's goroutine.
func BenchmarkDeliver(b *testing.B) {
	dir := benchDataset(b)
	const L, micro = 2048, 8
	d, err := Open(context.Background(), Options{Data: dir, SeqLen: L, Seed: 1234, Split: "1", NumSamples: [3]int64{benchTokens / (L + 1), 0, 0}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	perBatch := float64(micro * (L + 1))
	b.Run("prefetch", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var p *Prefetcher
		restart := func() {
			if p != nil {
				p.Close()
			}
			if p, err = NewPrefetcher(ctx, &Sampler{Samples: d.Train, World: 1, Micro: micro}, 4); err != nil {
				b.Fatal(err)
			}
		}
		restart()
		defer func() { p.Close() }()
		var sink int32
		b.SetBytes(int64(perBatch) * 4)
		start := time.Now()
		n := 0
		for b.Loop() {
			batch, err := p.Next()
			if err != nil { // end of the samples: start over
				restart()
				if batch, err = p.Next(); err != nil {
					b.Fatal(err)
				}
			}
			sink += batch.Tokens[0]
			n++
		}
		b.ReportMetric(float64(n)*perBatch/time.Since(start).Seconds()/1e6, "Mtok/s")
		_ = sink
	})
	b.Run("direct", func(b *testing.B) {
		sm := &Sampler{Samples: d.Train, World: 1, Micro: micro}
		buf := make([]int32, 0, micro*(L+1))
		b.SetBytes(int64(perBatch) * 4)
		start := time.Now()
		n := 0
		for b.Loop() {
			if buf, err = sm.NextInt32(buf[:0]); err != nil {
				sm.Cursor = Cursor{}
				if buf, err = sm.NextInt32(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
		b.ReportMetric(float64(n)*perBatch/time.Since(start).Seconds()/1e6, "Mtok/s")
	})
}

// BenchmarkIndexBuild measures building the index of 100M tokens (documents of
// 500..1500 tokens, L 2048, one epoch) for each order from the document sizes, and
// Open on the 100M-token dataset with no index file ("open-cold": reading the
// sizes, building, writing the cache file) and with one ("open-cached"). The
// metric is milliseconds per 100M tokens.
func BenchmarkIndexBuild(b *testing.B) {
	sizes := benchSizes()
	const L = 2048
	ns := int64(benchTokens-1) / L
	for _, order := range []string{OrderNeoX, OrderDefault} {
		b.Run(order, func(b *testing.B) {
			start := time.Now()
			n := 0
			for b.Loop() {
				if _, err := BuildIndex(order, sizes, L, ns, 1234); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(n), "ms/100Mtok")
		})
	}
	dir := benchDataset(b)
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("open-%s", map[bool]string{false: "cold", true: "cached"}[cached]), func(b *testing.B) {
			cache := b.TempDir()
			o := Options{Data: dir, SeqLen: L, Seed: 1234, Split: "1", NumSamples: [3]int64{ns, 0, 0}, CacheDir: cache}
			var took time.Duration
			n := 0
			for b.Loop() {
				if !cached {
					b.StopTimer()
					os.RemoveAll(filepath.Join(dir, cacheDirName))
					b.StartTimer()
				}
				start := time.Now()
				d, err := Open(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
				d.Close()
				n++
			}
			b.ReportMetric(float64(took.Microseconds())/1e3/float64(n), "ms/100Mtok")
		})
	}
}
