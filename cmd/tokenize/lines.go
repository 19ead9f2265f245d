package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
)

// lineReader reads stdin line by line, however long a line is.
type lineReader struct {
	r     *bufio.Reader
	line  int   // number of the last line read, from 1
	bytes int64 // bytes read, newlines included
	done  bool  // input ended
}

func newLineReader(ctx context.Context, r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(&contextReader{ctx: ctx, r: r}, 1<<20)}
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
		lr.bytes += int64(len(frag))
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

// contextReader returns from Read once ctx is done, even while r blocks (a terminal or
// a pipe with nothing to read): the blocked read is abandoned, and so must be the
// reader.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

type readResult struct {
	n   int
	err error
}

func (c *contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	done := make(chan readResult, 1)
	go func() {
		n, err := c.r.Read(p)
		done <- readResult{n, err}
	}()
	select {
	case res := <-done:
		return res.n, res.err
	case <-c.ctx.Done():
		return 0, c.ctx.Err()
	}
}
