package prep

import (
	"bufio"
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
	r.counter = &countingReader{f: file}
	defer func() {
		r.stats.Bytes += r.counter.n.Load()
		r.reportProgress()
		r.counter = nil
	}()
	src, closeSrc, err := decompress(r.counter, name, f)
	if err != nil {
		return err
	}
	defer closeSrc()
	if f.jsonl {
		return r.readJSONL(src, name)
	}
	return r.readText(src, name)
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
			return &FileError{File: name, Line: n, Err: err, Hint: hintCorrupt}
		}
		if len(trimSpace(line)) > 0 {
			text, ok, ferr := TextField(line, r.key)
			switch {
			case ferr != nil:
				return lineError(name, n, ferr, err == nil)
			case !ok:
				return missingError(name, n, line, r.key)
			}
			if err := r.emit(Doc{Text: text, Source: name, Line: n}); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// readText reads all of src as one document.
func (r *docReader) readText(src io.Reader, name string) error {
	var text strings.Builder
	if fi, err := r.counter.f.Stat(); err == nil {
		text.Grow(int(fi.Size())) // exact for plain files; a start for compressed ones
	}
	if _, err := io.Copy(&text, src); err != nil {
		return &FileError{File: name, Err: err, Hint: hintCorrupt}
	}
	return r.emit(Doc{Text: text.String(), Source: name})
}
