package shards

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"gptkit/storage"
)

// Benchmarks move GPTKIT_BENCH_MB (default 256) MiB of token bytes per op, in documents
// of 1-4k tokens, through the directory store on a local temp dir (commit = fsync +
// rename), and report throughput as MB/s of token bytes (b.SetBytes).

func benchBytes() int64 {
	if v, err := strconv.Atoi(os.Getenv("GPTKIT_BENCH_MB")); err == nil && v > 0 {
		return int64(v) << 20
	}
	return 256 << 20
}

// benchDocs is a pool of random documents the benchmarks cycle through.
func benchDocs(dt DType) [][]int {
	rng := rand.New(rand.NewPCG(7, uint64(dt)))
	vocab := 50257
	if dt == Int32 {
		vocab = 100277
	}
	docs := make([][]int, 64)
	for i := range docs {
		d := make([]int, 1024+rng.IntN(3073))
		for k := range d {
			d[k] = rng.IntN(vocab)
		}
		docs[i] = d
	}
	return docs
}

// writeBenchShard writes about total token bytes and returns the number of bytes written.
func writeBenchShard(b *testing.B, st storage.Store, prefix string, dt DType, docs [][]int, total int64) int64 {
	w, err := NewWriter(context.Background(), st, prefix, dt)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for i := 0; n < total; i++ {
		d := docs[i%len(docs)]
		if err := w.AddDocument(d); err != nil {
			b.Fatal(err)
		}
		n += int64(len(d) * dt.Size())
	}
	if _, err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return n
}

func BenchmarkWriter(b *testing.B) {
	for _, dt := range []DType{Uint16, Int32} {
		b.Run(dt.String(), func(b *testing.B) {
			st, err := storage.Open(context.Background(), b.TempDir(), storage.Options{})
			if err != nil {
				b.Fatal(err)
			}
			docs := benchDocs(dt)
			total := benchBytes()
			b.SetBytes(total)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				writeBenchShard(b, st, "bench", dt, docs, total)
			}
		})
	}
}

// benchShard writes one shard for the reader benchmarks and returns its prefix path.
func benchShard(b *testing.B, dt DType) (string, int64) {
	dir := b.TempDir()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	n := writeBenchShard(b, st, "bench", dt, benchDocs(dt), benchBytes())
	return filepath.Join(dir, "bench"), n
}

// BenchmarkReaderView: every document as a zero-copy typed view, summed (the loader's path).
func BenchmarkReaderView(b *testing.B) {
	for _, dt := range []DType{Uint16, Int32} {
		b.Run(dt.String(), func(b *testing.B) {
			prefix, n := benchShard(b, dt)
			r, err := Open(prefix)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.SetBytes(n)
			b.ResetTimer()
			var sum uint64
			for i := 0; i < b.N; i++ {
				for j := 0; j < r.Len(); j++ {
					if dt == Uint16 {
						for _, v := range r.DocUint16(j) {
							sum += uint64(v)
						}
					} else {
						for _, v := range r.DocInt32(j) {
							sum += uint64(v)
						}
					}
				}
			}
			if sum == 0 {
				b.Fatal("nothing read")
			}
		})
	}
}

// BenchmarkReaderTokens: every document copied out as []int (the convenience path).
func BenchmarkReaderTokens(b *testing.B) {
	prefix, n := benchShard(b, Uint16)
	r, err := Open(prefix)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(n)
	b.ResetTimer()
	buf := make([]int, 0, 8192)
	for i := 0; i < b.N; i++ {
		for j := 0; j < r.Len(); j++ {
			buf = r.AppendTokens(buf[:0], j)
		}
	}
}

// BenchmarkOpen: mapping and validating a shard's index (about 100k documents per 256 MiB).
func BenchmarkOpen(b *testing.B) {
	prefix, n := benchShard(b, Uint16)
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Open(prefix)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkVerify: a full check of a one-shard dataset (sha256 of every byte).
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	st, err := storage.Open(ctx, b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWriter(ctx, st, "ds/bench", Uint16)
	if err != nil {
		b.Fatal(err)
	}
	docs := benchDocs(Uint16)
	var n int64
	for i := 0; n < benchBytes(); i++ {
		w.AddDocument(docs[i%len(docs)])
		n += int64(2 * len(docs[i%len(docs)]))
	}
	info, err := w.Close()
	if err != nil {
		b.Fatal(err)
	}
	m := NewManifest(testTokenizer(50257), Uint16, nil)
	m.Add("ds", info)
	if err := WriteManifest(ctx, st, "ds", m); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if probs, err := Verify(ctx, st, "ds"); err != nil || len(probs) != 0 {
			b.Fatal(probs, err)
		}
	}
}

// BenchmarkVerifyOnOpen: what the loader's check of a shard costs when it opens it
// (VerifyOnOpen: sha256 and the id range in one pass over the mapped .bin), against a
// plain Open; "cached" is a reopen of the same file, which the verified-state cache
// answers with a stat. cpu-MB/s is token bytes per second of process CPU time (the
// machine may be shared; see getrusage).
func BenchmarkVerifyOnOpen(b *testing.B) {
	prefix, n := benchShard(b, Uint16)
	open := func(b *testing.B, opts ...Option) {
		r, err := Open(prefix, opts...)
		if err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
	for _, c := range []struct {
		name string
		opts func(b *testing.B) []Option
	}{
		{"plain", func(*testing.B) []Option { return nil }},
		{"verify", func(b *testing.B) []Option { return []Option{VerifyOnOpen(50257, b.TempDir())} }},
		{"cached", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			cache := b.TempDir()
			if c.opts == nil {
				open(b, VerifyOnOpen(50257, cache)) // the first open checks and records
			}
			b.SetBytes(n)
			cpu0 := cpuSeconds()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.opts == nil {
					open(b, VerifyOnOpen(50257, cache))
				} else {
					open(b, c.opts(b)...)
				}
			}
			b.StopTimer()
			if cpu := cpuSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(float64(n)*float64(b.N)/1e6/cpu, "cpu-MB/s")
			}
		})
	}
}

// cpuSeconds is this process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
