package tokenize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// hfFile is the part of a Hugging Face tokenizer.json that decides the ids.
type hfFile struct {
	AddedTokens []struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Type                    string          `json:"type"`
		Dropout                 *float64        `json:"dropout"`
		UnkToken                *string         `json:"unk_token"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		ByteFallback            bool            `json:"byte_fallback"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		Vocab                   map[string]int  `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
	} `json:"model"`
}

type hfComponent struct {
	Type           string          `json:"type"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
	UseRegex       *bool           `json:"use_regex"`
	Normalizers    []hfComponent   `json:"normalizers"`
	PreTokenizers  []hfComponent   `json:"pretokenizers"`
	Pattern        json.RawMessage `json:"pattern"`
}

// LoadHFJSON loads a Hugging Face tokenizer.json with a BPE model and a ByteLevel
// pre-tokenizer (GPT-2, GPT-NeoX-20B and tokenizers of that family). Features that would
// change the ids and that this package does not implement are refused with an error
// rather than silently ignored.
func LoadHFJSON(data []byte, name string) (*Tokenizer, error) {
	var f hfFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("tokenize: %s: not a tokenizer.json: %w", name, jsonErrorAt(data, err))
	}
	m := &f.Model
	if m.Type != "" && m.Type != "BPE" {
		return nil, fmt.Errorf("tokenize: %s: model type %q is not supported (byte-level BPE only)", name, m.Type)
	}
	if m.Vocab == nil {
		return nil, fmt.Errorf("tokenize: %s: model.vocab is missing", name)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, fmt.Errorf("tokenize: %s: BPE dropout %.3g is not supported", name, *m.Dropout)
	}
	if m.ByteFallback {
		return nil, fmt.Errorf("tokenize: %s: byte_fallback is not supported (byte-level BPE needs none)", name)
	}
	if (m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "") || (m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "") {
		return nil, fmt.Errorf("tokenize: %s: continuing_subword_prefix / end_of_word_suffix are not supported", name)
	}
	d := &bpeDefinition{name: name, vocab: make(map[string]int, len(m.Vocab)), ignoreMerges: m.IgnoreMerges}
	for tok, id := range m.Vocab {
		raw, ok := byteLevelDecode(tok)
		if !ok {
			return nil, fmt.Errorf("tokenize: %s: vocab entry %q (id %d) is not in the byte-level alphabet; only ByteLevel BPE tokenizers are supported", name, tok, id)
		}
		d.vocab[raw] = id
	}
	merges, err := parseHFMerges(m.Merges)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %s: model.merges: %w", name, err)
	}
	for i, mg := range merges {
		l, okl := byteLevelDecode(mg[0])
		r, okr := byteLevelDecode(mg[1])
		if !okl || !okr {
			return nil, fmt.Errorf("tokenize: %s: merge %d (%q %q) is not in the byte-level alphabet", name, i+1, mg[0], mg[1])
		}
		d.merges = append(d.merges, [2]string{l, r})
	}
	if err := d.setHFNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("tokenize: %s: normalizer: %w", name, err)
	}
	if err := d.setHFPreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("tokenize: %s: pre_tokenizer: %w", name, err)
	}
	for _, a := range f.AddedTokens {
		if a.SingleWord || a.LStrip || a.RStrip {
			return nil, fmt.Errorf("tokenize: %s: added token %q uses single_word/lstrip/rstrip, which is not supported", name, a.Content)
		}
		d.added = append(d.added, AddedToken{ID: a.ID, Content: a.Content, Special: a.Special, Normalized: a.Normalized})
	}
	return d.build()
}

// parseHFMerges accepts both forms HF writes: ["a b", ...] and [["a","b"], ...].
func parseHFMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		out := make([][2]string, len(asStrings))
		for i, s := range asStrings {
			l, r, ok := strings.Cut(s, " ")
			if !ok || l == "" || r == "" || strings.Contains(r, " ") {
				return nil, fmt.Errorf("merge %d %q is not two tokens separated by one space", i+1, s)
			}
			out[i] = [2]string{l, r}
		}
		return out, nil
	}
	var asPairs [][]string
	if err := json.Unmarshal(raw, &asPairs); err != nil {
		return nil, fmt.Errorf("neither a list of \"a b\" strings nor a list of pairs: %w", err)
	}
	out := make([][2]string, len(asPairs))
	for i, p := range asPairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("merge %d has %d parts, want 2", i+1, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

func (d *bpeDefinition) setHFNormalizer(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	switch c.Type {
	case "NFC":
		d.normalizer = "NFC"
		return nil
	case "Sequence":
		switch len(c.Normalizers) {
		case 0:
			return nil
		case 1:
			if c.Normalizers[0].Type == "NFC" {
				d.normalizer = "NFC"
				return nil
			}
		}
	}
	return fmt.Errorf("type %q is not supported (none and NFC are)", c.Type)
}

func (d *bpeDefinition) setHFPreTokenizer(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("missing: byte-level BPE needs a ByteLevel pre-tokenizer")
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if c.Type == "Sequence" && len(c.PreTokenizers) == 1 {
		c = c.PreTokenizers[0]
	}
	if c.Type != "ByteLevel" {
		return fmt.Errorf("type %q is not supported (ByteLevel is)", c.Type)
	}
	if c.UseRegex != nil && !*c.UseRegex {
		return fmt.Errorf("ByteLevel with use_regex=false is not supported")
	}
	d.pattern = "gpt2"
	d.addPrefixSpace = c.AddPrefixSpace
	return nil
}

// jsonErrorAt adds the line and column to a JSON syntax error.
func jsonErrorAt(data []byte, err error) error {
	se, ok := err.(*json.SyntaxError)
	if !ok {
		return err
	}
	off := int(se.Offset)
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("line %d column %d (byte %d): %w", line, col, off, err)
}
