package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"unicode/utf8"
	"unsafe"

	"gptkit/internal/cli"
	"gptkit/internal/hugemem"
	"gptkit/internal/progress"
	"gptkit/tokenize"
)

// specialsNote says, in encode's and run's usage, how special tokens in the text are
// read: the one choice where HF tokenizers and tiktoken's defaults differ.
const specialsNote = "Special tokens written in the text (<|endoftext|>, ...) are encoded as their ids, as Hugging Face\n" +
	"tokenizers' encode does and tiktoken's encode(text, allowed_special=\"all\") (tiktoken's default refuses\n" +
	"them; encode_ordinary, which nanoGPT's prepare.py uses, encodes them as text)."

// Output buffer size for both encode and decode.
const outputBufferSize = 1 << 20

func runEncode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := cli.NewCommand("tokenize", "encode", "--tokenizer SPEC [--jsonl] [--text-key text] [--workers N] [--progress auto|on|off] < input",
		"Encodes stdin and writes one JSON array of token ids per input line (--jsonl; blank lines are skipped) or one for the whole input.\n"+
			specialsNote)
	c.ReadsStdin = true
	var tf tokenizerFlags
	tf.Register(c.Flags, "the tokenizer (required)")
	jsonl := c.Flags.Bool("jsonl", false, "read one JSON object per line and encode its --text-key field; write one array per object, in input order (blank lines are skipped)")
	textKey := c.Flags.String("text-key", "text", "with --jsonl, the `FIELD` holding the text")
	workers := c.Flags.Int("workers", runtime.GOMAXPROCS(0), "encode on `N` cores (1: one core, no parallelism)")
	var pf progressFlag
	pf.register(c.Flags)
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	switch {
	case tf.Spec == "":
		return c.UsageError(stderr, "--tokenizer is required")
	case *workers < 1:
		return c.UsageError(stderr, fmt.Sprintf("--workers is %d, want at least 1", *workers))
	case *jsonl && *textKey == "":
		return c.UsageError(stderr, "--text-key is empty")
	case !*jsonl && c.IsSet("text-key"):
		return c.UsageError(stderr, "--text-key names the field of --jsonl input: add --jsonl (without it stdin is one text)")
	case pf.check() != "":
		return c.UsageError(stderr, pf.check())
	}
	if *workers == 1 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}

	tok, err := tf.load(ctx, stderr)
	if err != nil {
		return fail(stderr, c.Name, interrupted(ctx, err))
	}
	out := bufio.NewWriterSize(stdout, outputBufferSize)
	bar := pf.start(c.Name, stdin, stderr)
	ft := newIDText(tok.VocabSize())
	var badUTF8 badUTF8Lines
	badByte := -1 // without --jsonl: the first byte of invalid UTF-8 in stdin
	if *jsonl {
		err = encodeLines(ctx, tok, stdin, out, *textKey, *workers, bar, ft, &badUTF8)
	} else {
		err = encodeWhole(ctx, tok, stdin, out, *workers, bar, ft, &badByte)
	}
	// Flush even after an error: the lines before the bad one are good output.
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write stdout: %w", ferr)
	}
	if err != nil {
		bar.Stop()
		return fail(stderr, c.Name, interrupted(ctx, err))
	}
	bar.Done()
	badUTF8.warn(stderr, "tokenize "+c.Name)
	if badByte >= 0 {
		fmt.Fprintf(stderr, "tokenize %s: warning: stdin held invalid UTF-8 (the first at byte %d), encoded with U+FFFD in its place (as --jsonl and tokenize run read it)\n", c.Name, badByte)
	}
	return exitOK
}

// Whole-input encoding cuts the text into parts of about wholePartBytes (at
// Tokenizer.Cut; a variable for the tests), at most wholeQueue a worker in flight:
// each holds its ids' text (idBlocks) until written, and 4 did not run faster than 2.
var wholePartBytes = 1 << 20

const wholeQueue = 2

// encodeWhole encodes all of in as one text and writes its ids as one JSON array. The
// text is cut into parts (Tokenizer.Cut: the ids of the parts joined are the ids of the
// whole), encoded on workers goroutines and written in order as they are done, so that
// a large text uses all cores and its ids are never all held at once. A worker keeps
// one array of ids and formats them into blocks of a shared pool (idBlocks), both
// mapped outside the heap, so that the fresh memory the command faults in is what the
// parts in flight need (on the VMs of docs/tokenizer-performance.md a fresh MB costs
// up to ~3 ms of CPU: hugemem.BenchmarkFreshMemory).
//
// A regular file of mapStdinMin bytes or more is read through a memory map
// (stdin_mapped.go), the rest into memory (readAll). Mapped, the text is not copied
// into fresh memory that the kernel clears and faults in page by page (reading 100 MB
// was ~5% of the command's CPU), and each part's bytes count on bar once written; a
// fault on the mapping (the file cut short meanwhile) fails the command, naming the
// part's first byte.
//
// *badByte is set to the offset of the first invalid UTF-8 in the text (encoded as
// U+FFFD, which the ids do not tell), when there is any.
func encodeWhole(ctx context.Context, tok *tokenize.Tokenizer, in io.Reader, out *bufio.Writer, workers int, bar *progress.Bar, ft *idText, badByte *int) (err error) {
	var text string
	mapped := mapStdin(in)
	if mapped != nil {
		text = unsafe.String(unsafe.SliceData(mapped.data), len(mapped.data)) // read only
	} else {
		data, err := readAll(ctx, in, bar)
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		text = unsafe.String(unsafe.SliceData(data), len(data)) // data is not written again
	}
	bar.Add(0, 1)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		wg.Wait() // nothing reads the mapping once it is unmapped
		if mapped != nil {
			mapped.unmap()
			mapped.done(int64(len(mapped.data)))
		}
	}()
	// guard runs f, turning a fault on the mapping into an error naming byte at.
	guard := func(at int, f func() error) (err error) {
		if mapped == nil {
			return f()
		}
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("stdin, reading from byte %d: %w", at, mapped.faultIn(p))
			}
		}()
		return f()
	}
	if tok.Kind() == tokenize.KindChar {
		// One part: EncodeChecked's error names an offset in the whole text.
		var ids []int
		if err := guard(0, func() (err error) {
			ids, err = tok.EncodeChecked(text)
			*badByte = firstInvalidUTF8(text)
			return err
		}); err != nil {
			return fmt.Errorf("stdin: %w", err)
		}
		if mapped != nil {
			bar.Add(int64(len(text)), 0)
		}
		_, err = out.Write(ft.appendArray(nil, ids))
		return err
	}

	type result struct {
		blocks  []idBlock // the part's ids as text: ",id,id..."
		badByte int       // the first invalid UTF-8 in the text, or -1
		err     error
	}
	type part struct {
		start int // the part's first byte in text
		text  string
		out   chan result
	}
	parts := make(chan part, wholeQueue*workers)
	jobs := make(chan part, wholeQueue*workers)
	pool := newIDBlocks()
	var waiting chan result // the result the writer waits for
	defer func() {
		// Unmap the blocks of the results not written (an error, an interrupt).
		cancel()
		wg.Wait() // every job has its result
		drain := func(out chan result) {
			select {
			case r := <-out:
				pool.putAll(r.blocks)
			default:
			}
		}
		if waiting != nil {
			drain(waiting)
		}
		for p := range parts { // closed once the splitter is done (wg)
			drain(p.out)
		}
		pool.release()
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The worker's ids, mapped (hugemem.Mapped) and kept: a part
			// larger than any before maps them again, at least doubled.
			ids := &hugemem.Mapped[int32]{}
			defer func() { ids.Unmap() }() // the last one mapped (not the first)
			for p := range jobs {
				if err := ctx.Err(); err != nil {
					p.out <- result{err: err}
					continue
				}
				if need := len(p.text) + 16; cap(ids.S) < need {
					// Room for one id per byte (more, for invalid UTF-8,
					// grow onto the heap), of which only what the ids reach
					// is faulted in: room for parts of 4·wholePartBytes
					// costs address space only.
					n := max(need+need/4, 2*cap(ids.S), 4*wholePartBytes)
					ids.Unmap()
					ids = hugemem.MapUnwritten[int32](n)
				}
				var got []int32
				bad := -1
				err := guard(p.start, func() error {
					got, _ = tok.AppendEncodeInt32(ids.S[:0], p.text, false)
					if i := firstInvalidUTF8(p.text); i >= 0 {
						bad = p.start + i
					}
					return nil
				})
				p.out <- result{pool.format(ft, got), bad, err}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		defer close(parts)
		for start := 0; start < len(text); {
			end := len(text)
			if start+wholePartBytes < len(text) {
				if err := guard(start+wholePartBytes, func() error {
					if p := tok.Cut(text, start+wholePartBytes, len(text)); p > 0 {
						end = p
					}
					return nil
				}); err != nil {
					p := part{out: make(chan result, 1)}
					p.out <- result{err: err}
					select {
					case parts <- p:
					case <-ctx.Done():
					}
					return
				}
			}
			p := part{start: start, text: text[start:end], out: make(chan result, 1)}
			select {
			case parts <- p:
			case <-ctx.Done():
				return
			}
			jobs <- p
			start = end
		}
	}()
	first := true
	for p := range parts {
		var res result
		waiting = p.out
		select {
		case res = <-p.out:
		case <-ctx.Done():
			return ctx.Err()
		}
		waiting = nil
		if res.err != nil {
			pool.putAll(res.blocks)
			return res.err
		}
		if mapped != nil {
			bar.Add(int64(len(p.text)), 0)
		}
		if *badByte < 0 {
			*badByte = res.badByte
		}
		for i, b := range res.blocks {
			if first {
				b.text[0] = '['
				first = false
			}
			if _, err := out.Write(b.text); err != nil {
				pool.putAll(res.blocks[i:])
				return fmt.Errorf("write stdout: %w", err)
			}
			pool.put(b.mem)
		}
	}
	if err := ctx.Err(); err != nil {
		return err // the splitter stopped early
	}
	if first {
		_, err = out.WriteString("[]\n")
	} else {
		_, err = out.WriteString("]\n")
	}
	return err
}

// firstInvalidUTF8 is the offset of the first byte of s that is not valid UTF-8, or -1.
func firstInvalidUTF8(s string) int {
	if tokenize.ValidUTF8(s) { // the fast path (SIMD): no decoding rune by rune
		return -1
	}
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return -1
}

// readAll reads all of in, in one read into a buffer of the right size when in is a
// regular file (no buffer grown and copied for a large input), counting the bytes on bar.
func readAll(ctx context.Context, in io.Reader, bar *progress.Bar) ([]byte, error) {
	r := countingReader{&contextReader{ctx: ctx, r: in}, bar}
	if size := inputSize(in); size > 0 {
		buf := make([]byte, size+1) // one more: a file that grew since is read on below
		n, err := io.ReadFull(r, buf)
		switch err {
		case io.ErrUnexpectedEOF, io.EOF:
			return buf[:n], nil
		case nil:
			rest, err := io.ReadAll(r)
			return append(buf, rest...), err
		}
		return nil, err
	}
	return io.ReadAll(r)
}
