package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"gptkit/internal/cli"
	"io"
	"unsafe"

	"gptkit/prep"
	"gptkit/tokenize"
)

func runDecode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := cli.NewCommand("tokenize", "decode", "--tokenizer SPEC < ids.jsonl",
		"Decodes one JSON array of token ids per stdin line and writes one JSON string per line\n"+
			"(blank lines are skipped, as encode --jsonl skips them; an empty document is [], decoded to \"\").")
	c.ReadsStdin = true
	var tf tokenizerFlags
	tf.Register(c.Flags, "the tokenizer (required)")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	if tf.Spec == "" {
		return c.UsageError(stderr, "--tokenizer is required")
	}
	tok, err := tf.load(ctx, stderr)
	if err != nil {
		return fail(stderr, c.Name, interrupted(ctx, err))
	}
	out := bufio.NewWriterSize(stdout, outputBufferSize)
	err = decodeLines(ctx, tok, stdin, out)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write stdout: %w", ferr)
	}
	if err != nil {
		return fail(stderr, c.Name, interrupted(ctx, err))
	}
	return exitOK
}

// decodeLines decodes each line of in, a JSON array of ids, to a JSON string on out;
// blank lines (prep.BlankLine) are skipped.
func decodeLines(ctx context.Context, tok *tokenize.Tokenizer, in io.Reader, out *bufio.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	lr := newLineReader(ctx, in)
	var line []byte
	var ids []int
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var more bool
		var err error
		line, more, err = lr.appendLine(line[:0])
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		// A blank line has no document, as encode --jsonl (and tokenize run, train)
		// read one: it gets no string. It once failed ("empty line"), though encode
		// skips it; an empty document is "[]", decoded to "".
		if prep.BlankLine(line) {
			continue
		}
		ids = ids[:0]
		if err := parseIDs(line, &ids, tok); err != nil {
			return &lineError{line: lr.line, err: err}
		}
		if err := enc.Encode(tok.Decode(ids)); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
}

// parseIDs parses line, a JSON array of ids, into *ids and checks that every id is a
// token of tok.
func parseIDs(line []byte, ids *[]int, tok *tokenize.Tokenizer) error {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return errors.New("empty line, want a JSON array of ids")
	}
	if trimmed[0] != '[' {
		return fmt.Errorf("not a JSON array of ids (it starts with %q)", truncate(trimmed, 20))
	}
	// As idValues: json leaves an int it is given null for as it was, which in the
	// reused array was the previous line's id.
	if err := json.Unmarshal(trimmed, (*[]idValue)(unsafe.Pointer(ids))); err != nil {
		return fmt.Errorf("not a JSON array of integer ids: %v", err)
	}
	for _, id := range *ids {
		if id < 0 || id >= tok.VocabSize() {
			return fmt.Errorf("id %d is outside the vocabulary of %s (ids 0..%d)", id, tok.Name(), tok.VocabSize()-1)
		}
		if tok.TokenBytes(id) == nil {
			return fmt.Errorf("id %d is not a token of %s: no token has that id, though it lies within the vocabulary (0..%d): were the ids made with another tokenizer? decode them with that one", id, tok.Name(), tok.VocabSize()-1)
		}
	}
	return nil
}

// idValue is an id in a JSON array that decode reads: an integer, not null.
type idValue int

func (v *idValue) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return errors.New("null is not an id")
	}
	return json.Unmarshal(b, (*int)(v))
}
