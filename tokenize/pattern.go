package tokenize

import "unicode/utf8"

// A small backtracking matcher for the pre-tokenization regexes, which are all ordered
// alternations of concatenated, quantified character classes plus a contraction group and
// a (?!\S) lookahead. It runs them with Perl/Oniguruma/fancy-regex semantics: the first
// alternative that matches at a position wins, greedy quantifiers give back one character
// at a time. It is the pre-tokenizer for the tiktoken patterns and, for the GPT-2 pattern,
// the literal reference that the hand-made scanner splitGPT2 is tested against.

// runeSet is a character class.
type runeSet func(r rune) bool

type itemKind uint8

const (
	itemClass             itemKind = iota // set{min,max}
	itemContraction                       // 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive
	itemNotBeforeNonSpace                 // (?!\S)
)

// patItem is one element of an alternative.
type patItem struct {
	kind     itemKind
	set      runeSet
	min, max int  // max < 0: unbounded
	fold     bool // contraction: case-insensitive (Unicode simple case folding)
	optional bool // contraction: (...)?
}

// pattern is an ordered alternation.
type pattern [][]patItem

func one(set runeSet) patItem  { return patItem{kind: itemClass, set: set, min: 1, max: 1} }
func opt(set runeSet) patItem  { return patItem{kind: itemClass, set: set, min: 0, max: 1} }
func star(set runeSet) patItem { return patItem{kind: itemClass, set: set, min: 0, max: -1} }
func plus(set runeSet) patItem { return patItem{kind: itemClass, set: set, min: 1, max: -1} }
func rep(set runeSet, a, b int) patItem {
	return patItem{kind: itemClass, set: set, min: a, max: b}
}

// split appends the end offsets of the pieces of s, as regex find-all would give them.
func (p pattern) split(s string, ends []int) []int {
	for i := 0; i < len(s); {
		ends, i = p.next(s, i, ends)
	}
	return ends
}

// splitter returns p run as a splitter (it needs no class masks).
func (p pattern) splitter() splitter {
	return func(_ *classWindow, s string, from int, ends []int) []int {
		for i := from; i < len(s) && len(ends) < cap(ends); {
			ends, i = p.next(s, i, ends)
		}
		return ends
	}
}

// next appends the end of the piece that starts at i and returns it with that end.
// Text no alternative matches (impossible for these patterns, whose last alternatives
// cover every character) is skipped one character at a time.
func (p pattern) next(s string, i int, ends []int) ([]int, int) {
	for _, alt := range p {
		if e := matchItems(s, i, alt); e > i {
			return append(ends, e), e
		}
	}
	_, w := utf8.DecodeRuneInString(s[i:])
	return ends, i + w
}

// matchItems returns the end of the first (in backtracking order) match of items at
// position i, or -1.
func matchItems(s string, i int, items []patItem) int {
	if len(items) == 0 {
		return i
	}
	it := items[0]
	switch it.kind {
	case itemContraction:
		if k := contractionAt(s, i, it.fold); k > 0 {
			if e := matchItems(s, i+k, items[1:]); e >= 0 {
				return e
			}
		}
		if it.optional {
			return matchItems(s, i, items[1:])
		}
		return -1
	case itemNotBeforeNonSpace:
		if i < len(s) {
			if r, _ := utf8.DecodeRuneInString(s[i:]); !isSpace(r) {
				return -1
			}
		}
		return matchItems(s, i, items[1:])
	}
	// Greedy: collect the positions after 0, 1, 2, ... matched characters, then try the
	// longest first.
	pos := []int{i}
	for j := i; j < len(s) && (it.max < 0 || len(pos)-1 < it.max); {
		r, w := utf8.DecodeRuneInString(s[j:])
		if !it.set(r) {
			break
		}
		j += w
		pos = append(pos, j)
	}
	for k := len(pos) - 1; k >= it.min; k-- {
		if e := matchItems(s, pos[k], items[1:]); e >= 0 {
			return e
		}
	}
	return -1
}

// contractionAt returns the length of 's 't 're 've 'm 'll 'd at s[i], or 0. With fold,
// letters match case-insensitively under Unicode simple case folding, so 's also matches
// 'S and 'ſ (U+017F LATIN SMALL LETTER LONG S).
func contractionAt(s string, i int, fold bool) int {
	if i >= len(s) || s[i] != '\'' {
		return 0
	}
	j := i + 1
	letter := func() (rune, int) {
		if j >= len(s) {
			return 0, 0
		}
		r, w := utf8.DecodeRuneInString(s[j:])
		if fold {
			switch {
			case r == 'ſ':
				r = 's'
			case r >= 'A' && r <= 'Z':
				r += 'a' - 'A'
			}
		}
		return r, w
	}
	r1, w1 := letter()
	switch r1 {
	case 's', 't', 'm', 'd':
		return 1 + w1
	case 'r', 'v', 'l':
		j += w1
		r2, w2 := letter()
		if (r1 == 'l' && r2 == 'l') || (r1 != 'l' && r2 == 'e') {
			return 1 + w1 + w2
		}
	}
	return 0
}

// The HF (Unicode 16.0) classes used by the GPT-2 pattern.
func isLetter(r rune) bool { return runeClass(r) == classLetter }
func isNumber(r rune) bool { return runeClass(r) == classNumber }
func isSpace(r rune) bool  { return runeClass(r) == classSpace }
func isOther(r rune) bool  { return runeClass(r) == classOther }

func isSpaceChar(r rune) bool { return r == ' ' }

// gpt2Pattern is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
var gpt2Pattern = pattern{
	{{kind: itemContraction}},
	{opt(isSpaceChar), plus(isLetter)},
	{opt(isSpaceChar), plus(isNumber)},
	{opt(isSpaceChar), plus(isOther)},
	{plus(isSpace), {kind: itemNotBeforeNonSpace}},
	{plus(isSpace)},
}

// refSplitGPT2 is the GPT-2 regex run literally; splitGPT2 must give the same pieces.
func refSplitGPT2(s string, ends []int) []int { return gpt2Pattern.split(s, ends) }
