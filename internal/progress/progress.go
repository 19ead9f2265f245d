// Package progress reports the progress of a long stage as the house style asks: on
// a terminal, one live line redrawn in place at most 10 times a second,
//
//	encode  312.4 MB / 1.2 GB  26%  48.1 MB/s  1,203,334 docs  12.3M tok/s  ETA 0:19
//
// and otherwise (a log file, a pipe, CI) an Info line on a log/slog logger every 10
// seconds, with lower_snake keys (bytes, total_bytes, percent, docs, mb_per_s, tokens,
// tokens_per_s, elapsed_s, eta_s). Tokens appear once a stage counts them (AddTokens). Done ends either with a summary. Counting is a pair of atomic
// adds, so Add can sit in a hot loop on any goroutine. MB are 10^6 bytes.
package progress

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is how a Bar reports.
type Mode int

const (
	// Auto is Live when the writer is a terminal, else Log.
	Auto Mode = iota
	// Live redraws one line on the writer.
	Live
	// Log logs an Info line every Options.Interval.
	Log
	// Off reports nothing.
	Off
)

// Options tune a Bar; the zero value is New's.
type Options struct {
	Mode Mode
	// Interval is the time between Log lines (default 10 s).
	Interval time.Duration
	// Quiet, in Log mode, drops Done's summary unless a periodic line was logged:
	// runs shorter than Interval say nothing.
	Quiet bool
	// NoDocs: the stage has no documents (a download); the reports leave the count
	// out rather than show "0 docs".
	NoDocs bool
}

// DefaultInterval is the default time between Log lines.
const DefaultInterval = 10 * time.Second

// liveInterval is the time between redraws of the live line.
const liveInterval = 100 * time.Millisecond

// Bar reports the progress of one stage: bytes processed out of a total (which may
// be unknown) and documents. Its methods are safe for concurrent use, and a nil *Bar
// does nothing.
type Bar struct {
	bytes, docs, tokens atomic.Int64
	skipped             atomic.Int64 // of bytes: done by an earlier run (AddSkipped)
	// worked is when the skip phase ended (UnixNano; 0: not yet): the last AddSkipped
	// before Add first counted bytes, else that first Add. A Bar with skipped bytes
	// measures its rates from then, not from the long skip phase before, nor from the
	// first work's end (which left the time of the first batch out: the rates too high).
	worked atomic.Int64
	added  atomic.Bool      // Add has counted bytes
	now    func() time.Time // the clock of worked (tests fix it)

	w        io.Writer
	logger   *slog.Logger
	label    string
	total    int64 // <= 0: unknown
	mode     Mode  // Live, Log or Off
	interval time.Duration
	quiet    bool
	noDocs   bool
	start    time.Time

	mu     sync.Mutex // serializes output
	logged bool       // a Log line was written
	ended  bool

	stop chan struct{} // closed by Done or Stop
	wg   sync.WaitGroup
	once sync.Once
}

// New starts a Bar labelled label (a stage name such as "encode") for total bytes
// (<= 0: unknown, then there is no percentage or ETA). It draws a live line on w if w
// is a terminal, else logs to logger (nil: a text handler on w). Call Done at the end.
func New(w io.Writer, logger *slog.Logger, label string, total int64) *Bar {
	return NewWithOptions(w, logger, label, total, Options{})
}

// NewWithOptions is New with options.
func NewWithOptions(w io.Writer, logger *slog.Logger, label string, total int64, opt Options) *Bar {
	b := newBar(w, logger, label, total, opt, time.Now())
	if b.mode == Off {
		return b
	}
	every := b.interval
	if b.mode == Live {
		every = liveInterval
	}
	b.wg.Add(1)
	go b.loop(every)
	return b
}

// newBar returns a Bar that does not report by itself (the tests drive report).
func newBar(w io.Writer, logger *slog.Logger, label string, total int64, opt Options, start time.Time) *Bar {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(w, nil))
	}
	mode := opt.Mode
	if mode == Auto {
		mode = Log
		if isTerminal(w) {
			mode = Live
		}
	}
	interval := opt.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	return &Bar{w: w, logger: logger, label: label, total: total, mode: mode, interval: interval,
		quiet: opt.Quiet, noDocs: opt.NoDocs, start: start, now: time.Now, stop: make(chan struct{})}
}

// Add counts bytes more bytes and docs more documents done.
func (b *Bar) Add(bytes, docs int64) {
	if b == nil {
		return
	}
	if bytes != 0 {
		b.bytes.Add(bytes)
		b.added.Store(true)
		if b.worked.Load() == 0 {
			b.worked.CompareAndSwap(0, b.now().UnixNano())
		}
	}
	if docs != 0 {
		b.docs.Add(docs)
	}
}

// AddSkipped counts bytes more bytes that an earlier run did (a resumed run reading
// past what it keeps): they count toward the bytes shown and the percentage, not
// toward the MB/s or the ETA, which are this run's work (they looked too good), and
// those are measured from the end of the skip phase (the last AddSkipped before Add
// first counts bytes), not over the skip phase (which made them look too bad just
// after it).
func (b *Bar) AddSkipped(bytes int64) {
	if b != nil && bytes != 0 {
		b.bytes.Add(bytes)
		b.skipped.Add(bytes)
		if !b.added.Load() {
			b.worked.Store(b.now().UnixNano())
		}
	}
}

// AddTokens counts n more tokens made (a tokenizing stage); the reports show tokens/s
// from the first call on.
func (b *Bar) AddTokens(n int64) {
	if b != nil && n != 0 {
		b.tokens.Add(n)
	}
}

// Counts returns the bytes and documents counted so far.
func (b *Bar) Counts() (bytes, docs int64) {
	if b == nil {
		return 0, 0
	}
	return b.bytes.Load(), b.docs.Load()
}

// Done ends the Bar with a summary: the live line's last state, ended with a
// newline, or a final Info line ("LABEL done"). Later calls do nothing.
func (b *Bar) Done() { b.end(true) }

// Stop ends the Bar without a summary, as after a failure: a live line keeps its
// last state and gets its newline, so that an error message starts a line of its
// own; Log mode says nothing more. Later calls (and Done) do nothing.
func (b *Bar) Stop() { b.end(false) }

func (b *Bar) end(summary bool) {
	if b == nil {
		return
	}
	b.once.Do(func() {
		close(b.stop)
		b.wg.Wait()
		b.finish(time.Now(), summary)
	})
}

// loop reports every interval until stop closes.
func (b *Bar) loop(every time.Duration) {
	defer b.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			b.report(now)
		}
	}
}

// IsTerminal reports whether w is a terminal: where a command draws a live line
// rather than printing log lines.
func IsTerminal(w io.Writer) bool { return isTerminal(w) }
