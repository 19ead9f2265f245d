package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sync"
	"unsafe"

	"gptkit/internal/progress"
	"gptkit/prep"
	"gptkit/tokenize"
)

// encodeLines runs --jsonl encoding as a pipeline. A reader goroutine cuts stdin into
// batches of about batchBytes (a regular file through a memory map: stdin_mapped.go)
// and queues each batch for the writer in input order and for the workers; a worker parses, encodes and formats all the lines of a batch into
// one buffer; the writer (this goroutine) waits for each batch in turn and writes it.
// At most batchQueue batches per worker are in flight, which bounds memory; buffers go
// back to the reader for the next batches.
//
// bar, if not nil, counts the input bytes and lines of each batch once it is written.
// It returns once the reader and the workers have stopped; with a mapped stdin it
// leaves stdin's offset after the batches written.
//
// bad counts the lines whose text held invalid UTF-8 (encoded with U+FFFD in its place,
// as encoding/json decodes it), of the batches written.
func encodeLines(ctx context.Context, tok *tokenize.Tokenizer, in io.Reader, out *bufio.Writer, textKey string, workers int, bar *progress.Bar, ft *idText, bad *badUTF8Lines) error {
	mapped := mapStdin(in)
	var wg sync.WaitGroup
	var consumed int64 // input bytes of the batches written
	defer func() {
		// (After cancel, below.) Nothing reads stdin, or the mapping, any more: a
		// worker finishes the line it encodes, a blocked read is abandoned.
		wg.Wait()
		if mapped != nil {
			mapped.unmap()
			mapped.done(consumed)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the reader and the workers on an early return

	batches := make(chan *lineBatch, batchQueue*workers)
	jobs := make(chan *lineBatch, batchQueue*workers)
	free := make(chan *lineBatch, batchQueue*workers+2)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if mapped != nil {
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			}
			var sc lineScratch
			for b := range jobs {
				if err := ctx.Err(); err != nil {
					b.err = err // not encoded: the writer must not take it for done
				} else {
					b.encodeFrom(mapped, tok, textKey, ft, &sc)
				}
				close(b.done)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		defer close(batches)
		if mapped != nil {
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			readMappedBatches(ctx, mapped, batches, jobs, free)
			return
		}
		readBatches(ctx, &chunkReader{r: &contextReader{ctx: ctx, r: in}}, batches, jobs, free)
	}()

	for {
		var b *lineBatch
		select {
		case <-ctx.Done():
			return ctx.Err()
		case next, ok := <-batches:
			if !ok {
				return ctx.Err() // (not nil if the reader stopped for it)
			}
			b = next
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
		}
		if _, err := out.Write(b.out); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		if b.err != nil {
			return b.err
		}
		bar.Add(b.size, int64(len(b.ends)))
		consumed += b.size
		bad.add(b.badUTF8, b.firstBadUTF8)
		if b.readErr != nil {
			return b.readErr
		}
		select {
		case free <- b:
		default:
		}
	}
}

// Batching: a batch closes once it holds batchBytes of text or batchLines lines.
// (Variables for the tests: FuzzEncodeJSONLMappedStdin makes them small.)
var (
	batchBytes = 1 << 20
	batchLines = 8192
)

const batchQueue = 2

// lineBatch is a run of consecutive input lines and, once done is closed, their ids as
// JSON arrays (up to the first bad line, whose error err is).
type lineBatch struct {
	firstLine int    // number of the first line, from 1
	size      int64  // bytes of input it covers, newlines included
	data      []byte // the lines back to back, with their newlines
	ends      []int  // line i is data[ends[i-1]+1:ends[i]], with ends[-1] taken as -1
	readErr   error  // error reading stdin after the last line, if any

	encoded int // lines encoded so far (where a fault on a mapped stdin happened)
	// badUTF8 counts its lines whose text held invalid UTF-8, the first of them
	// firstBadUTF8 (0: none).
	badUTF8, firstBadUTF8 int

	out  []byte        // one JSON array and a newline per line
	err  error         // the first bad line (a *lineError); out holds the lines before it
	done chan struct{} // closed once out and err are set
}

func (b *lineBatch) line(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1] + 1
	}
	return b.data[start:b.ends[i]]
}

