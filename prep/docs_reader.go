package prep

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// docReader is the state of one ReadDocs. Every reader (JSONL, text, zip, Parquet)
// takes each record through the same steps: bad (bad), filtered out (counted by the
// reader), empty (Empty), skipped (skipOne), handed on (emit).
type docReader struct {
	ctx      context.Context
	key      string
	filter   string // ReadOptions.FilterSet
	policy   ErrorPolicy
	accept   bool // ReadOptions.AcceptTruncated
	progress func(bytesRead, docs int64)
	skipProg func(bytesRead int64) // ReadOptions.SkipProgress
	fn       func(Doc) error
	stats    Stats
	skip     int64 // documents still to skip
	examples int   // examples of each reason to keep

	// Where the current record comes from: Doc.Range and Doc.Stripe.
	rangeIdx int
	stripe   int64

	// The current file's size (as stored) and zip member, for what a truncated
	// stream leaves unread.
	fileSize int64
	member   int64 // the compressed size of the zip member being read; -1 when none
	// frames is the current file's parallel zstd decoder, if it has one: it reads
	// frames ahead, so the bytes read say less than where its stream broke.
	frames *parallelZstd

	// A piece of a file cut by ReadRangeBatchesParallel: its lines are numbered from
	// 1 at its first, which is not the file's first (ReadOptions.relativeLines), and
	// counted in lines (nil: not counted).
	relativeLines bool
	lines         *int64
	pieceOf       os.FileInfo // ReadOptions.pieceOf

	// Where JSONL texts are decoded (ReadBatches); nil: each its own string.
	arena *textArena

	// Progress not yet reported.
	counter     *countingReader // the current file's
	docsPending int64
	textPending int
}

func newDocReader(ctx context.Context, opt ReadOptions, fn func(Doc) error) *docReader {
	r := &docReader{ctx: ctx, key: opt.TextKey, filter: opt.FilterSet, policy: opt.OnError, accept: opt.AcceptTruncated,
		progress: opt.Progress, skipProg: opt.SkipProgress, fn: fn, skip: max(opt.SkipDocs, 0), examples: opt.MaxBadExamples,
		relativeLines: opt.relativeLines, lines: opt.lines, pieceOf: opt.pieceOf}
	if r.key == "" {
		r.key = DefaultTextKey
	}
	if r.examples == 0 {
		r.examples = DefaultBadExamples
	}
	return r
}

// filtering reports whether records are filtered by their subset.
func (r *docReader) filtering() bool { return r.filter != "" }

// bad deals with a bad record, of reason, that e describes: with Skip it counts it
// and returns nil, with Fail it returns e.
func (r *docReader) bad(reason string, e *FileError) error {
	if r.policy == Fail {
		return e
	}
	r.stats.Bad++
	r.report().add(reason, e, false)
	return nil
}

// report returns the report of bad records, making it on first use.
func (r *docReader) report() *BadRecordReport {
	if r.stats.BadRecords == nil {
		r.stats.BadRecords = &BadRecordReport{Counts: map[string]int64{}, max: r.examples}
	}
	return r.stats.BadRecords
}

// skipOne reports whether the next document that would be handed on is to be
// skipped instead (ReadOptions.SkipDocs), counting it.
func (r *docReader) skipOne() bool {
	if r.skip == 0 {
		return false
	}
	r.skip--
	r.stats.Skipped++
	if r.skip == 0 || r.stats.Skipped%skipProgressEvery == 0 {
		// Skipping is parsing: on a resumed run, minutes of it before the first
		// document, with the progress line at 0% all along. Its bytes, up to the last
		// document skipped, are reported as skipped (SkipProgress).
		r.tell(true)
	}
	return true
}

// skipProgressEvery is how many skipped documents go between two reports of progress.
const skipProgressEvery = 4096

// offer hands on d, a decoded document, unless it is empty or to be skipped.
// badUTF8 says that its text held invalid UTF-8, now U+FFFD.
func (r *docReader) offer(d Doc, badUTF8 bool) error {
	if d.Text == "" {
		r.stats.Empty++
		return nil
	}
	if r.skipOne() {
		if badUTF8 {
			r.skippedInvalidUTF8(d, func() int { return firstReplacement(d.Text) })
		}
		return nil
	}
	return r.emit(d, badUTF8)
}

