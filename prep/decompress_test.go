package prep

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"

	"gptkit/internal/inflate"
	"gptkit/internal/testfiles"
)

// zstdFrames compresses data as zstd frames of frame bytes each (one frame: frame 0).
func zstdFrames(tb testing.TB, data []byte, frame int, checksum bool) []byte {
	tb.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(checksum))
	if err != nil {
		tb.Fatal(err)
	}
	if frame == 0 {
		return enc.EncodeAll(data, nil)
	}
	var out []byte
	for len(data) > 0 {
		n := min(frame, len(data))
		out, data = enc.EncodeAll(data[:n], out), data[n:]
	}
	return out
}

// TestParallelZstd: a stream of many frames (with skippable frames among them, with and
// without checksums), a single frame, frames too large to decode whole followed by
// small ones, and an empty stream all read back as the data; a stream cut short or
// corrupt fails, after the data before the cut; closing early leaks nothing.
func TestParallelZstd(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(string(testfiles.Read(t, "corpora/tinyshakespeare.txt")[:20000]))
	var sb strings.Builder
	for sb.Len() < 5<<20 {
		sb.WriteString(words[rng.IntN(len(words))] + " ")
	}
	data := []byte(sb.String())
	skippable := []byte{0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}
	var mixed []byte
	mixed = append(mixed, zstdFrames(t, data[:1<<20], 100<<10, true)...)
	mixed = append(mixed, skippable...)
	mixed = append(mixed, zstdFrames(t, data[1<<20:], 0, false)...) // 4 MiB frame: decoded whole
	cases := map[string][]byte{
		"frames":      zstdFrames(t, data, 64<<10, true),
		"one frame":   zstdFrames(t, data, 0, true),
		"mixed":       mixed,
		"tiny frames": zstdFrames(t, data[:100000], 1000, false),
	}
	for name, comp := range cases {
		for _, workers := range []int{1, 3} {
			r := newParallelZstd(bufio.NewReader(bytes.NewReader(comp)), workers)
			got, err := io.ReadAll(r)
			r.close()
			want := data
			if name == "tiny frames" {
				want = data[:100000]
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s, %d workers: %d bytes, %v; want %d bytes", name, workers, len(got), err, len(want))
			}
		}
		r, closeR, err := newZstdReader(bufio.NewReader(bytes.NewReader(comp)))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(r); err != nil || len(got) == 0 {
			t.Errorf("%s through newZstdReader: %d bytes, %v", name, len(got), err)
		}
		closeR()
	}
	// Streams cut short, or with a block damaged, fail.
	frames := cases["frames"]
	for _, bad := range [][]byte{frames[:len(frames)/2], frames[:len(frames)-3], append(bytes.Clone(frames[:200]), frames[210:]...)} {
		r := newParallelZstd(bufio.NewReader(bytes.NewReader(bad)), 2)
		if _, err := io.ReadAll(r); err == nil {
			t.Errorf("a damaged stream of %d bytes read without error", len(bad))
		}
		r.close()
	}
	// A stream cut short inside a frame still gives the data of the frame's whole
	// blocks before its error, as the streaming decoder does (what --accept-truncated
	// keeps): a single frame cut at 97% is most of the data, not none of it.
	one := cases["one frame"]
	for _, workers := range []int{1, 3} {
		r := newParallelZstd(bufio.NewReader(bytes.NewReader(one[:len(one)*97/100])), workers)
		got, err := io.ReadAll(r)
		r.close()
		if err == nil || len(got) < len(data)/2 || !bytes.Equal(got, data[:len(got)]) {
			t.Errorf("one frame cut at 97%%, %d workers: %d of %d bytes, %v; want most of the data, then an error", workers, len(got), len(data), err)
		}
	}
	// Closing before the end stops every goroutine.
	before := runtime.NumGoroutine()
	for range 10 {
		r := newParallelZstd(bufio.NewReader(bytes.NewReader(frames)), 4)
		io.CopyN(io.Discard, r, 1000)
		r.close()
	}
	time.Sleep(100 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("%d goroutines before, %d after closing readers early", before, after)
	}
}

