package tokenize

import (
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"
)

// Kind says which algorithm a Tokenizer runs.
type Kind string

const (
	KindBPE      Kind = "bpe"       // byte-level BPE (HF tokenizer.json, vocab+merges, tiktoken)
	KindChar     Kind = "char"      // nanoGPT character vocabulary (sorted set of characters seen)
	KindByteChar Kind = "neox-char" // GPT-NeoX CharLevelTokenizer: ids are UTF-8 bytes
)

// Tokenizer encodes text to token ids and back. It is safe for concurrent use.
type Tokenizer struct {
	name string
	kind Kind

	// Byte-level BPE.
	vocab tokenStrings // id -> raw bytes of the token ("" for ids that are not tokens)
	// The BPE vocabulary's ids by bytes (tokenID): tokens of up to 16 bytes in whole,
	// the others in longIDs.
	whole   *vocabTable
	longIDs map[string]uint32
	merges  *pairTable // (left, right) -> rank, and what each rank makes
	// monotone: every merge makes a token of higher rank than the pairs that contain it
	// could have, so merges happen in non-decreasing rank order (see mergeLong).
	monotone bool
	maxRank  uint32
	byteIDs  [256]int32 // raw byte -> id of the one-byte token, -1 if the vocabulary lacks it
	split    splitter   // pre-tokenizer
	// blockSplit: split is a block splitter (splitBlocks), which may split a segment
	// of a larger classified text (encodeSegment).
	blockSplit bool
	// pattern names the pre-tokenizer ("gpt2", "cl100k_base", "o200k_base").
	pattern         string
	addPrefixSpace  bool
	normalizer      string              // "" or "NFC"
	normalize       func(string) string // nil when normalizer is ""
	rawAdded        *addedMatcher       // added tokens matched on the raw text (normalized=false)
	normAdded       *addedMatcher       // added tokens matched after normalization (normalized=true)
	added           []AddedToken        // all added tokens, for Decode and the fingerprint
	mergeSemantics  string              // "pairs" (HF merges list) or "ranks" (tiktoken)
	maxTokenByteLen int
	// wholeBad[id] is true for a token that the merges do not rebuild from its own bytes:
	// a piece equal to it must still be merged (HF's BPE takes whole pieces from the
	// vocabulary only with ignore_merges; tiktoken always does). nil: none is.
	wholeBad []bool
	// ignoreMerges: a piece found whole in the vocabulary is that token (HF ignore_merges).
	ignoreMerges bool
	// highRebuilt: known (from the compiled form) that the merges rebuild every token
	// of two bytes or more with a byte of 0x80 or more (safesplit.go).
	highRebuilt bool
	// cuttable: Cut may cut texts (no prefix space, no added token holds a newline).
	cuttable bool
	// crCuttable: Cut may cut at Windows line ends too (no added token holds a '\r').
	crCuttable bool

	// Character-level (KindChar).
	chars   []rune
	charIDs map[rune]int

	vocabSize   int
	eod         int
	fingerprint string

	states sync.Pool // *encodeState

	// The encoder of long pieces (bpe_backtrack.go), built on the first one: nil if the
	// vocabulary does not allow it.
	backtrack     *backtrack
	backtrackOnce sync.Once
	// Where long pieces may be cut (safesplit.go), built on the first one: nil if not.
	safeSplit     *safeSplitter
	safeSplitOnce sync.Once
	// The first ranks of the short merge loops (bytepairs.go), built on the first one.
	bytePairTab   *bytePairTable
	bytePairsOnce sync.Once
	// tiktoken's merges from characters (bpe_chars.go), built on the first one.
	charTabs *charTables
	charOnce sync.Once
}

// AddedToken is a token matched on the text before pre-tokenization (HF "added_tokens").
type AddedToken struct {
	ID         int
	Content    string
	Special    bool
	Normalized bool
}

// splitter appends to ends the end offsets of the pre-tokenized pieces of s that follow
// byte from (0 or the end of a piece), in order, until s ends or ends is full (len(ends)
// == cap(ends); callers give cap > len). w is s's class window (classWindow.reset(s)
// before the first call on s). Piece k is s[ends[k-1]:ends[k]], ends[-1] taken as from.
type splitter func(w *classWindow, s string, from int, ends []int) []int

// splitAll appends the end offsets of all the pieces of s to ends.
func splitAll(split splitter, w *classWindow, s string, ends []int) []int {
	w.reset(s)
	for from := 0; from < len(s); {
		if len(ends) == cap(ends) {
			ends = slices.Grow(ends, 256)
		}
		n := len(ends)
		ends = split(w, s, from, ends)
		if len(ends) == n {
			break
		}
		from = ends[len(ends)-1]
	}
	return ends
}

// Name is a short name for the tokenizer (e.g. "gpt2", "neox-20b", a file's base name).
func (t *Tokenizer) Name() string { return t.name }

// Kind says which algorithm the tokenizer runs.
func (t *Tokenizer) Kind() Kind { return t.kind }

