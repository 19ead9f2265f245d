package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"gptkit/internal/progress"
	"gptkit/prep"
	"gptkit/tokenize"
)

// encodeLines runs --jsonl encoding as a pipeline. A reader goroutine cuts stdin into
// batches of about batchBytes, queues each batch for the writer in input order and
// hands its lines to the workers one by one; the writer (this goroutine) waits for
// each batch in turn and writes its ids. At most batchQueue batches wait for the
// writer, which bounds memory, and workers can start on the next batch while the
// slowest line of the current one is still being encoded.
//
// bar, if not nil, counts the input bytes and lines of each batch once it is written.
func encodeLines(ctx context.Context, tok *tokenize.Tokenizer, in io.Reader, out *bufio.Writer, textKey string, workers int, bar *progress.Bar) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the reader and the workers on an early return

	batches := make(chan *lineBatch, batchQueue)
	jobs := make(chan lineJob, 4*workers)
	for range workers {
		go func() {
			for job := range jobs {
				job.batch.encode(job.index, tok, textKey)
			}
		}()
	}
	go func() {
		defer close(jobs)
		defer close(batches)
		readBatches(ctx, newLineReader(ctx, in), batches, jobs)
	}()

	for {
		var batch *lineBatch
		select {
		case <-ctx.Done():
			return ctx.Err()
		case b, ok := <-batches:
			if !ok {
				return nil
			}
			batch = b
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-batch.done:
		}
		for i := range batch.ends {
			if err := batch.errs[i]; err != nil {
				return &lineError{line: batch.firstLine + i, err: err}
			}
			if err := writeIDs(out, batch.ids[i]); err != nil {
				return fmt.Errorf("write stdout: %w", err)
			}
		}
		bar.Add(batch.size, int64(len(batch.ends)))
		if batch.readErr != nil {
			return batch.readErr
		}
	}
}

// Batching: a batch closes once it holds batchBytes of text or batchLines lines.
const (
	batchBytes = 4 << 20
	batchLines = 8192
	batchQueue = 4
)

// lineBatch is a run of consecutive input lines and, once done is closed, their ids.
type lineBatch struct {
	firstLine int    // number of the first line, from 1
	size      int64  // bytes of input it covers, newlines included
	data      []byte // the lines back to back, without their newlines
	ends      []int  // line i is data[ends[i-1]:ends[i]], with ends[-1] taken as 0
	readErr   error  // error reading stdin after the last line, if any

	ids       [][]int
	errs      []error
	remaining atomic.Int64  // lines not yet encoded
	done      chan struct{} // closed when remaining reaches 0
}

func (b *lineBatch) line(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.data[start:b.ends[i]]
}

// encode encodes line i, recording its ids or its error, and closes done after the
// batch's last line.
func (b *lineBatch) encode(i int, tok *tokenize.Tokenizer, textKey string) {
	text, err := textField(b.line(i), textKey)
	if err == nil {
		b.ids[i], err = tok.EncodeChecked(text)
	}
	b.errs[i] = err
	if b.remaining.Add(-1) == 0 {
		close(b.done)
	}
}

// lineJob asks a worker to encode line index of batch.
type lineJob struct {
	batch *lineBatch
	index int
}

// readBatches reads lr into batches, sending each to batches and its lines to jobs,
// until the input ends, a read fails, or ctx is done.
func readBatches(ctx context.Context, lr *lineReader, batches chan<- *lineBatch, jobs chan<- lineJob) {
	for {
		start := lr.bytes
		b := &lineBatch{firstLine: lr.line + 1, data: make([]byte, 0, batchBytes+batchBytes/8), done: make(chan struct{})}
		more := true
		for len(b.data) < batchBytes && len(b.ends) < batchLines {
			var err error
			b.data, more, err = lr.appendLine(b.data)
			if err != nil {
				b.readErr = err
			}
			if !more {
				break
			}
			b.ends = append(b.ends, len(b.data))
		}
		n := len(b.ends)
		b.size = lr.bytes - start
		b.ids, b.errs = make([][]int, n), make([]error, n)
		b.remaining.Store(int64(n))
		if n == 0 {
			close(b.done)
		}
		select {
		case batches <- b:
		case <-ctx.Done():
			return
		}
		for i := range n {
			select {
			case jobs <- lineJob{batch: b, index: i}:
			case <-ctx.Done():
				return
			}
		}
		if !more {
			return
		}
	}
}

// textField returns the text of the JSON object in line: its member key, a string or
// a list of strings (joined with "\n\n", as GPT-NeoX reads corpora). prep.TextField
// does the work, as encoding/json would but several times faster.
func textField(line []byte, key string) (string, error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return "", errors.New("empty line, want a JSON object")
	}
	if trimmed[0] != '{' {
		return "", fmt.Errorf("not a JSON object (it starts with %q)", truncate(trimmed, 20))
	}
	text, ok, err := prep.TextField(trimmed, key)
	if te, isType := errors.AsType[*prep.TypeError](err); isType {
		return "", fmt.Errorf("field %q is %s, not a string or a list of strings", key, truncate([]byte(te.Value), 20))
	}
	if err != nil {
		return "", err // "invalid JSON at byte N: ..."
	}
	if !ok {
		return "", fmt.Errorf("field %q missing (pass --text-key to pick another field)", key)
	}
	return text, nil
}

// truncate shortens b for an error message.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
