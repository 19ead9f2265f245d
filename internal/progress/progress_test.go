package progress

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeTerminal makes isTerminal say yes for the test's duration.
func fakeTerminal(t *testing.T) {
	saved := isTerminal
	isTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { isTerminal = saved })
}

// logger logs to buf without times, so lines can be compared.
func logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

func TestLive(t *testing.T) {
	fakeTerminal(t)
	var out bytes.Buffer
	b := newBar(&out, nil, "encode", 1_200_000_000, Options{}, t0)
	if b.mode != Live {
		t.Fatalf("mode %d on a terminal, want Live", b.mode)
	}
	b.Add(312_400_000, 1_203_334)
	b.report(t0.Add(6500 * time.Millisecond))
	want := "\rencode  312.4 MB / 1.2 GB  26%  48.1 MB/s  1,203,334 docs  ETA 0:18\x1b[K"
	if out.String() != want {
		t.Errorf("live line\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	b.Add(887_600_000, 1)
	b.finish(t0.Add(25*time.Second), true)
	want = "\rencode  1.2 GB  48.0 MB/s  1,203,335 docs  in 0:25\x1b[K\n"
	if out.String() != want {
		t.Errorf("summary\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	b.report(t0.Add(30 * time.Second))
	if out.Len() != 0 {
		t.Errorf("report after the end wrote %q", out.String())
	}
}

func TestLiveUnknownTotalAndStop(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, nil, "read", 0, Options{Mode: Live}, t0)
	b.Add(999, 3)
	b.report(t0.Add(67 * time.Second))
	b.finish(t0.Add(68*time.Second), false) // Stop: the line as it is, and a newline
	want := "\rread  999 B  0.0 MB/s  3 docs  1:07\x1b[K" + "\rread  999 B  0.0 MB/s  3 docs  1:08\x1b[K\n"
	if out.String() != want {
		t.Errorf("output\n%q\nwant\n%q", out.String(), want)
	}
}

func TestLog(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, logger(&out), "encode", 100e6, Options{}, t0) // a buffer: not a terminal
	if b.mode != Log {
		t.Fatalf("mode %d on a buffer, want Log", b.mode)
	}
	b.Add(25e6, 1000)
	b.report(t0.Add(10 * time.Second))
	b.Add(75e6, 3000)
	b.finish(t0.Add(20*time.Second), true)
	want := "level=INFO msg=encode bytes=25000000 total_bytes=100000000 percent=25 docs=1000 mb_per_s=2.5 elapsed_s=10 eta_s=30\n" +
		`level=INFO msg="encode done" bytes=100000000 total_bytes=100000000 percent=100 docs=4000 mb_per_s=5 elapsed_s=20` + "\n"
	if out.String() != want {
		t.Errorf("log\n%s\nwant\n%s", out.String(), want)
	}
}

func TestLogQuiet(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, logger(&out), "encode", 0, Options{Mode: Log, Quiet: true}, t0)
	b.Add(5, 1)
	b.finish(t0.Add(time.Second), true)
	if out.Len() != 0 {
		t.Errorf("a quiet short run logged %q", out.String())
	}
	b = newBar(&out, logger(&out), "encode", 0, Options{Mode: Log, Quiet: true}, t0)
	b.report(t0.Add(10 * time.Second))
	b.finish(t0.Add(11*time.Second), true)
	if n := strings.Count(out.String(), "\n"); n != 2 || !strings.Contains(out.String(), `msg="encode done" bytes=0 docs=0`) {
		t.Errorf("a quiet long run logged %q, want a line and the summary", out.String())
	}
	// Stop in Log mode says nothing more.
	out.Reset()
	b = newBar(&out, logger(&out), "encode", 0, Options{Mode: Log}, t0)
	b.finish(t0.Add(time.Minute), false)
	if out.Len() != 0 {
		t.Errorf("Stop logged %q", out.String())
	}
}

// TestConcurrent runs real Bars with many adders (go test -race).
func TestConcurrent(t *testing.T) {
	for _, mode := range []Mode{Live, Log, Off} {
		var out syncBuffer
		b := NewWithOptions(&out, logger(&out), "x", 1<<30, Options{Mode: mode, Interval: time.Millisecond})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 10000 {
					b.Add(3, 1)
				}
			})
		}
		time.Sleep(20 * time.Millisecond)
		wg.Wait()
		b.Done()
		b.Done()
		b.Stop()
		if n, d := b.Counts(); n != 240000 || d != 80000 {
			t.Errorf("mode %d: counts %d, %d; want 240000, 80000", mode, n, d)
		}
		if got := out.String(); (mode == Off) != (got == "") {
			t.Errorf("mode %d: output %q", mode, got)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the Bar's goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func TestNilBar(t *testing.T) {
	var b *Bar
	b.Add(1, 1)
	b.Done()
	b.Stop()
	if n, d := b.Counts(); n != 0 || d != 0 {
		t.Error("a nil Bar counted")
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 312_449_999: "312.4 MB", 999_960_000: "1.0 GB", 1_234_000_000_000_000: "1.2 PB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1_203_334: "1,203,334", -12345: "-12,345"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0:00", 19 * time.Second: "0:19", 61500 * time.Millisecond: "1:02", 3*time.Hour + 5*time.Second: "3:00:05"} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestTokens: a stage that counts tokens shows tokens/s beside MB/s and docs.
func TestTokens(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, nil, "tokenize", 0, Options{Mode: Live}, t0)
	b.Add(10e6, 500)
	b.AddTokens(2_500_000)
	b.report(t0.Add(2 * time.Second))
	b.finish(t0.Add(2*time.Second), true)
	want := "\rtokenize  10.0 MB  5.0 MB/s  500 docs  1.25M tok/s  0:02\x1b[K" +
		"\rtokenize  10.0 MB  5.0 MB/s  500 docs  2,500,000 tokens  1.25M tok/s  in 0:02\x1b[K\n"
	if out.String() != want {
		t.Errorf("output\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	b = newBar(&out, logger(&out), "tokenize", 0, Options{Mode: Log}, t0)
	b.Add(10e6, 500)
	b.AddTokens(2_500_000)
	b.report(t0.Add(2 * time.Second))
	if want := "level=INFO msg=tokenize bytes=10000000 docs=500 mb_per_s=5 tokens=2500000 tokens_per_s=1250000 elapsed_s=2\n"; out.String() != want {
		t.Errorf("log\n%s\nwant\n%s", out.String(), want)
	}
}

// TestNoDocs: a stage without documents (a download) showed "0 docs" in every line;
// with NoDocs its lines leave the count out.
func TestNoDocs(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, nil, "download", 2_000_000, Options{Mode: Live, NoDocs: true}, t0)
	b.Add(1_000_000, 0)
	b.report(t0.Add(time.Second))
	b.finish(t0.Add(2*time.Second), true)
	want := "\rdownload  1.0 MB / 2.0 MB  50%  1.0 MB/s  ETA 0:01\x1b[K" + "\rdownload  1.0 MB  0.5 MB/s  in 0:02\x1b[K\n"
	if out.String() != want {
		t.Errorf("output\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	b = newBar(&out, logger(&out), "download", 0, Options{Mode: Log, NoDocs: true}, t0)
	b.Add(5, 0)
	b.finish(t0.Add(time.Second), true)
	if strings.Contains(out.String(), "docs") {
		t.Errorf("log line counts docs: %s", out.String())
	}
}

// TestSkippedBaseline: a resumed run's bytes read again to skip what it keeps counted
// toward the MB/s and the ETA, which looked too good; AddSkipped's bytes count in the
// bytes and the percentage only.
func TestSkippedBaseline(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, nil, "tokenize", 1_000_000_000, Options{Mode: Live}, t0)
	b.now = func() time.Time { return t0 }
	b.AddSkipped(600_000_000)
	b.Add(100_000_000, 5)
	b.report(t0.Add(10 * time.Second))
	want := "\rtokenize  700.0 MB / 1.0 GB  70%  10.0 MB/s  5 docs  ETA 0:30\x1b[K"
	if out.String() != want {
		t.Errorf("live line\n%q\nwant\n%q", out.String(), want)
	}
	var nb *Bar
	nb.AddSkipped(1) // a nil Bar does nothing
}

// TestSkipPhaseNotInRate: the MB/s and ETA after a resumed run's skip phase (50 s of
// reading past an earlier run's work) are measured from this run's first bytes: they
// were this run's bytes over the time since the start, skip phase included (1.7 MB/s,
// ETA 3:00 where the work went at 10 MB/s).
func TestSkipPhaseNotInRate(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, nil, "tokenize", 1_000_000_000, Options{Mode: Live}, t0)
	clock := t0
	b.now = func() time.Time { return clock }
	for range 10 {
		clock = clock.Add(5 * time.Second)
		b.AddSkipped(60_000_000)
	}
	b.report(clock)
	if want := "\rtokenize  600.0 MB / 1.0 GB  60%  0.0 MB/s  0 docs\x1b[K"; out.String() != want {
		t.Errorf("live line in the skip phase\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	b.Add(50_000_000, 5)
	clock = clock.Add(5 * time.Second)
	b.Add(50_000_000, 5)
	b.report(t0.Add(60 * time.Second))
	want := "\rtokenize  700.0 MB / 1.0 GB  70%  10.0 MB/s  10 docs  ETA 0:30\x1b[K"
	if out.String() != want {
		t.Errorf("live line\n%q\nwant\n%q", out.String(), want)
	}
}

// TestSkipEndStartsRate: the rates of a resumed run are measured from the end of the
// skip phase, so the time its first batch of new work took counts: they were measured
// from that batch's Add, and read twice too high (20 MB/s for 10) just after the skip.
func TestSkipEndStartsRate(t *testing.T) {
	var out bytes.Buffer
	b := newBar(&out, nil, "tokenize", 1_000_000_000, Options{Mode: Live}, t0)
	clock := t0
	b.now = func() time.Time { return clock }
	for range 10 {
		clock = clock.Add(5 * time.Second)
		b.AddSkipped(60_000_000)
	}
	clock = clock.Add(5 * time.Second) // the first batch of new work takes 5 s
	b.Add(50_000_000, 5)
	clock = clock.Add(5 * time.Second)
	b.Add(50_000_000, 5)
	b.report(clock)
	want := "\rtokenize  700.0 MB / 1.0 GB  70%  10.0 MB/s  10 docs  ETA 0:30\x1b[K"
	if out.String() != want {
		t.Errorf("live line\n%q\nwant\n%q", out.String(), want)
	}
}
