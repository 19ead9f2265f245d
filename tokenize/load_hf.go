package tokenize

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// hfFile is the part of a Hugging Face tokenizer.json that decides the ids.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Truncation    json.RawMessage `json:"truncation"`
	Padding       json.RawMessage `json:"padding"`
	Model         struct {
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

// hfAddedToken is an entry of a tokenizer.json's added_tokens.
type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfComponent struct {
	Type           string          `json:"type"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
	UseRegex       *bool           `json:"use_regex"`
	Normalizers    []hfComponent   `json:"normalizers"`
	PreTokenizers  []hfComponent   `json:"pretokenizers"`
	Pattern        json.RawMessage `json:"pattern"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	Processors     []hfComponent   `json:"processors"`
	Single         []map[string]struct {
		ID string `json:"id"`
	} `json:"single"`
}

// LoadHFJSON loads a Hugging Face tokenizer.json with a BPE model and a ByteLevel
// pre-tokenizer (GPT-2, GPT-NeoX-20B and tokenizers of that family), or the form of a
// character vocabulary that WriteHFJSON writes (hfCharForm). Features that would
// change the ids and that this package does not implement are refused with an error
// rather than silently ignored.
func LoadHFJSON(data []byte, name string) (*Tokenizer, error) {
	var f hfFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("tokenize: %s: not a tokenizer.json: %w", name, jsonErrorAt(data, err))
	}
	m := &f.Model
	if chars, ok := hfCharForm(&f); ok {
		return newChars(chars, name), nil
	}
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
	if d.pattern != "gpt2" {
		added := map[string]bool{}
		for _, a := range f.AddedTokens {
			added[a.Content] = true
		}
		if err := d.asTiktoken(added); err != nil {
			return nil, fmt.Errorf("tokenize: %s: %w", name, err)
		}
	}
	if err := checkHFPostProcessor(f.PostProcessor); err != nil {
		return nil, fmt.Errorf("tokenize: %s: post_processor: %w; gptkit encodes as HF does with add_special_tokens=False and appends the end-of-document id itself (--append-eod): set \"post_processor\" to null in a copy of the file to use it", name, err)
	}
	for _, opt := range []struct {
		key string
		raw json.RawMessage
	}{{"truncation", f.Truncation}, {"padding", f.Padding}} {
		if len(opt.raw) > 0 && string(opt.raw) != "null" {
			return nil, fmt.Errorf("tokenize: %s: %s is set, which would cut or pad every encoding; gptkit never does: set \"%s\" to null in a copy of the file to use it", name, opt.key, opt.key)
		}
	}
	if err := d.checkUnknownBytes(m.UnkToken); err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", name, err)
	}
	if d.added, err = hfAddedTokens(f.AddedTokens, m.Vocab); err != nil {
		return nil, fmt.Errorf("tokenize: %s: %w", name, err)
	}
	return d.build()
}

// hfAddedTokens gives the added tokens of a tokenizer.json's added_tokens as HF builds
// them (AddedVocabulary::add_tokens, in file order; tokenizers 0.23), over the model's
// vocab. The ids are HF's, not necessarily the file's: a content the vocabulary has
// takes its id there; the others take the ids from the vocabulary's size on, in order
// (HF counts from there in the one add_tokens call that loads the file, whatever ids the
// contents found in the vocabulary have: a converted tiktoken encoding's specials lie
// past its size); a content listed twice keeps the id of its first entry and the flags
// (special, normalized, ...) of its last, which replaces the earlier one in HF's table of
// added tokens and so decides how the content is matched. HF does the same, warning
// where the file says otherwise. single_word, lstrip and rstrip (of the entry that
// counts) are refused: not implemented.
func hfAddedTokens(entries []hfAddedToken, vocab map[string]int) ([]AddedToken, error) {
	var added []AddedToken
	var last []hfAddedToken // the entry whose flags count, for each of added
	at := map[string]int{}  // content: its index in added
	next := len(vocab)      // the id of the next content the vocabulary lacks
	for _, a := range entries {
		if i, dup := at[a.Content]; dup {
			last[i] = a
			continue
		}
		id, inVocab := vocab[a.Content]
		if !inVocab {
			id = next
			next++
		}
		at[a.Content] = len(added)
		added = append(added, AddedToken{ID: id, Content: a.Content})
		last = append(last, a)
	}
	for i, a := range last {
		if a.SingleWord || a.LStrip || a.RStrip {
			return nil, fmt.Errorf("added token %q uses single_word/lstrip/rstrip, which is not supported", a.Content)
		}
		added[i].Special, added[i].Normalized = a.Special, a.Normalized
	}
	return added, nil
}

// checkUnknownBytes refuses a vocabulary that lacks the token of some byte when the
// model names an unk_token: HF encodes such a byte as the unk token (fusing runs of
// them with fuse_unk), which this package does not. Without unk_token HF drops the
// byte, as this package does; with all 256 bytes the unk token is never used.
func (d *bpeDefinition) checkUnknownBytes(unk *string) error {
	if unk == nil {
		return nil
	}
	var missing []string
	for b := range 256 {
		if _, ok := d.vocab[string([]byte{byte(b)})]; !ok {
			missing = append(missing, fmt.Sprintf("0x%02x", b))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	shown := strings.Join(missing[:min(len(missing), 4)], ", ")
	if len(missing) > 4 {
		shown += ", ..."
	}
	return fmt.Errorf("model.unk_token %q with a vocabulary that lacks the tokens of %d bytes (%s): HF encodes those bytes as the unk token, which is not supported; train the tokenizer with all 256 byte tokens (HF: initial_alphabet=ByteLevel.alphabet()), or set unk_token to null in a copy of the file to drop those bytes",
		*unk, len(missing), shown)
}

// checkHFPostProcessor accepts post-processors that change no ids: none, ByteLevel
// (offsets only), a TemplateProcessing whose single-sequence template adds no special
// token, and Sequences of those.
func checkHFPostProcessor(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	return checkHFProcessor(c)
}

func checkHFProcessor(c hfComponent) error {
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for _, p := range c.Processors {
			if err := checkHFProcessor(p); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		var specials []string
		for _, item := range c.Single {
			if sp, ok := item["SpecialToken"]; ok {
				specials = append(specials, strconv.Quote(sp.ID))
			}
		}
		if len(specials) == 0 {
			return nil
		}
		return fmt.Errorf("TemplateProcessing adds %s to every encoding", strings.Join(specials, ", "))
	case "RobertaProcessing", "BertProcessing":
		return fmt.Errorf("%s adds its special tokens to every encoding", c.Type)
	}
	return fmt.Errorf("type %q is not supported (ByteLevel and templates that add no special token are)", c.Type)
}

// parseHFMerges accepts both forms HF writes: ["a b", ...] and [["a","b"], ...].
func parseHFMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		first := 0
		if len(asStrings) > 0 && strings.HasPrefix(asStrings[0], "#version") {
			first = 1 // merges.txt's header, copied in: HF skips it too
		}
		out := make([][2]string, 0, len(asStrings))
		for i, s := range asStrings[first:] {
			i += first
			l, r, ok := strings.Cut(s, " ")
			if !ok || l == "" || r == "" || strings.Contains(r, " ") {
				return nil, fmt.Errorf("merge %d %q is not two tokens separated by one space", i+1, s)
			}
			out = append(out, [2]string{l, r})
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
	return fmt.Errorf("type %s is not supported (none and NFC are)", componentName(c, c.Normalizers))
}

// componentName names c, with the types of a Sequence's parts.
func componentName(c hfComponent, parts []hfComponent) string {
	name := strconv.Quote(c.Type)
	if c.Type == "Sequence" {
		var types []string
		for _, p := range parts {
			types = append(types, p.Type)
		}
		name += " of [" + strings.Join(types, ", ") + "]"
	}
	return name
}

func (d *bpeDefinition) setHFPreTokenizer(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("missing: byte-level BPE needs a ByteLevel pre-tokenizer")
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	whole := c
	if c.Type == "Sequence" && len(c.PreTokenizers) == 2 && c.PreTokenizers[0].Type == "Split" && c.PreTokenizers[1].Type == "ByteLevel" {
		if err := d.setHFSplit(c.PreTokenizers[0], c.PreTokenizers[1]); err != nil {
			return fmt.Errorf("type %s: %w (supported as transformers' conversion of cl100k_base or o200k_base)", componentName(c, c.PreTokenizers), err)
		}
		return nil
	}
	if c.Type == "Sequence" && len(c.PreTokenizers) == 1 {
		c = c.PreTokenizers[0]
	}
	if c.Type != "ByteLevel" {
		return fmt.Errorf("type %s is not supported (ByteLevel is)", componentName(whole, whole.PreTokenizers))
	}
	if c.UseRegex != nil && !*c.UseRegex {
		return fmt.Errorf("ByteLevel with use_regex=false is not supported")
	}
	d.pattern = "gpt2"
	d.addPrefixSpace = c.AddPrefixSpace
	return nil
}

// setHFSplit takes a Split pre-tokenizer with a tiktoken encoding's pattern before a
// ByteLevel one without its regex: the form of a converted tiktoken encoding
// (hfjson_tiktoken.go; LoadHFJSON checks the merges then).
func (d *bpeDefinition) setHFSplit(split, bl hfComponent) error {
	var p struct{ Regex *string }
	if err := json.Unmarshal(split.Pattern, &p); err != nil || p.Regex == nil {
		return fmt.Errorf("Split: the pattern is not a regex")
	}
	for name, re := range hfSplitPatterns {
		if *p.Regex == re {
			d.pattern = name
		}
	}
	switch {
	case d.pattern == "":
		return fmt.Errorf("Split with the regex %q is not supported (cl100k_base's and o200k_base's patterns are)", *p.Regex)
	case !(split.Behavior == "Isolated" && !split.Invert || split.Behavior == "Removed" && split.Invert):
		return fmt.Errorf("Split with behavior %q and invert %v is not supported (Isolated, or Removed inverted: each match a piece)", split.Behavior, split.Invert)
	case bl.UseRegex == nil || *bl.UseRegex || bl.AddPrefixSpace:
		return fmt.Errorf("ByteLevel after a Split is supported with use_regex false and add_prefix_space false only")
	}
	return nil
}

// jsonErrorAt adds the line, column and byte offset to a JSON syntax error. A file that
// ends inside its JSON (io.ErrUnexpectedEOF from a Decoder, "unexpected end of JSON
// input" from Unmarshal) or holds none is named truncated, with the next step: an
// interrupted download or copy, to be fetched again.
func jsonErrorAt(data []byte, err error) error {
	var off int
	var se *json.SyntaxError
	truncated := errors.Is(err, io.ErrUnexpectedEOF)
	switch {
	case len(bytes.TrimSpace(data)) == 0 && (err == io.EOF || errors.As(err, &se)):
		return fmt.Errorf("the file is empty (%d bytes): an interrupted download or copy? download it again", len(data))
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = len(data)
	case errors.As(err, &se):
		off = int(se.Offset)
		truncated = se.Error() == "unexpected end of JSON input"
	default:
		return err
	}
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(data[:off], '\n')
	if truncated {
		return fmt.Errorf("line %d column %d (byte %d, the end of the file): %w: the JSON stops midway, so the file is truncated (an interrupted download or copy): download it again", line, col, off, err)
	}
	return fmt.Errorf("line %d column %d (byte %d): %w", line, col, off, err)
}

// hfCharForm recognises a character vocabulary in a tokenizer.json, as WriteHFJSON
// writes one for `train export`: a BPE model without merges, pre-tokenizer, normalizer,
// added tokens or unk token, whose vocabulary is single characters with the ids 0 to
// n-1. HF then encodes each character as its id, as a character tokenizer does.
func hfCharForm(f *hfFile) ([]rune, bool) {
	m := &f.Model
	if m.Type != "BPE" || len(m.Vocab) == 0 || len(f.AddedTokens) > 0 || m.UnkToken != nil || m.ByteFallback || m.IgnoreMerges ||
		m.Dropout != nil && *m.Dropout != 0 || m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" ||
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, false
	}
	for _, raw := range []json.RawMessage{f.Normalizer, f.PreTokenizer, f.PostProcessor, f.Truncation, f.Padding} {
		if len(raw) > 0 && string(raw) != "null" {
			return nil, false
		}
	}
	if t := bytes.TrimSpace(m.Merges); len(t) > 0 && string(t) != "null" && string(bytes.Join(bytes.Fields(t), nil)) != "[]" {
		return nil, false
	}
	chars := make([]rune, len(m.Vocab))
	set := make([]bool, len(m.Vocab))
	for k, id := range m.Vocab {
		r, n := utf8.DecodeRuneInString(k)
		if n == 0 || n != len(k) || r == utf8.RuneError && n == 1 || id < 0 || id >= len(chars) || set[id] {
			return nil, false
		}
		chars[id], set[id] = r, true
	}
	return chars, true
}