// BenchmarkDecompress measures the decoders a run could read a large compressed JSONL
// file with: MB/s of decompressed data on all cores (GOMAXPROCS) and per CPU-second.
// The data is $BENCH_CORPUS (default tinyshakespeare repeated), 64 MB. zstd in one frame
// (zstd's own output) through the streaming decoder with its default concurrency and
// with one goroutine; zstd in 4 MiB frames (pzstd's, zstd -B) through the parallel
// reader and the streaming one; gzip through internal/inflate (what a run reads .gz
// with), klauspost/compress/gzip, compress/gzip and klauspost/pgzip.
//
//	BENCH_CORPUS=.cache/bench/mixed.txt go test ./prep -run '^$' -bench Decompress -benchtime 3x
func BenchmarkDecompress(b *testing.B) {
	src := benchCorpus(b)
	data := bytes.Repeat(src, (64<<20)/len(src)+1)[:64<<20]
	one, framed := zstdFrames(b, data, 0, true), zstdFrames(b, data, 4<<20, true)
	var gz bytes.Buffer
	gw, _ := kgzip.NewWriterLevel(&gz, 6)
	gw.Write(data)
	gw.Close()
	type decoder func(r *bufio.Reader) (io.Reader, func())
	variants := []struct {
		name string
		comp []byte
		dec  decoder
	}{
		{"zstd-1-frame/streaming", one, func(r *bufio.Reader) (io.Reader, func()) {
			z, _ := zstd.NewReader(r)
			return z, z.Close
		}},
		{"zstd-1-frame/streaming-1-goroutine", one, func(r *bufio.Reader) (io.Reader, func()) {
			z, _ := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
			return z, z.Close
		}},
		{"zstd-frames/parallel", framed, func(r *bufio.Reader) (io.Reader, func()) {
			z := newParallelZstd(r, runtime.GOMAXPROCS(0))
			return z, z.close
		}},
		{"zstd-frames/streaming", framed, func(r *bufio.Reader) (io.Reader, func()) {
			z, _ := zstd.NewReader(r)
			return z, z.Close
		}},
		{"gzip/inflate", gz.Bytes(), func(r *bufio.Reader) (io.Reader, func()) {
			z, _ := inflate.NewGzipReader(r)
			return z, func() { z.Close() }
		}},
		{"gzip/klauspost", gz.Bytes(), func(r *bufio.Reader) (io.Reader, func()) {
			z, _ := kgzip.NewReader(r)
			return z, func() { z.Close() }
		}},
		{"gzip/stdlib", gz.Bytes(), func(r *bufio.Reader) (io.Reader, func()) {
			z, _ := gzip.NewReader(r)
			return z, func() { z.Close() }
		}},
		{"gzip/pgzip", gz.Bytes(), func(r *bufio.Reader) (io.Reader, func()) {
			z, _ := pgzip.NewReader(r)
			return z, func() { z.Close() }
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			buf := make([]byte, jsonlReadSize)
			cpu0 := rusageCPU()
			for b.Loop() {
				r, closeR := v.dec(bufio.NewReaderSize(bytes.NewReader(v.comp), 256<<10))
				// Read into a buffer of jsonlReadSize, as a run's reader does (not
				// WriteTo, which some decoders have to skip their copy).
				n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{r}, buf)
				closeR()
				if err != nil || n != int64(len(data)) {
					b.Fatalf("%d bytes, %v", n, err)
				}
			}
			if cpu := rusageCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(len(data))*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
			}
			b.ReportMetric(float64(len(data))/float64(len(v.comp)), "ratio")
		})
	}
	b.Run("gzip/libdeflate-c", func(b *testing.B) { benchLibdeflate(b, gz.Bytes(), len(data)) })
	b.Run("gzip/isal-igzip-c", func(b *testing.B) { benchIgzip(b, gz.Bytes(), len(data)) })
}

// benchIgzip times the other C peer of the gzip decoders, ISA-L's igzip command
// (Debian's isal): `igzip -d -c FILE > /dev/null`, the CPU of the whole process (its
// start and reading the file from the page cache are ~1 ms of the ~100 ms). The output is
// counted once, untimed, to check it. Skipped where igzip is missing.
func benchIgzip(b *testing.B, comp []byte, n int) {
	igzip, err := exec.LookPath("igzip")
	if err != nil {
		b.Skipf("no ISA-L peer (Debian: apt-get install isal): %v", err)
	}
	name := filepath.Join(b.TempDir(), "mixed.gz")
	if err := os.WriteFile(name, comp, 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(igzip, "-d", "-c", name).Output()
	if err != nil || len(out) != n {
		b.Fatalf("igzip -d -c: %d bytes of %d, %v", len(out), n, err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	var cpu, wall time.Duration
	for b.Loop() {
		cmd := exec.Command(igzip, "-d", "-c", name)
		cmd.Stdout = null
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("igzip -d -c: %v", err)
		}
		wall += time.Since(t0)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(n)*float64(b.N)/1e6/wall.Seconds(), "MB/s")
	b.ReportMetric(float64(n)*float64(b.N)/1e6/cpu.Seconds(), "MB/cpu-s")
	b.ReportMetric(float64(n)/float64(len(comp)), "ratio")
}

// benchLibdeflate times the C peer of the gzip decoders, libdeflate through
// tools/libdeflate_gunzip.py (its own process: one timed decode of the whole stream into
// memory faulted in before, a call per iteration), and reports its figures as the Go
// decoders' lines have them. Skipped where python3 or libdeflate.so.0 (Debian's
// libdeflate0) is missing.
func benchLibdeflate(b *testing.B, comp []byte, n int) {
	name := filepath.Join(b.TempDir(), "mixed.gz")
	if err := os.WriteFile(name, comp, 0o644); err != nil {
		b.Fatal(err)
	}
	var cpu, wall float64
	for b.Loop() {
		out, err := exec.Command("python3", "../tools/libdeflate_gunzip.py", name).Output()
		if errors.Is(err, exec.ErrNotFound) {
			b.Skipf("no libdeflate peer: %v", err)
		}
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == 3 {
			b.Skipf("no libdeflate peer: %s", bytes.TrimSpace(ee.Stderr))
		}
		var got int
		var c, w float64
		if err == nil {
			_, err = fmt.Sscan(string(out), &got, &c, &w)
		}
		if err != nil || got != n {
			b.Fatalf("libdeflate_gunzip.py: %d bytes of %d, %v %s", got, n, err, out)
		}
		cpu, wall = cpu+c, wall+w
	}
	b.ReportMetric(wall*1e9/float64(b.N), "ns/op")
	b.ReportMetric(float64(n)*float64(b.N)/1e6/wall, "MB/s")
	b.ReportMetric(float64(n)*float64(b.N)/1e6/cpu, "MB/cpu-s")
	b.ReportMetric(float64(n)/float64(len(comp)), "ratio")
}

func rusageCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
