package tokenize

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
)

// tiktokenEncoding is a built-in tiktoken encoding: its pre-tokenization pattern and its
// special tokens (from tiktoken 1.0.22).
type tiktokenEncoding struct {
	pattern string
	special map[string]int
}

var tiktokenEncodings = map[string]tiktokenEncoding{
	"gpt2":      {"gpt2", map[string]int{"<|endoftext|>": 50256}},
	"r50k_base": {"gpt2", map[string]int{"<|endoftext|>": 50256}},
	"cl100k_base": {"cl100k_base", map[string]int{
		"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
		"<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
	}},
	"o200k_base": {"o200k_base", map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018}},
}

// TiktokenEncodings lists the encoding names LoadTiktoken knows.
func TiktokenEncodings() []string {
	var names []string
	for n := range tiktokenEncodings {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LoadTiktoken loads a tiktoken rank file (one "base64-token rank" per line) for a
// built-in encoding, which gives the pre-tokenization pattern and the special tokens.
// Special tokens in the text are encoded as specials, as tiktoken's
// encode(text, allowed_special="all") and HF do.
func LoadTiktoken(data []byte, encoding string) (*Tokenizer, error) {
	enc, ok := tiktokenEncodings[encoding]
	if !ok {
		return nil, fmt.Errorf("tokenize: unknown tiktoken encoding %q (known: %v)", encoding, TiktokenEncodings())
	}
	d := &bpeDefinition{name: encoding, vocab: make(map[string]int, 1<<17), ranksSemantics: true, pattern: enc.pattern}
	line := 0
	for len(data) > 0 {
		line++
		var l []byte
		k := bytes.IndexByte(data, '\n')
		if k >= 0 {
			l, data = data[:k], data[k+1:]
		} else {
			l, data = data, nil
		}
		// bad names the line; the last line of a file that does not end with a newline
		// was cut short (a truncated download), which says what to do.
		bad := func(format string, args ...any) error {
			err := fmt.Errorf("tokenize: %s.tiktoken line %d: "+format, append([]any{encoding, line}, args...)...)
			if k < 0 {
				err = fmt.Errorf("%w: the file ends inside this line (no newline after it), so it is truncated (an interrupted download or copy): download it again", err)
			}
			return err
		}
		l = bytes.TrimRight(l, "\r")
		if len(l) == 0 {
			continue
		}
		sp := bytes.IndexByte(l, ' ')
		if sp < 0 {
			return nil, bad("want \"base64-token rank\"")
		}
		tok, err := base64.StdEncoding.DecodeString(string(l[:sp]))
		if err != nil || len(tok) == 0 {
			return nil, bad("bad base64 token %q", l[:sp])
		}
		rank, err := strconv.Atoi(string(l[sp+1:]))
		if err != nil || rank < 0 {
			return nil, bad("bad rank %q", l[sp+1:])
		}
		if _, dup := d.vocab[string(tok)]; dup {
			return nil, bad("token %q appears twice", tok)
		}
		d.vocab[string(tok)] = rank
	}
	if len(d.vocab) < 256 {
		return nil, fmt.Errorf("tokenize: %s.tiktoken has %d tokens: truncated file? fetch it again", encoding, len(d.vocab))
	}
	for content, id := range enc.special {
		d.added = append(d.added, AddedToken{ID: id, Content: content, Special: true})
	}
	return d.build()
}
