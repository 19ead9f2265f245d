package prep

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"

	"gptkit/internal/inflate"
)

// readZip reads each member of the zip archive f (size bytes, named name) as one
// document, in archive order, as lm_dataformat does (enwik8.zip holds one member,
// enwik8: one 100 MB document). Directories are passed over. A member that cannot
// be read is a corrupt record: with Skip, the next member is read.
func (r *docReader) readZip(f *os.File, name string, size int64) error {
	zr, err := zip.NewReader(f, size)
	if err != nil {
		return &FileError{File: name, Err: fmt.Errorf("not a readable zip archive: %w", err), Hint: hintCorrupt}
	}
	// internal/inflate is quicker than the standard library's decoder and klauspost's.
	zr.RegisterDecompressor(zip.Deflate, func(r io.Reader) io.ReadCloser { return inflate.NewReader(r) })
	for i, m := range zr.File {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if !m.FileInfo().IsDir() {
			if err := r.readMember(m, name+":"+m.Name); err != nil {
				return err
			}
		}
		r.counter.set(size * int64(i+1) / int64(len(zr.File)))
	}
	return nil
}

// readMember reads the zip member m, named source, as one document.
func (r *docReader) readMember(m *zip.File, source string) error {
	rc, err := m.Open()
	if err != nil {
		hint := hintCorrupt
		if errors.Is(err, zip.ErrAlgorithm) {
			hint = fmt.Sprintf("its compression method (%d) is not supported: store or deflate it", m.Method)
		}
		e := r.corrupt(&FileError{File: source, Err: err}, int64(m.CompressedSize64))
		if fe, ok := e.(*FileError); ok && errors.Is(err, zip.ErrAlgorithm) {
			fe.Hint = hint
		}
		return e
	}
	defer rc.Close()
	r.member = int64(m.CompressedSize64)
	defer func() { r.member = -1 }()
	return r.readWhole(rc, source, int64(min(m.UncompressedSize64, 1<<30)))
}