// offerBytes is offer for a document read as bytes (a text file, a zip member, a
// Parquet value), whose UTF-8 nobody has checked yet.
func (r *docReader) offerBytes(text []byte, source string, line int) error {
	if len(text) == 0 {
		r.stats.Empty++
		return nil
	}
	if r.skipOne() {
		if !utf8.Valid(text) {
			r.skippedInvalidUTF8(Doc{Source: source, Line: line}, func() int { return firstReplacement(validUTF8(text)) })
		}
		return nil
	}
	if utf8.Valid(text) {
		return r.emit(Doc{Text: string(text), Source: source, Line: line}, false)
	}
	return r.emit(Doc{Text: validUTF8(text), Source: source, Line: line}, true)
}

// offerString is offer for a whole-file document, whose UTF-8 nobody has checked
// yet.
func (r *docReader) offerString(text, source string) error {
	if utf8.ValidString(text) {
		return r.offer(Doc{Text: text, Source: source}, false)
	}
	return r.offer(Doc{Text: validUTF8([]byte(text)), Source: source}, true)
}

// skippedInvalidUTF8 counts d, a document a resumed run skips (ReadOptions.SkipDocs)
// whose text holds invalid UTF-8, as emit counts a document handed on: the counts, and
// the report's examples, are an uninterrupted run's. first gives the byte of the first
// U+FFFD in d's text once its invalid UTF-8 is replaced (an example quotes it), called
// only while examples are wanted.
func (r *docReader) skippedInvalidUTF8(d Doc, first func() int) {
	r.stats.InvalidUTF8++
	at := -1
	if first != nil && r.wantsInvalidUTF8Example() {
		at = first()
	}
	r.report().addInvalidUTF8At(d, at)
}

// wantsInvalidUTF8Example reports whether the report would keep an example of the next
// document with invalid UTF-8.
func (r *docReader) wantsInvalidUTF8Example() bool {
	if rep := r.stats.BadRecords; rep != nil {
		return rep.shown[ReasonInvalidUTF8] < rep.max
	}
	return r.examples > 0
}

// firstReplacement is the byte of the first U+FFFD in text once its invalid UTF-8 is
// replaced (validUTF8), -1 if none.
func firstReplacement(text string) int { return strings.IndexRune(text, utf8.RuneError) }

// utf8Checker is an io.Writer that checks that what is written to it is valid UTF-8,
// a character cut between two writes included (readWhole's skipped documents), and
// finds where the first U+FFFD of the text with its invalid UTF-8 replaced would be:
// at the first invalid byte or the first U+FFFD written, whichever comes first (the
// bytes before the first invalid one are kept as they are).
type utf8Checker struct {
	n     int    // bytes written so far
	tail  []byte // the start of a character the last write cut off
	bad   bool   // an invalid byte was written (first is set)
	first int    // with seen: the byte of the first U+FFFD, written or for an invalid byte
	seen  bool
}

var replacementUTF8 = []byte(string(utf8.RuneError))

// note records at as the first U+FFFD unless one came before.
func (c *utf8Checker) note(at int) {
	if !c.seen {
		c.first, c.seen = at, true
	}
}

func (c *utf8Checker) Write(p []byte) (int, error) {
	n := len(p)
	start := c.n - len(c.tail) // where the tail, or p if none, starts in the text
	c.n += n
	if c.bad {
		return n, nil
	}
	if len(c.tail) > 0 {
		// Complete the cut character from p (at most 3 more bytes).
		k := min(len(p), utf8.UTFMax-len(c.tail))
		joined := append(c.tail, p[:k]...)
		if !utf8.FullRune(joined) {
			c.tail = joined
			return n, nil
		}
		r, size := utf8.DecodeRune(joined)
		if r == utf8.RuneError {
			c.note(start) // written as U+FFFD (size 3), or invalid (size 1)
			if size <= 1 {
				c.bad = true
				return n, nil
			}
		}
		p = p[size-len(c.tail):]
		start += size
		c.tail = c.tail[:0]
	}
	// The last character may go on in the next write.
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	q := p[:cut]
	if !c.seen {
		if k := bytes.Index(q, replacementUTF8); k >= 0 {
			c.note(start + k)
		}
	}
	if !utf8.Valid(q) {
		k := firstInvalid(q)
		if !c.seen || start+k < c.first {
			c.first, c.seen = start+k, true
		}
		c.bad = true
		return n, nil
	}
	c.tail = append(c.tail, p[cut:]...)
	return n, nil
}

