package prep

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// readFile reads the documents of rg, a file of format f or a byte range of one.
func (r *docReader) readFile(rg FileRange, f format) error {
	name := rg.File
	file, err := os.Open(name)
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	if was := r.pieceOf; was != nil && (!os.SameFile(was, fi) || fi.Size() != was.Size() || !fi.ModTime().Equal(was.ModTime())) {
		return &FileError{File: name, Err: errChangedWhileRead, Hint: "read it again once nothing writes to it"}
	}
	r.counter = &countingReader{f: file, limit: -1}
	r.fileSize, r.member = fi.Size(), -1
	defer func() {
		r.stats.Bytes += r.counter.total()
		r.reportProgress()
		r.counter = nil
	}()
	switch {
	case rg.IsStriped():
		err = r.readStripes(rg, f)
	case !rg.IsWhole():
		err = r.readRange(file, rg, fi.Size())
	case f.kind == zipKind:
		err = r.readZip(file, name, fi.Size())
	case f.kind == parquetKind:
		err = r.readParquet(file, name, fi.Size())
	default:
		mapped := false
		if f.kind == jsonlKind && f.comp == plain {
			mapped, err = r.readMappedWhole(file, name, fi.Size())
		}
		if !mapped {
			err = r.readStream(name, f, fi.Size())
		}
	}
	if err == nil {
		// Gone through: read, or its corrupt rest skipped. A range counts its own
		// bytes, so that the ranges of a file add up to its size.
		r.counter.set(fi.Size())
	}
	return err
}

// readStream reads a file that is read front to back (JSONL or text, compressed
// or not) of size bytes.
func (r *docReader) readStream(name string, f format, size int64) error {
	src, closeSrc, err := decompress(r.counter, name, f)
	if err != nil {
		return err
	}
	defer closeSrc()
	r.frames, _ = src.(*parallelZstd)
	defer func() { r.frames = nil }()
	if f.kind == jsonlKind {
		return r.readJSONL(src, name, allLines)
	}
	return r.readWhole(src, name, size)
}

// readStripes reads the lines of the stripes rg owns of a JSONL file of format f,
// decompressing all of it.
func (r *docReader) readStripes(rg FileRange, f format) error {
	src, closeSrc, err := decompress(r.counter, rg.File, f)
	if err != nil {
		return err
	}
	defer closeSrc()
	r.frames, _ = src.(*parallelZstd)
	defer func() { r.frames = nil }()
	return r.readJSONL(src, rg.File, stripedSpan(rg))
}

// corrupt deals with a stream that cannot be read on, as e describes, unread bytes of
// the file not read because of it: never a bad record. Unless the reading accepts
// truncated files, e is the error, saying where the stream broke; with
// AcceptTruncated the rest of the stream is skipped (the caller returns nil) and
// counted.
func (r *docReader) corrupt(e *FileError, unread int64) error {
	unread = max(unread, 0)
	if !r.accept {
		e.Hint = hintCorrupt + ", or pass --accept-truncated to keep what precedes the damage"
		return e
	}
	r.stats.Truncated++
	r.stats.UnreadBytes += unread
	e.Err = fmt.Errorf("%w; %d bytes of the file not read", e.Err, unread)
	rep := r.report()
	kept := len(rep.Examples)
	rep.add(ReasonCorrupt, e, false)
	if len(rep.Examples) > kept {
		rep.Examples[kept].Unread = unread
	}
	return nil
}

// streamUnread is what a stream that breaks now leaves unread: the rest of the zip
// member being read, or else of the file (as far as the decompressor has read it).
func (r *docReader) streamUnread() int64 {
	if r.member >= 0 {
		return r.member
	}
	return r.fileSize - r.streamRead()
}

// streamRead is how far into the file the stream being decompressed got: the bytes
// read, or with frames decoded in parallel, the start of the frame being read (the
// cutter reads frames ahead). Once the streaming decoder has taken over (a zstd file of
// one frame of unknown size: zstd's own output), the bytes read again.
func (r *docReader) streamRead() int64 {
	if r.frames != nil {
		if n, ok := r.frames.streamRead(); ok {
			return n
		}
	}
	return r.counter.n.Load()
}

// streamError is the error of a compressed stream that breaks after decompressed bytes
// of data: where it broke, in the data and in the file.
func (r *docReader) streamError(err error, decompressed int64) error {
	if r.member >= 0 {
		return fmt.Errorf("%w (after %d bytes of the member's data)", err, decompressed)
	}
	return fmt.Errorf("%w (after %d bytes of data, having read %d of the file's %d bytes)", err, decompressed, r.streamRead(), r.fileSize)
}

// jsonlReadSize is readJSONL's buffer: 256 KiB stays in the L2 cache beside the
// tokenizers' tables; with this, the text arrays' and the shard writer's sizes cut to
// 256 KiB from 1 MiB, `tokenize run` on 100 MB of JSONL took ~4% less CPU (perf samples
// of the whole process over four alternating pairs of runs).
const jsonlReadSize = 256 << 10

// readJSONL reads one document per line of src, the lines span says. A line may be of
// any length: one that does not fit the reader's buffer is gathered in a buffer that
// grows.
func (r *docReader) readJSONL(src io.Reader, name string, span lineSpan) error {
	return r.readLines(&bufferedLines{br: bufio.NewReaderSize(src, jsonlReadSize)}, name, span)
}

