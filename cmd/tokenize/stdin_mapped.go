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

// errStdinCut: a page of stdin, a mapped file, could not be read: the file got shorter
// while it was being read (the pages past its new end fault), or the disk failed.
var errStdinCut = errors.New("the file got shorter while it was being read, or could not be read; run again once nothing writes to it")

// stdinMap is stdin mapped: data is the file from stdin's offset pos on.
type stdinMap struct {
	file  *os.File
	pos   int64
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
	if err != nil || int64(len(m)) <= pos {
		if err == nil {
			m.Unmap()
		}
		return nil
	}
	if stdinMappedHook != nil {
		stdinMappedHook(f)
	}
	return &stdinMap{file: f, pos: pos, whole: m, data: m[pos:]}
}

// stdinMappedHook, if set (by tests), is called with stdin once it is mapped.
var stdinMappedHook func(*os.File)

func (m *stdinMap) unmap() { m.whole.Unmap() }

// done leaves stdin's offset after the consumed bytes, as a stream's reading would
// (a shell's `{ tokenize encode --jsonl; cat; } < FILE` gives cat the rest).
func (m *stdinMap) done(consumed int64) { m.file.Seek(m.pos+consumed, io.SeekStart) }

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
			b.readErr = &lineError{line: line + len(b.ends) + 1, err: err}
		} else if len(b.data) == 0 {
			// (cutMapped takes at least a line of a non-empty rest: never, but not a
			// loop that takes nothing for ever.)
			b.readErr = fmt.Errorf("stdin line %d: no line taken from %d bytes", line+1, len(rest))
		}
		off += len(b.data)
		line += len(b.ends)
		b.size = int64(len(b.data))
		last := off == len(m.data) || b.readErr != nil
		if !queueBatch(ctx, b, batches, jobs) || last {
			return
		}
	}
}

// cutMapped takes the batch's lines from rest: b.data and b.ends (as cutLines gives
// them, the input ending where rest ends), up to and including the first line that
// ends at or past batchBytes, and at most batchLines. A fault on the mapping (the file
// cut short meanwhile) ends the batch after the lines found before it, with
// errStdinCut.
func (b *lineBatch) cutMapped(m *stdinMap, rest []byte) (err error) {
	start := 0
	b.ends = b.ends[:0]
	defer func() {
		if p := recover(); p != nil {
			err = m.faultIn(p)
		}
		b.data = rest[:start]
	}()
	for len(b.ends) < batchLines && start < len(rest) && start < batchBytes {
		k := bytes.IndexByte(rest[start:], '\n')
		if k < 0 { // the input's last line, unended
			b.ends = append(b.ends, len(rest))
			start = len(rest)
			break
		}
		b.ends = append(b.ends, start+k)
		start += k + 1
	}
	return nil
}