// VocabSize is one more than the largest id the tokenizer can produce.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// EOD is the end-of-document id appended between documents (e.g. <|endoftext|>), or -1.
func (t *Tokenizer) EOD() int { return t.eod }

// Fingerprint is the hex sha256 of the canonical tokenizer definition: two tokenizers
// with the same fingerprint give the same ids for every text.
func (t *Tokenizer) Fingerprint() string { return t.fingerprint }

// AddPrefixSpace reports whether the pre-tokenizer puts a space before a text that
// does not start with one (HF ByteLevel add_prefix_space).
func (t *Tokenizer) AddPrefixSpace() bool { return t.addPrefixSpace }

// AddedTokens lists the added tokens (specials and others) in id order.
func (t *Tokenizer) AddedTokens() []AddedToken { return append([]AddedToken(nil), t.added...) }

// TokenBytes returns the raw bytes token id stands for (an added token's content as
// UTF-8), or nil if id is not a token.
func (t *Tokenizer) TokenBytes(id int) []byte {
	switch t.kind {
	case KindChar:
		if id >= 0 && id < len(t.chars) {
			return []byte(string(t.chars[id]))
		}
		return nil
	case KindByteChar:
		if id >= 0 && id < 256 {
			return []byte{byte(id)}
		}
		return nil
	}
	if id < 0 || id >= t.vocab.len() || t.vocab.at(id) == "" {
		return nil
	}
	return []byte(t.vocab.at(id))
}

// ID returns the id of a token given by its raw bytes, including added tokens.
func (t *Tokenizer) ID(token string) (int, bool) {
	switch t.kind {
	case KindChar:
		r, n := utf8.DecodeRuneInString(token)
		if n != len(token) || n == 0 {
			return 0, false
		}
		id, ok := t.charIDs[r]
		return id, ok
	case KindByteChar:
		if len(token) == 1 {
			return int(token[0]), true
		}
		return 0, false
	}
	for _, a := range t.added {
		if a.Content == token {
			return a.ID, true
		}
	}
	id, ok := t.tokenID(token)
	return int(id), ok
}

// Encode returns the ids of text. Invalid UTF-8 is first replaced by U+FFFD, one per
// maximal ill-formed subpart (as Python's errors="replace" and WHATWG decoders do), so the
// ids equal those HF gives for the text such a decoder produces. For a character
// vocabulary, characters it lacks are dropped; use EncodeChecked to get an error instead.
func (t *Tokenizer) Encode(text string) []int {
	ids, _ := encode[int](t, text, nil, false, false)
	return ids
}

// EncodeChecked is Encode that fails, naming the byte offset, on a character that a
// character vocabulary lacks. For BPE tokenizers it never fails.
func (t *Tokenizer) EncodeChecked(text string) ([]int, error) {
	return encode[int](t, text, nil, true, false)
}

// AppendEncode appends the ids of text to dst and returns the extended slice.
func (t *Tokenizer) AppendEncode(dst []int, text string) []int {
	ids, _ := encode(t, text, dst, false, false)
	return ids
}

// AppendEncodeInt32 is AppendEncode for ids held as int32: half the memory of int, for
// callers that hold many (every id is below 2^20). With checked, it fails as
// EncodeChecked does.
func (t *Tokenizer) AppendEncodeInt32(dst []int32, text string, checked bool) ([]int32, error) {
	return encode(t, text, dst, checked, false)
}

// AppendEncodeValidInt32 is AppendEncodeInt32 for text known to be valid UTF-8 (as
// prep.Doc.Text always is: the JSON decoder checks it and replaces what is not), which
// it does not check again: that pass over the text was ~1.3% of `tokenize run`'s CPU.
// The caller must guarantee the text is valid UTF-8; the ids of any other text are
// unspecified (they may differ from Encode's).
func (t *Tokenizer) AppendEncodeValidInt32(dst []int32, text string, checked bool) ([]int32, error) {
	return encode(t, text, dst, checked, true)
}