// firstInvalid is the index of the first byte of b that does not start a valid
// character (b is not valid UTF-8).
func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// valid reports whether all that was written is valid UTF-8.
func (c *utf8Checker) valid() bool { return !c.bad && len(c.tail) == 0 }

// firstFFFD is where the first U+FFFD of the text with its invalid UTF-8 replaced is,
// once everything is written (-1 if none): a cut character left at the end is
// invalid.
func (c *utf8Checker) firstFFFD() int {
	if !c.seen && len(c.tail) > 0 {
		return c.n - len(c.tail)
	}
	if !c.seen {
		return -1
	}
	return c.first
}

// emit hands d, not empty, to fn.
func (r *docReader) emit(d Doc, badUTF8 bool) error {
	d.Range, d.Stripe = r.rangeIdx, r.stripe
	if badUTF8 {
		r.stats.InvalidUTF8++
		r.report().addInvalidUTF8(d)
	}
	r.stats.Docs++
	r.stats.TextBytes += int64(len(d.Text))
	if err := r.fn(d); err != nil {
		return err
	}
	if r.progress != nil {
		r.docsPending++
		if r.textPending += len(d.Text); r.docsPending >= 256 || r.textPending >= 1<<20 {
			r.reportProgress()
		}
	}
	return nil
}

// reportProgress calls progress with what it has not been told yet (skipProg, with
// the bytes, while documents are still to be skipped).
func (r *docReader) reportProgress() { r.tell(r.skip > 0) }

// tell is reportProgress; skipping says that the bytes not yet told were read
// skipping documents.
func (r *docReader) tell(skipping bool) {
	if r.progress == nil && (r.skipProg == nil || !skipping) {
		return
	}
	var bytes int64
	switch n, ok := r.frameRead(); {
	case ok:
		// Frames decoded in parallel: the file is read frames ahead of the data (all
		// of a file of a few frames at once), which showed 100% and "ETA 0:00" from
		// the start.
		bytes = r.counter.takeAt(n)
	case r.counter != nil:
		bytes = r.counter.take()
	}
	switch {
	case skipping && r.skipProg != nil:
		if bytes != 0 {
			r.skipProg(bytes)
		}
		if r.docsPending != 0 && r.progress != nil { // (none: skipped documents are not handed on)
			r.progress(0, r.docsPending)
		}
	case bytes != 0 || r.docsPending != 0:
		r.progress(bytes, r.docsPending)
	}
	r.docsPending, r.textPending = 0, 0
}

// frameRead is how far into the file the data read so far reaches when its zstd
// frames are decoded in parallel (frameStart); ok is false otherwise.
func (r *docReader) frameRead() (n int64, ok bool) {
	if r.frames == nil || r.counter == nil {
		return 0, false
	}
	return r.frames.streamRead()
}

// countingReader counts the bytes read through it (a zstd decoder reads in a
// goroutine of its own), or, for a file read out of order (zip, Parquet), is told
// how far the reading has got.
type countingReader struct {
	f        *os.File
	n        atomic.Int64 // bytes read
	reported int64        // bytes taken by take
	// limit, unless negative, caps the bytes reported: a byte range reads a little
	// past its end (its last line, the read-ahead), and its bytes are its length.
	limit int64
}

// total is the bytes read, capped by limit.
func (c *countingReader) total() int64 {
	n := c.n.Load()
	if c.limit >= 0 {
		n = min(n, c.limit)
	}
	return n
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// set says that the reading has got through n bytes of the file.
func (c *countingReader) set(n int64) { c.n.Store(n) }

// takeAt returns the bytes from its previous report up to n, the position the reading
// has got to (capped by limit; never backwards).
func (c *countingReader) takeAt(n int64) int64 {
	if c.limit >= 0 {
		n = min(n, c.limit)
	}
	if n <= c.reported {
		return 0
	}
	d := n - c.reported
	c.reported = n
	return d
}

// take returns the bytes read since its previous call.
func (c *countingReader) take() int64 {
	n := c.total()
	d := n - c.reported
	c.reported = n
	return d
}
