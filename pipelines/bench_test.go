//go:build unix

package pipelines

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gptkit/internal/miniotest"
	"gptkit/internal/testfiles"
	"gptkit/storage"
)

// benchJSONL writes a JSONL corpus for the run benchmarks: $BENCH_CORPUS (make bench's
// English-ish corpus) or else tinyshakespeare, repeated to at least $BENCH_RUN_MB MB
// (default 64: big enough that S3 multipart uploads overlap tokenizing, as they do on real
// corpora), cut into 4 KB documents.
func benchJSONL(b *testing.B) (path string, size int64) {
	b.Helper()
	src := os.Getenv("BENCH_CORPUS")
	if src == "" {
		src = testfiles.Path(b, "corpora/tinyshakespeare.txt")
	}
	text, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	path = filepath.Join(b.TempDir(), "corpus.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	enc := json.NewEncoder(f)
	mb := 64
	if v, err := strconv.Atoi(os.Getenv("BENCH_RUN_MB")); err == nil && v > 0 {
		mb = v
	}
	for written := 0; written < mb<<20; {
		for i := 0; i+4000 <= len(text); i += 4000 {
			enc.Encode(map[string]string{"text": string(text[i : i+4000])})
			written += 4000
		}
	}
	fi, _ := f.Stat()
	f.Close()
	return path, fi.Size()
}

// discardStore is a storage.Store that drops what is written: a run into it costs
// reading and tokenizing only, so the difference to a real store is the cost of writing.
type discardStore struct {
	mu   sync.Mutex
	keys map[string]bool
}

type discardWriter struct {
	st  *discardStore
	key string
}

func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) Commit() error {
	w.st.mu.Lock()
	w.st.keys[w.key] = true
	w.st.mu.Unlock()
	return nil
}
func (w *discardWriter) Abort() error { return nil }

func (s *discardStore) Open(ctx context.Context, key string) (storage.Object, error) {
	return nil, storage.ErrNotExist
}
func (s *discardStore) Create(ctx context.Context, key string, opts ...storage.WriteOption) (storage.Writer, error) {
	return &discardWriter{s, key}, nil
}
func (s *discardStore) Stat(ctx context.Context, key string) (storage.Info, error) {
	return storage.Info{}, storage.ErrNotExist
}
func (s *discardStore) List(ctx context.Context, prefix string) ([]storage.Info, error) {
	var out []storage.Info
	s.mu.Lock()
	for k := range s.keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, storage.Info{Key: k})
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
func (s *discardStore) Delete(ctx context.Context, key string) error { return nil }
func (s *discardStore) LocalPath(key string) (string, bool)          { return "", false }
func (s *discardStore) String() string                               { return "discard" }

// BenchmarkTokenizeRun runs `tokenize run` (GPT-2, all cores) into a store that discards
// its bytes and into a real one, alternately, and reports write_pct: the share of the real
// run's time that writing adds (goal: at most 5%).
func BenchmarkTokenizeRun(b *testing.B) {
	corpus, size := benchJSONL(b)
	tok := gpt2(b)
	ctx := context.Background()
	// minio/workers=1 leaves one of this machine's two cores to the MinIO server, which
	// otherwise competes with tokenizing for CPU (a real S3 runs elsewhere).
	for _, name := range []string{"dir", "minio", "minio/workers=1"} {
		b.Run(name, func(b *testing.B) {
			workers := 0
			if strings.HasSuffix(name, "workers=1") {
				workers = 1
			}
			var real storage.Store
			if name == "dir" {
				real = dirStore(b, b.TempDir())
			} else {
				real = minioStore(b)
			}
			var tReal, tNull, cReal, cNull time.Duration
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, info := range mustList(b, real) {
					real.Delete(ctx, info.Key)
				}
				t0, c0 := time.Now(), processCPU()
				run := &TokenizeRun{Inputs: []string{corpus}, Store: &discardStore{keys: map[string]bool{}}, Name: "bench", Tokenizer: tok, AppendEOD: true, Workers: workers}
				if _, _, err := run.Run(ctx); err != nil {
					b.Fatal(err)
				}
				tNull, cNull = tNull+time.Since(t0), cNull+processCPU()-c0
				b.StartTimer()
				t0, c0 = time.Now(), processCPU()
				run.Store = real
				if _, _, err := run.Run(ctx); err != nil {
					b.Fatal(err)
				}
				tReal, cReal = tReal+time.Since(t0), cReal+processCPU()-c0
			}
			b.ReportMetric(100*(tReal-tNull).Seconds()/tReal.Seconds(), "write_pct")
			// Our process's CPU only: what writing costs us, without a co-located
			// server's share of the machine.
			b.ReportMetric(100*(cReal-cNull).Seconds()/cReal.Seconds(), "write_cpu_pct")
			b.ReportMetric(float64(size)*float64(b.N)/tReal.Seconds()/1e6, "MB/s_real")
			b.ReportMetric(float64(size)*float64(b.N)/tNull.Seconds()/1e6, "MB/s_discard")
		})
	}
}

// minioStore is a dataset location on a real MinIO server started for the benchmark.
func minioStore(b *testing.B) storage.Store {
	srv := miniotest.Start(b)
	srv.Setenv(b)
	st, err := storage.Open(context.Background(), "s3://"+srv.NewBucket(b)+"/ds", storage.Options{S3Endpoint: srv.Endpoint})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// processCPU is this process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func mustList(b *testing.B, st storage.Store) []storage.Info {
	infos, err := st.List(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	return infos
}

var _ io.Writer = (*discardWriter)(nil)