// encode appends the ids of text to dst; valid says the caller has checked that text
// is valid UTF-8.
func encode[T tokenID](t *Tokenizer, text string, dst []T, strict, valid bool) ([]T, error) {
	if t.kind == KindChar {
		return encodeChars(t, text, dst, strict)
	}
	skip := 0 // no raw added token starts before skip
	if !valid {
		c := byte(0x80)
		if m := t.rawAdded; m != nil && m.prefix != "" {
			c = m.prefix[0]
		}
		ok, noC := validUTF8(text, c)
		if !ok {
			text = ReplaceInvalidUTF8(text)
		} else {
			skip = noC
		}
	}
	if t.kind == KindByteChar {
		for i := 0; i < len(text); i++ {
			dst = append(dst, T(text[i]))
		}
		return dst, nil
	}
	st := t.getState()
	fresh := dst == nil
	start := 0
	if fresh && len(text) >= sizeBySampleFrom {
		dst = encodeSized[T](t, st, text, skip)
	} else {
		if fresh {
			// A new slice, sized from the tokens per byte of this state's last text:
			// most often it needs neither growing (a copy) nor more than a little
			// spare room.
			dst = makeIDs[T](int(float64(len(text))*st.tokensPerByte*1.05) + 16)
		}
		start = len(dst)
		dst = encodeBPE(t, st, text, skip, dst)
	}
	if len(text) >= 64 {
		st.tokensPerByte = float64(len(dst)-start) / float64(len(text))
	}
	t.putState(st)
	if fresh {
		// The spare room, not cleared by makeIDs: ~5% (room for an appended id or
		// two), or where the size was guessed high, 1/16 of the ids and 1,024 more,
		// the rest left out of the slice's capacity so that clearing it does not
		// fault it in.
		if spare := len(dst)/16 + 1024; cap(dst)-len(dst) > spare {
			dst = dst[: len(dst) : len(dst)+spare]
		}
		clear(dst[len(dst):cap(dst)])
	}
	return dst, nil
}

// DecodeBytes concatenates the raw bytes of ids. Ids that are not tokens are skipped.
func (t *Tokenizer) DecodeBytes(ids []int) []byte {
	var b []byte
	for _, id := range ids {
		b = append(b, t.TokenBytes(id)...)
	}
	return b
}

// Decode returns the text of ids: their bytes decoded as UTF-8, each maximal ill-formed
// subpart replaced by U+FFFD (as HF's ByteLevel decoder does).
func (t *Tokenizer) Decode(ids []int) string {
	return ReplaceInvalidUTF8(string(t.DecodeBytes(ids)))
}

// encodeChars is encode for a character vocabulary. Each maximal ill-formed subpart of
// text is U+FFFD, as ReplaceInvalidUTF8 makes it; the text is read as it is, not
// replaced first, so that an error names the input's own bytes and offsets (an 0xff
// byte was once reported as the character '\uFFFD', at offsets shifted by earlier
// replacements).
func encodeChars[T tokenID](t *Tokenizer, text string, dst []T, strict bool) ([]T, error) {
	for off := 0; off < len(text); {
		r, n := utf8.DecodeRuneInString(text[off:])
		invalid := r == utf8.RuneError && n == 1
		if invalid {
			n = maximalSubpart(text[off:])
		}
		id, ok := t.charIDs[r]
		switch {
		case ok:
			dst = append(dst, T(id))
		case strict && invalid:
			s := ""
			if n > 1 {
				s = "s"
			}
			return dst, fmt.Errorf("tokenize: invalid UTF-8 byte%s % #x at byte offset %d (the %d-character vocabulary %s has no U+FFFD to stand for it)\n---> HINT: the input is not UTF-8 text: convert it (iconv -f ENCODING -t UTF-8)",
				s, text[off:off+n], off, len(t.chars), t.name)
		case strict && r == utf8.RuneError:
			// Most often invalid UTF-8 that a reader replaced before the text came
			// here (a JSON line's, as tokenize run and encode --jsonl read it).
			return dst, fmt.Errorf("tokenize: character %q at byte offset %d is not in the %d-character vocabulary %s: this U+FFFD is most often invalid UTF-8 replaced when the input was read (a JSON line's text)\n---> HINT: the input is not UTF-8 text: convert it (iconv -f ENCODING -t UTF-8)",
				r, off, len(t.chars), t.name)
		case strict:
			return dst, fmt.Errorf("tokenize: character %q at byte offset %d is not in the %d-character vocabulary %s", r, off, len(t.chars), t.name)
		}
		off += n
	}
	return dst, nil
}

// ValidUTF8 reports whether s is valid UTF-8, as utf8.ValidString does, with AVX2
// where the CPU has it (tens of times faster on text of several scripts:
// BenchmarkValidUTF8), the check Encode makes: a command that tells whether its input
// was valid costs little beside encoding it.
func ValidUTF8(s string) bool {
	valid, _ := validUTF8(s, 0xff)
	return valid
}

// ReplaceInvalidUTF8 replaces each maximal ill-formed subpart of s with U+FFFD (Unicode
// 16.0 §3.9 "U+FFFD Substitution of Maximal Subparts", as Rust's from_utf8_lossy, Python's
// errors="replace" and the WHATWG decoder do). strings.ToValidUTF8 differs: it replaces
// a whole run of bad bytes with one U+FFFD.
func ReplaceInvalidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		b = append(b, "\uFFFD"...)
		i += maximalSubpart(s[i:])
	}
	return string(b)
}

// maximalSubpart returns the length (≥1) of the maximal ill-formed subpart at the start of
// s, which begins with a byte that does not start a valid UTF-8 sequence there.
func maximalSubpart(s string) int {
	c := s[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(s); k++ {
		b := s[n]
		if k == 0 {
			if b < lo || b > hi {
				return n
			}
		} else if b < 0x80 || b > 0xBF {
			return n
		}
		n++
	}
	return n
}
