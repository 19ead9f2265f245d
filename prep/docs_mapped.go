package prep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"unsafe"

	"github.com/edsrzf/mmap-go"
)

// Plain JSONL files are read through a memory map: the lines are parsed where the
// page cache holds them, with no read(2) copying each byte into a buffer first (the
// copy was ~1.3% of `tokenize run`'s CPU on 100 MB of JSONL). A file that cannot be
// mapped (a pipe, a file of size 0 as /proc's are) is read as a stream.

// minMappedSize: smaller files are read; mapping one costs more than the copy. (A
// variable for the tests.)
var minMappedSize int64 = 1 << 20

// errCutWhileMapped: a mapped file got shorter while it was being read (the page
// past its new end faults).
var errCutWhileMapped = errors.New("the file got shorter while it was being read")

// errChangedWhileRead: a file read in pieces (ReadRangeBatchesParallel) changed, or was
// replaced, between the cut and the opening of a piece.
var errChangedWhileRead = errors.New("the file changed while it was being read")

// readMappedWhole reads the whole plain JSONL file through a memory map, as readMapped
// does, once it has checked that the data is not compressed (ok and the error if it is).
func (r *docReader) readMappedWhole(file *os.File, name string, size int64) (ok bool, err error) {
	if size < minMappedSize {
		return false, nil
	}
	if err := r.checkPlain(file, name); err != nil {
		return true, err
	}
	return r.readMapped(file, name, size, allLines, 0)
}

// readMapped reads the lines span says of the plain JSONL file, of size bytes, through
// a memory map; ok is false (and nothing read) when the file cannot be mapped, for the
// caller to read it as a stream. The reading counts the bytes from base on (r.counter).
// The caller has checked that the data is not compressed.
func (r *docReader) readMapped(file *os.File, name string, size int64, span lineSpan, base int64) (ok bool, err error) {
	if size < minMappedSize || int64(int(size)) != size {
		return false, nil
	}
	m, merr := mmap.Map(file, mmap.RDONLY, 0)
	if merr != nil {
		return false, nil
	}
	defer m.Unmap()
	lines := &mappedLines{data: m, off: int(min(span.start, int64(len(m)))), base: base, counter: r.counter}
	return true, r.readMappedLines(lines, name, span)
}

// compressedJSONL is the error for a .jsonl file whose data starts with head, or nil
// if it does not look compressed.
func compressedJSONL(name string, head []byte) error {
	if c := sniff(head); c != plain {
		return &FileError{File: name, Err: fmt.Errorf("the data is %s-compressed", c),
			Hint: fmt.Sprintf("rename the file to end in .jsonl%s", c.suffix())}
	}
	return nil
}

// readMappedLines is readLines over a mapped file, turning a fault on the mapping (the
// file was cut short meanwhile) into an error that says so.
func (r *docReader) readMappedLines(lines *mappedLines, name string, span lineSpan) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if f, ok := p.(interface{ Addr() uintptr }); ok && lines.holds(f.Addr()) {
			// The byte that faulted (the line being parsed may start well before it).
			at := int64(f.Addr() - uintptr(unsafe.Pointer(unsafe.SliceData(lines.data))))
			err = &FileError{File: name, Offset: at, Err: errCutWhileMapped, Hint: "read it again once nothing writes to it"}
			return
		}
		panic(p)
	}()
	return r.readLines(lines, name, span)
}

// mappedLines are the lines of a mapped file.
type mappedLines struct {
	data    []byte
	off     int             // where the next line starts
	base    int64           // where the counting starts
	counter *countingReader // told how far the reading has got, for progress
}

func (m *mappedLines) next() ([]byte, error) {
	rest := m.data[m.off:]
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n := bytes.IndexByte(rest, '\n') + 1
	var err error
	if n == 0 {
		n, err = len(rest), io.EOF
	}
	m.off += n
	m.counter.set(int64(m.off) - m.base)
	return rest[:n], err
}

func (m *mappedLines) skip() (int64, error) {
	line, err := m.next()
	return int64(len(line)), err
}

// holds reports whether addr lies in the mapping.
func (m *mappedLines) holds(addr uintptr) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	return addr >= start && addr < start+uintptr(len(m.data))
}