// encode parses, encodes and formats the batch's lines into b.out, stopping at the
// first bad one. A blank line (prep.BlankLine) is skipped: it has no array in b.out,
// and the lines after it keep their numbers. sc is the worker's scratch space: each line's text is decoded into
// sc.text (the tokenizer keeps nothing of a text it encodes) and its ids go to sc.ids.
func (b *lineBatch) encode(tok *tokenize.Tokenizer, textKey string, ft *idText, sc *lineScratch) {
	checked := tok.Kind() == tokenize.KindChar // only a character vocabulary can refuse a text
	ids := sc.ids
	defer func() {
		sc.ids = ids
		if cap(sc.text) > maxScratchText {
			sc.text = nil // do not keep a huge line's text
		}
	}()
	// Room for the ids' text at once (~1.5 bytes per input byte on the mixed corpus
	// under GPT-2): growing b.out by doubling from nothing allocated 60% more. At
	// least 2.5·batchBytes, so that the buffer serves the next batches too: sized to
	// each batch, half the batches (a line longer than the last's at the end) made a
	// fresh one, ~20 MB of fresh pages a 100 MB input.
	if want := 2 * len(b.data); cap(b.out) < want {
		b.out = make([]byte, 0, max(want, 2*batchBytes+batchBytes/2))
	}
	for i := range b.ends {
		b.encoded = i
		line := b.line(i)
		if prep.BlankLine(line) {
			continue // skipped, as tokenize run and train skip it: no output line
		}
		var err error
		var bad bool
		sc.text, bad, err = appendTextField(sc.text[:0], line, textKey)
		if bad {
			if b.badUTF8++; b.badUTF8 == 1 {
				b.firstBadUTF8 = b.firstLine + i
			}
		}
		text := unsafe.String(unsafe.SliceData(sc.text), len(sc.text))
		if err == nil {
			if checked {
				ids, err = tok.EncodeChecked(text)
			} else {
				ids = tok.AppendEncode(ids[:0], text)
			}
		}
		if err != nil {
			b.err = &lineError{line: b.firstLine + i, err: err}
			return
		}
		b.out = ft.appendArray(b.out, ids)
	}
}

// encodeFrom is encode over a batch whose data may be a slice of m, a mapped stdin
// (nil if not): a fault on the mapping becomes the batch's error.
func (b *lineBatch) encodeFrom(m *stdinMap, tok *tokenize.Tokenizer, textKey string, ft *idText, sc *lineScratch) {
	if m == nil {
		b.encode(tok, textKey, ft, sc)
		return
	}
	defer func() {
		if p := recover(); p != nil {
			b.err = &lineError{line: b.firstLine + b.encoded, err: m.faultIn(p)}
		}
	}()
	b.encode(tok, textKey, ft, sc)
}

// maxScratchText is the most text a worker keeps room for between batches.
const maxScratchText = 16 << 20

// lineScratch is a worker's reused memory: the text of the line it encodes and its ids.
type lineScratch struct {
	text []byte
	ids  []int
}

// chunkReader reads stdin for readBatches in large reads straight into a batch's
// buffer (no line-by-line copy out of a bufio.Reader: that copy and its search for
// each newline were ~3% of the command on 4 KB documents); the bytes after the last
// line a batch takes are carried to the next.
type chunkReader struct {
	r     io.Reader
	carry []byte // what the last batch read beyond its lines
	line  int    // lines handed on
	eof   bool   // the input ended
	err   error  // a read failed
}

// readBatches reads cr into batches, sending each to batches (for the writer) and to
// jobs (for the workers), until the input ends, a read fails, or ctx is done. It takes
// batches the writer is done with from free. Every "\n" ends a line; what follows the
// last one is a line unless it is empty; after a failed read, it is dropped and the
// last batch carries the error.
func readBatches(ctx context.Context, cr *chunkReader, batches, jobs chan<- *lineBatch, free <-chan *lineBatch) {
	for {
		var b *lineBatch
		select {
		case b = <-free:
			*b = lineBatch{data: b.data[:0], ends: b.ends[:0], out: b.out[:0]}
		default:
			b = &lineBatch{data: make([]byte, 0, batchBytes+batchBytes/8)}
		}
		b.firstLine, b.done = cr.line+1, make(chan struct{})
		b.data = append(b.data, cr.carry...)
		cr.carry = cr.carry[:0]
		scanned := 0 // b.data[:scanned] holds no newline
		for !cr.eof && cr.err == nil {
			if len(b.data) >= batchBytes {
				if bytes.IndexByte(b.data[scanned:], '\n') >= 0 {
					break
				}
				scanned = len(b.data)
			}
			if cap(b.data)-len(b.data) < readSize {
				b.data = slices.Grow(b.data, max(readSize, len(b.data)))
			}
			n, err := cr.r.Read(b.data[len(b.data):cap(b.data)])
			b.data = b.data[:len(b.data)+n]
			if err == io.EOF {
				cr.eof = true
			} else if err != nil {
				cr.err = err
			}
		}
		b.cutLines(cr)
		b.size = int64(len(b.data))
		cr.line += len(b.ends)
		last := len(cr.carry) == 0 && (cr.eof || cr.err != nil)
		if last && cr.err != nil {
			b.readErr = fmt.Errorf("read stdin after line %d: %w", cr.line, cr.err)
		}
		if !queueBatch(ctx, b, batches, jobs) || last {
			return
		}
	}
}

// queueBatch hands b to the writer (batches, in input order) and then to the workers
// (jobs); false if ctx is done first.
func queueBatch(ctx context.Context, b *lineBatch, batches, jobs chan<- *lineBatch) bool {
	select {
	case batches <- b:
	case <-ctx.Done():
		return false
	}
	select {
	case jobs <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// readSize is the least room a read into a batch gets.
const readSize = 256 << 10

// cutLines sets b.ends from b.data, taking at most batchLines lines, and moves the
// rest to cr.carry: the lines beyond, or an unended line the input goes on with. At
// the end of the input an unended line is the last line; after a failed read it is
// dropped.
func (b *lineBatch) cutLines(cr *chunkReader) {
	start := 0
	for len(b.ends) < batchLines {
		k := bytes.IndexByte(b.data[start:], '\n')
		if k < 0 {
			break
		}
		b.ends = append(b.ends, start+k)
		start += k + 1
	}
	switch rest := b.data[start:]; {
	case len(rest) == 0:
	case len(b.ends) == batchLines || !cr.eof && cr.err == nil:
		cr.carry = append(cr.carry, rest...)
	case cr.eof:
		b.ends = append(b.ends, len(b.data))
		start = len(b.data)
	}
	b.data = b.data[:start]
}

// textField returns the text of the JSON object in line: its member key, a string or
// a list of strings (joined with "\n\n", as GPT-NeoX reads corpora). prep.TextField
// does the work, as encoding/json would but several times faster.
func textField(line []byte, key string) (string, error) {
	text, _, err := appendTextField(nil, line, key)
	return string(text), err
}

// appendTextField is textField appending the text to dst (prep.AppendTextField), for
// workers that decode every line of a batch into one buffer. badUTF8 says the text held
// invalid UTF-8, now U+FFFD.
func appendTextField(dst, line []byte, key string) (_ []byte, badUTF8 bool, _ error) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		// (encode and train skip a blank line before it comes here: this one holds
		// whitespace that JSON does not allow, such as a form feed.)
		return dst, false, fmt.Errorf("a line of whitespace that is not JSON whitespace (%q), want a JSON object; remove the line or leave only spaces, tabs and CR on it", truncate(line, 20))
	}
	if bytes.HasPrefix(trimmed, []byte("\xef\xbb\xbf")) {
		// As tokenize run says it (prep's hint): the line was shown as "\ufeff{...", which
		// looks like a JSON object.
		return dst, false, errors.New("not a JSON object: it starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow: remove it (sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)")
	}
	if trimmed[0] != '{' {
		return dst, false, fmt.Errorf("not a JSON object (it starts with %q)", truncate(trimmed, 20))
	}
	dst, ok, badUTF8, err := prep.AppendTextField(dst, trimmed, key)
	if te, isType := errors.AsType[*prep.TypeError](err); isType {
		return dst, false, fmt.Errorf("field %q is %s, not a string or a list of strings", key, truncate([]byte(te.Value), 20))
	}
	if err != nil {
		return dst, false, err // "invalid JSON at byte N: ..."
	}
	if !ok {
		return dst, false, fmt.Errorf("field %q missing (pass --text-key to pick another field)", key)
	}
	return dst, badUTF8, nil
}

// badUTF8Lines counts the lines of `encode --jsonl` whose text held invalid UTF-8.
type badUTF8Lines struct{ count, first int }

func (c *badUTF8Lines) add(n, first int) {
	if n > 0 && c.count == 0 {
		c.first = first
	}
	c.count += n
}

// warn prints, if any line held invalid UTF-8, how many and the first: the ids are of
// the text with U+FFFD in its place, which a reader of the output cannot tell.
func (c *badUTF8Lines) warn(w io.Writer, who string) {
	if c.count == 0 {
		return
	}
	lines := "line"
	if c.count > 1 {
		lines = "lines"
	}
	fmt.Fprintf(w, "%s: warning: %d %s held invalid UTF-8 in the text (or a lone \\uD800-\\uDFFF escape), encoded with U+FFFD in its place (as a tokenizer's JSON decoding does; the first: line %d)\n", who, c.count, lines, c.first)
}

// truncate shortens b for an error message.
func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