// lineSource hands readLines the lines of a stream.
type lineSource interface {
	// next returns the next line, its '\n' included; with io.EOF, the last line if
	// it has no '\n' (else nothing); with another error, what was read of a line
	// when the stream broke.
	next() ([]byte, error)
	// skip goes past the next line as skipLine does.
	skip() (int64, error)
}

// bufferedLines are the lines of a reader, through a bufio.Reader.
type bufferedLines struct {
	br   *bufio.Reader
	long []byte // a line longer than br's buffer, gathered
}

func (b *bufferedLines) next() ([]byte, error) {
	line, err := b.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		b.long = append(b.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = b.br.ReadSlice('\n')
			b.long = append(b.long, line...)
		}
		line = b.long
	}
	return line, err
}

func (b *bufferedLines) skip() (int64, error) { return skipLine(b.br) }

// readLines is readJSONL over lines.
func (r *docReader) readLines(lines lineSource, name string, span lineSpan) error {
	off := span.start
	for i := 1; ; i++ {
		if i%1024 == 0 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
		}
		if span.end >= 0 && off >= span.end {
			return nil
		}
		n := 0 // the line's number, when known
		if span.numbered {
			n = i
		}
		lineOff := off
		stripe, owned := span.stripeOf(off)
		if !owned {
			// Another reader's line: its end is all that matters. A stream that
			// breaks here is the stripe owner's to report; for this reader the
			// file ends.
			skipped, err := lines.skip()
			off += skipped
			if err != nil {
				return nil
			}
			continue
		}
		r.stripe = stripe
		line, err := lines.next()
		off += int64(len(line))
		if r.lines != nil && len(line) > 0 {
			*r.lines++
		}
		switch {
		case err == io.EOF && len(line) == 0:
			return nil
		case err != nil && err != io.EOF:
			// The lines before are kept; this one, cut short, and the rest are lost.
			return r.corrupt(&FileError{File: name, Line: n, Offset: offsetIfUnnumbered(n, lineOff), Err: r.streamError(err, off)}, r.streamUnread())
		}
		if !BlankLine(line) {
			if err := r.jsonLine(line, name, n, lineOff, err == nil); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// offsetIfUnnumbered is a line's FileError.Offset: its byte offset when its number n
// is not known.
func offsetIfUnnumbered(n int, off int64) int64 {
	if n > 0 {
		return 0
	}
	return off
}

// jsonLine takes line n of file name (0: a line of unknown number), not blank, that
// starts at byte off, through the steps of a record: terminated is whether it ended
// with a newline.
func (r *docReader) jsonLine(line []byte, name string, n int, off int64, terminated bool) error {
	at := offsetIfUnnumbered(n, off)
	rec, err := scanRecord(line, r.key, r.filtering())
	if err != nil {
		reason := ReasonInvalidJSON
		if errors.Is(err, ErrNotObject) {
			reason = ReasonNotObject
		}
		e := lineError(name, n, n == 1 && !r.relativeLines, err, terminated)
		e.Offset = at
		if n == 1 && !r.relativeLines && bytes.HasPrefix(line, utf8BOM) {
			e.Hint = hintBOM
		}
		return r.bad(reason, e)
	}
	if r.filtering() {
		switch named, equal := rec.setIs(r.filter); {
		case !named:
			r.stats.Filtered++
			r.stats.NoMeta++
			return nil
		case !equal:
			r.stats.Filtered++
			return nil
		}
	}
	if rec.text == nil {
		e := missingError(name, n, line, r.key)
		e.Offset = at
		return r.bad(ReasonMissingText, e)
	}
	// A string tells whether it is empty without being decoded: a skipped
	// document costs the scan only.
	isString, empty := rec.emptyString()
	if isString {
		if empty {
			r.stats.Empty++
			return nil
		}
		if r.skipOne() {
			if rec.textFlags&strBadUTF8 != 0 {
				r.skippedInvalidUTF8(Doc{Source: name, Line: n, Offset: at}, func() int {
					text, _, _ := rec.decode(r.arena) // (a string: no error)
					return firstReplacement(text)
				})
			}
			return nil
		}
	}
	text, badUTF8, err := rec.decode(r.arena)
	if err != nil {
		e := lineError(name, n, n == 1 && !r.relativeLines, err, terminated)
		e.Offset = at
		return r.bad(ReasonNotText, e)
	}
	d := Doc{Text: text, Source: name, Line: n, Offset: at}
	if isString {
		return r.emit(d, badUTF8)
	}
	return r.offer(d, badUTF8)
}

// readWhole reads all of src as one document of source; sizeHint is a start for
// its size. A stream that breaks off is a corrupt record: the document is dropped.
func (r *docReader) readWhole(src io.Reader, source string, sizeHint int64) error {
	if r.skip > 0 {
		// Skipped unread, but for its UTF-8 check (its invalid UTF-8 counts as an
		// uninterrupted run's would).
		var check utf8Checker
		n, err := io.Copy(&check, src)
		switch {
		case err != nil:
			return r.corrupt(&FileError{File: source, Err: r.streamError(err, n)}, r.streamUnread())
		case n == 0:
			r.stats.Empty++
		default:
			r.skipOne()
			if !check.valid() {
				r.skippedInvalidUTF8(Doc{Source: source}, check.firstFFFD)
			}
		}
		return nil
	}
	var text strings.Builder
	text.Grow(int(min(sizeHint, 1<<30))) // exact for plain files; a start for compressed ones
	if n, err := io.Copy(&text, src); err != nil {
		return r.corrupt(&FileError{File: source, Err: r.streamError(err, n)}, r.streamUnread())
	}
	return r.offerString(text.String(), source)
}
