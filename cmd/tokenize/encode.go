package main

import (
	"bufio"
	"context"
	"fmt"
	"gptkit/internal/cli"
	"io"
	"runtime"
	"strconv"

	"gptkit/tokenize"
)

// Output buffer size for both encode and decode.
const outputBufferSize = 1 << 20

func runEncode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := cli.NewCommand("tokenize", "encode", "--tokenizer SPEC [--jsonl] [--text-key text] [--workers N] [--progress auto|on|off] < input",
		"Encodes stdin and writes one JSON array of token ids per input line (--jsonl) or one for the whole input.")
	var tf tokenizerFlags
	tf.Register(c.Flags, "the tokenizer (required)")
	jsonl := c.Flags.Bool("jsonl", false, "read one JSON object per line and encode its --text-key field; write one array per line, in input order")
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
	if *jsonl {
		err = encodeLines(ctx, tok, stdin, out, *textKey, *workers, bar)
	} else {
		err = encodeWhole(ctx, tok, countingReader{stdin, bar}, out)
		bar.Add(0, 1)
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
	return exitOK
}

// encodeWhole encodes all of in as one text.
func encodeWhole(ctx context.Context, tok *tokenize.Tokenizer, in io.Reader, out *bufio.Writer) error {
	text, err := io.ReadAll(&contextReader{ctx: ctx, r: in})
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	ids, err := tok.EncodeChecked(string(text))
	if err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	return writeIDs(out, ids)
}

// writeIDs writes ids as a compact JSON array and a newline. It formats straight into
// out's buffer, a chunk at a time, so a document of many millions of ids needs no
// buffer of its own.
func writeIDs(out *bufio.Writer, ids []int) error {
	const chunk = 32 << 10
	buf := append(out.AvailableBuffer(), '[')
	for i, id := range ids {
		if len(buf) >= chunk {
			if _, err := out.Write(buf); err != nil {
				return err
			}
			buf = out.AvailableBuffer()
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, int64(id), 10)
	}
	_, err := out.Write(append(buf, ']', '\n'))
	return err
}
