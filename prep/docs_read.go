package prep

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
)

// readFile reads the documents of file name, of format f.
func (r *docReader) readFile(name string, f format) error {
	file, err := os.Open(name)
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return &FileError{File: name, Err: err}
	}
	r.counter = &countingReader{f: file}
	defer func() {
		r.stats.Bytes += r.counter.n.Load()
		r.reportProgress()
		r.counter = nil
	}()
	switch f.kind {
	case zipKind:
		err = r.readZip(file, name, fi.Size())
	case parquetKind:
		err = r.readParquet(file, name, fi.Size())
	default:
		err = r.readStream(name, f, fi.Size())
	}
	if err == nil {
		r.counter.set(fi.Size()) // gone through: read, or its corrupt rest skipped
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
	if f.kind == jsonlKind {
		return r.readJSONL(src, name)
	}
	return r.readWhole(src, name, size)
}

// corrupt deals with a stream that cannot be read on, as e describes: with Skip, the
// rest of it is skipped (and the caller returns nil); with Fail, e is returned.
func (r *docReader) corrupt(e *FileError) error {
	return r.bad(ReasonCorrupt, e)
}

// readJSONL reads one document per line of src. A line may be of any length: one
// that does not fit the reader's buffer is gathered in a buffer that grows.
func (r *docReader) readJSONL(src io.Reader, name string) error {
	br := bufio.NewReaderSize(src, 1<<20)
	var long []byte
	for n := 1; ; n++ {
		if n%1024 == 0 {
			if err := r.ctx.Err(); err != nil {
				return err
			}
		}
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		switch {
		case err == io.EOF && len(line) == 0:
			return nil
		case err != nil && err != io.EOF:
			// The lines before are kept; this one, cut short, and the rest are lost.
			return r.corrupt(&FileError{File: name, Line: n, Err: err, Hint: hintCorrupt})
		}
		if len(trimSpace(line)) > 0 {
			if err := r.jsonLine(line, name, n, err == nil); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// jsonLine takes line n of file name, not blank, through the steps of a record:
// terminated is whether it ended with a newline.
func (r *docReader) jsonLine(line []byte, name string, n int, terminated bool) error {
	rec, err := scanRecord(line, r.key, r.filtering())
	if err != nil {
		reason := ReasonInvalidJSON
		if errors.Is(err, ErrNotObject) {
			reason = ReasonNotObject
		}
		return r.bad(reason, lineError(name, n, err, terminated))
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
		return r.bad(ReasonMissingText, missingError(name, n, line, r.key))
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
			return nil
		}
	}
	text, badUTF8, err := rec.decode()
	if err != nil {
		return r.bad(ReasonNotText, lineError(name, n, err, terminated))
	}
	d := Doc{Text: text, Source: name, Line: n}
	if isString {
		return r.emit(d, badUTF8)
	}
	return r.offer(d, badUTF8)
}

// readWhole reads all of src as one document of source; sizeHint is a start for
// its size. A stream that breaks off is a corrupt record: the document is dropped.
func (r *docReader) readWhole(src io.Reader, source string, sizeHint int64) error {
	if r.skip > 0 {
		n, err := io.Copy(io.Discard, src)
		switch {
		case err != nil:
			return r.corrupt(&FileError{File: source, Err: err, Hint: hintCorrupt})
		case n == 0:
			r.stats.Empty++
		default:
			r.skipOne()
		}
		return nil
	}
	var text strings.Builder
	text.Grow(int(min(sizeHint, 1<<30))) // exact for plain files; a start for compressed ones
	if _, err := io.Copy(&text, src); err != nil {
		return r.corrupt(&FileError{File: source, Err: err, Hint: hintCorrupt})
	}
	return r.offerString(text.String(), source)
}
