package tokenize

import "io"

// WriteHFJSON writes the tokenizer as a Hugging Face tokenizer.json (version "1.0"): a BPE
// model whose vocab (in id order) and merges ("left right" strings) are written in the
// byte-level alphabet, ByteLevel pre-tokenizer (add_prefix_space=false, trim_offsets=true,
// use_regex=true), ByteLevel post-processor and decoder as in GPT-2's file, no normalizer,
// and the specials as added tokens (special=true, normalized=false) that are also in the
// vocab, as HF's trainer writes them. The output is the same bytes for the same Trained.
func (m *Trained) WriteHFJSON(w io.Writer) error {
	added := make([]AddedToken, len(m.special))
	for i, s := range m.special {
		added[i] = AddedToken{ID: i, Content: s, Special: true}
	}
	return writeHFBPE(w, &hfBPEFile{added: added, normalizer: "null", preTokenizer: hfByteLevelPre(false),
		postProcessor: hfByteLevelPost, dec: hfByteLevelDecoder, vocabLen: len(m.keys),
		key:        func(id int) (string, bool) { return m.keys[id], true },
		mergeCount: len(m.merges),
		merge:      func(i int) string { return m.keys[m.merges[i][0]] + " " + m.keys[m.merges[i][1]] }})
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
