package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/edsrzf/mmap-go"
)

// `tokenize encode --jsonl` reads stdin through a memory map when it is a regular file
// of at least mapStdinMin bytes: its lines are parsed where the page cache holds them,
// with no read(2) copying every byte into a batch first (that copy was ~3% of the
// command's CPU on 100 MB of JSONL). A pipe, a terminal or a small file is read as a
// stream (readBatches).

// mapStdinMin: smaller files are read; mapping one costs more than the copy. (A
// variable for the tests.)
var mapStdinMin int64 = 1 << 20

// errStdinCut: stdin, a mapped file, got shorter while it was being read (the page
// past its new end faults).
var errStdinCut = errors.New("the file got shorter while it was being read; run again once nothing writes to it")

// stdinMap is stdin mapped: data is the file from stdin's offset on.
type stdinMap struct {
	whole mmap.MMap
	data  []byte
}

// mapStdin maps in when it is a regular file of at least mapStdinMin bytes from its
// offset on, or returns nil (read it as a stream). The caller unmaps it once nothing
// reads it any more.
func mapStdin(in io.Reader) *stdinMap {
	f, ok := in.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || int64(int(fi.Size())) != fi.Size() {
		return nil
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil || fi.Size()-pos < mapStdinMin {
		return nil
	}
	m, err := mmap.Map(f, mmap.RDONLY, 0)
	if err != nil || int64(len(m)) < pos {
		if err == nil {
			m.Unmap()
		}
		return nil
	}
	if stdinMappedHook != nil {
		stdinMappedHook(f)
	}
	return &stdinMap{whole: m, data: m[pos:]}
}

// stdinMappedHook, if set (by tests), is called with stdin once it is mapped.
var stdinMappedHook func(*os.File)

func (m *stdinMap) unmap() { m.whole.Unmap() }

// holds reports whether addr lies in the mapping.
func (m *stdinMap) holds(addr uintptr) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(m.whole)))
	return addr >= start && addr < start+uintptr(len(m.whole))
}

// faultIn turns p, a value recovered from a panic, into errStdinCut if it is a fault
// on the mapping (the calling goroutine has debug.SetPanicOnFault set), and panics
// again with anything else.
func (m *stdinMap) faultIn(p any) error {
	if f, ok := p.(interface{ Addr() uintptr }); ok && m.holds(f.Addr()) {
		return errStdinCut
	}
	panic(p)
}

// readMappedBatches is readBatches over a mapped stdin: each batch's data is a slice
// of the mapping (never appended to), cut after the first line end at or past
// batchBytes, or at batchLines lines.
func readMappedBatches(ctx context.Context, m *stdinMap, batches, jobs chan<- *lineBatch, free <-chan *lineBatch) {
	line := 0
	for off := 0; ; {
		var b *lineBatch
		select {
		case b = <-free:
			*b = lineBatch{ends: b.ends[:0], out: b.out[:0]}
		default:
			b = &lineBatch{}
		}
		b.firstLine, b.done = line+1, make(chan struct{})
		rest := m.data[off:]
		if err := b.cutMapped(m, rest); err != nil {
			b.readErr = &lineError{line: line + 1, err: err}
		} else if len(b.data) == 0 {
			// (cutLineEnds takes at least a line of a non-empty rest at the end of
			// the input: never, but not a loop that takes nothing for ever.)
			b.readErr = fmt.Errorf("stdin line %d: no line taken from %d bytes", line+1, len(rest))
		}
		off += len(b.data)
		line += len(b.ends)
		b.size = int64(len(b.data))
		last := off == len(m.data) || b.readErr != nil
		select {
		case batches <- b:
		case <-ctx.Done():
			return
		}
		select {
		case jobs <- b:
		case <-ctx.Done():
			return
		}
		if last {
			return
		}
	}
}

// cutMapped sets b.data to the lines of rest that the batch takes and b.ends to their
// ends (as cutLines does, the input ending where rest ends), or returns errStdinCut
// if the mapping faulted meanwhile.
func (b *lineBatch) cutMapped(m *stdinMap, rest []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			b.data, b.ends = rest[:0], b.ends[:0]
			err = m.faultIn(p)
		}
	}()
	var cut int
	b.ends, cut = cutLineEnds(b.ends, rest, batchBytes, true)
	b.data = rest[:cut]
	return nil
}

// cutLineEnds appends to ends (empty) the ends of the lines of data, up to and
// including the first that ends at or past limit bytes and at most batchLines lines,
// and returns them with the bytes they cover. At the end of the input (atEOF) an
// unended line is a line.
func cutLineEnds(ends []int, data []byte, limit int, atEOF bool) ([]int, int) {
	start := 0
	for len(ends) < batchLines && start < len(data) {
		if start >= limit {
			break
		}
		k := bytes.IndexByte(data[start:], '\n')
		if k < 0 {
			if atEOF {
				ends = append(ends, len(data))
				start = len(data)
			}
			break
		}
		ends = append(ends, start+k)
		start += k + 1
	}
	return ends, start
}
