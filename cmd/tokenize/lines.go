package main

import (
	"bufio"
	"fmt"
	"io"
)

// lineReader reads stdin line by line, however long a line is.
type lineReader struct {
	r    *bufio.Reader
	line int  // number of the last line read, from 1
	done bool // input ended
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// appendLine appends the next line, without its "\n", to dst. ok is false at the end of
// the input: an empty remainder after the last "\n" is the end, not a line.
func (lr *lineReader) appendLine(dst []byte) (out []byte, ok bool, err error) {
	if lr.done {
		return dst, false, nil
	}
	start := len(dst)
	for {
		frag, err := lr.r.ReadSlice('\n')
		dst = append(dst, frag...)
		switch err {
		case nil:
			lr.line++
			return dst[:len(dst)-1], true, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			lr.done = true
			if len(dst) == start {
				return dst, false, nil
			}
			lr.line++
			return dst, true, nil
		default:
			lr.done = true
			return dst[:start], false, fmt.Errorf("read stdin after line %d: %w", lr.line, err)
		}
	}
}

// lineError is an error about one line of stdin.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("stdin line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }
