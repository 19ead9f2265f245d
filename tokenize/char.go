package tokenize

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// charFile is the JSON form of a nanoGPT character vocabulary ("chars.json"): the
// characters in id order (sorted by code point, as nanoGPT's sorted(set(text)) gives).
type charFile struct {
	Type  string   `json:"type"` // "char"
	Chars []string `json:"chars"`
}

// NewCharsFromText builds nanoGPT's character vocabulary: the sorted set of the
// characters in text; a character's id is its index.
func NewCharsFromText(text string, name string) *Tokenizer {
	seen := map[rune]bool{}
	for _, r := range ReplaceInvalidUTF8(text) {
		seen[r] = true
	}
	chars := make([]rune, 0, len(seen))
	for r := range seen {
		chars = append(chars, r)
	}
	sort.Slice(chars, func(i, j int) bool { return chars[i] < chars[j] })
	return newChars(chars, name)
}

func newChars(chars []rune, name string) *Tokenizer {
	t := &Tokenizer{name: name, kind: KindChar, chars: chars, charIDs: make(map[rune]int, len(chars)), eod: -1, vocabSize: len(chars)}
	for i, r := range chars {
		t.charIDs[r] = i
	}
	t.fingerprint = t.computeFingerprint()
	return t
}

// LoadChars loads a character vocabulary written by MarshalChars.
func LoadChars(data []byte, name string) (*Tokenizer, error) {
	var f charFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenize: %s: not a character vocabulary: %w", name, jsonErrorAt(data, err))
	}
	if f.Type != "char" {
		return nil, fmt.Errorf("tokenize: %s: type is %q, want \"char\"", name, f.Type)
	}
	chars := make([]rune, len(f.Chars))
	seen := map[rune]bool{}
	for i, s := range f.Chars {
		r, n := utf8.DecodeRuneInString(s)
		if n == 0 || n != len(s) || (r == utf8.RuneError && n == 1) {
			return nil, fmt.Errorf("tokenize: %s: entry %d (%q) is not one character", name, i, s)
		}
		if seen[r] {
			return nil, fmt.Errorf("tokenize: %s: character %q appears twice", name, s)
		}
		seen[r] = true
		chars[i] = r
	}
	return newChars(chars, name), nil
}

// MarshalChars writes a character vocabulary as JSON (the chars.json stored beside data).
func (t *Tokenizer) MarshalChars() ([]byte, error) {
	if t.kind != KindChar {
		return nil, fmt.Errorf("tokenize: %s is not a character vocabulary", t.name)
	}
	f := charFile{Type: "char", Chars: make([]string, len(t.chars))}
	for i, r := range t.chars {
		f.Chars[i] = string(r)
	}
	return json.MarshalIndent(f, "", " ")
}

// NewNeoXChar is GPT-NeoX's CharLevelTokenizer: the ids are the UTF-8 bytes of the text,
// the vocabulary size is 512 and the end-of-document id is 0. (GPT-NeoX decodes each id
// with chr(max(32, id)); Decode here returns the bytes, so text round-trips.)
func NewNeoXChar() *Tokenizer {
	t := &Tokenizer{name: "char", kind: KindByteChar, vocabSize: 512, eod: 0}
	t.fingerprint = t.computeFingerprint()
	return t
}
