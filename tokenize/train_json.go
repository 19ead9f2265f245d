package tokenize

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// WriteHFJSON writes the tokenizer as a Hugging Face tokenizer.json (version "1.0"): a BPE
// model whose vocab (in id order) and merges ("left right" strings) are written in the
// byte-level alphabet, ByteLevel pre-tokenizer (add_prefix_space=false, trim_offsets=true,
// use_regex=true), ByteLevel post-processor and decoder as in GPT-2's file, no normalizer,
// and the specials as added tokens (special=true, normalized=false) that are also in the
// vocab, as HF's trainer writes them. The output is the same bytes for the same Trained.
func (m *Trained) WriteHFJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var b []byte
	flush := func() error {
		_, err := bw.Write(b)
		b = b[:0]
		return err
	}
	b = append(b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": ["...)
	for i, s := range m.special {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\"id\": "...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ", \"content\": "...)
		b = appendJSONString(b, s)
		b = append(b, `, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}`...)
	}
	if len(m.special) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, `],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {
    "type": "BPE",
    "dropout": null,
    "unk_token": null,
    "continuing_subword_prefix": null,
    "end_of_word_suffix": null,
    "fuse_unk": false,
    "byte_fallback": false,
    "ignore_merges": false,
    "vocab": {`...)
	for id, k := range m.keys {
		if id > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n      "...)
		b = appendJSONString(b, k)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(id), 10)
		if len(b) > 1<<15 {
			if err := flush(); err != nil {
				return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
			}
		}
	}
	b = append(b, "\n    },\n    \"merges\": ["...)
	for i, p := range m.merges {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n      "...)
		b = appendJSONString(b, m.keys[p[0]]+" "+m.keys[p[1]])
		if len(b) > 1<<15 {
			if err := flush(); err != nil {
				return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
			}
		}
	}
	if len(m.merges) > 0 {
		b = append(b, "\n    "...)
	}
	b = append(b, "]\n  }\n}\n"...)
	if err := flush(); err != nil {
		return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("tokenize: write tokenizer.json: %w", err)
	}
	return nil
}

// appendJSONString appends s as a JSON string. Unlike encoding/json it leaves <, > and &
// as they are (as HF's serde_json does), so "<|endoftext|>" stays readable.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
