package tokenize

import "unicode"

// The tiktoken pre-tokenization patterns (tiktoken 1.0.22), run by the backtracking
// matcher in pattern.go. tiktoken's Rust regex classes are Unicode 16.0, like HF's: \p{L},
// \p{N} and \s come from the same generated table. Go's unicode package (15.0) supplies
// the general categories o200k needs; the letters new in 16.0 are Lo or Lm (in both of
// o200k's word classes) except the cased ones listed in new16Upper / new16Lower.

func tkLetter(r rune) bool { return isLetter(r) }
func tkNumber(r rune) bool { return isNumber(r) }
func tkNotCRLFLetterNumber(r rune) bool {
	return r != '\r' && r != '\n' && !tkLetter(r) && !tkNumber(r)
}
func tkOther(r rune) bool     { return !isSpace(r) && !tkLetter(r) && !tkNumber(r) }
func tkCRLF(r rune) bool      { return r == '\r' || r == '\n' }
func tkCRLFSlash(r rune) bool { return r == '\r' || r == '\n' || r == '/' }

// o200k's word classes: "upper-ish" [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and "lower-ish"
// [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func tkUpperish(r rune) bool {
	if isLetter(r) && !unicode.IsLetter(r) { // new in Unicode 16.0
		return !unicode.Is(new16Lower, r)
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}
func tkLowerish(r rune) bool {
	if isLetter(r) && !unicode.IsLetter(r) {
		return !unicode.Is(new16Upper, r)
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// The cased letters added in Unicode 16.0 (Cyrillic TJE, Latin additions, Garay).
var (
	new16Upper = &unicode.RangeTable{
		R16: []unicode.Range16{{0x1C89, 0x1C89, 1}, {0xA7CB, 0xA7CC, 1}, {0xA7DA, 0xA7DC, 2}},
		R32: []unicode.Range32{{0x10D50, 0x10D65, 1}},
	}
	new16Lower = &unicode.RangeTable{
		R16: []unicode.Range16{{0x1C8A, 0x1C8A, 1}, {0xA7CD, 0xA7CD, 1}, {0xA7DB, 0xA7DB, 1}},
		R32: []unicode.Range32{{0x10D70, 0x10D85, 1}},
	}
)

// cl100kPattern is
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
var cl100kPattern = pattern{
	{{kind: itemContraction, fold: true}},
	{opt(tkNotCRLFLetterNumber), plus(tkLetter)},
	{rep(tkNumber, 1, 3)},
	{opt(isSpaceChar), plus(tkOther), star(tkCRLF)},
	{star(isSpace), plus(tkCRLF)},
	{plus(isSpace), {kind: itemNotBeforeNonSpace}},
	{plus(isSpace)},
}

// o200kPattern is
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
var o200kPattern = pattern{
	{opt(tkNotCRLFLetterNumber), star(tkUpperish), plus(tkLowerish), {kind: itemContraction, fold: true, optional: true}},
	{opt(tkNotCRLFLetterNumber), plus(tkUpperish), star(tkLowerish), {kind: itemContraction, fold: true, optional: true}},
	{rep(tkNumber, 1, 3)},
	{opt(isSpaceChar), plus(tkOther), star(tkCRLFSlash)},
	{star(isSpace), plus(tkCRLF)},
	{plus(isSpace), {kind: itemNotBeforeNonSpace}},
	{plus(isSpace)},
}

func init() {
	splitters["cl100k_base"] = splitCL100K
	splitters["o200k_base"] = o200kPattern.splitter()
	refSplitters["cl100k_base"] = cl100kPattern.split
	refSplitters["o200k_base"] = o200kPattern.split
}

// splitCL100K is a hand-made scanner equal to cl100kPattern (tiktoken's regex run by
// fancy-regex: ordered alternation, backtracking). At each position:
//  1. ' and s, t, re, ve, m, ll or d in either case ('ſ too: simple case folding);
//  2. a run of letters, or one character that is not \r, \n, a letter or a number
//     followed by a run of letters;
//  3. one to three numbers;
//  4. an optional U+0020, a run of "other" characters, then any \r and \n;
//  5. whitespace: up to and including the last \r or \n of the run if it has one; else
//     the whole run at the end of the text, else all of it but its last character (if
//     that leaves any).
//
// It is a splitter; tests compare it with cl100kPattern.split.
func splitCL100K(w *classWindow, s string, from int, ends []int) []int {
	n := len(s)
	i := from
	for i < n && len(ends) < cap(ends) {
		i = cl100kPieceEnd(w, s, i)
		ends = append(ends, i)
	}
	return ends
}

// cl100kPieceEnd returns the end of the cl100k piece that starts at i.
func cl100kPieceEnd(w *classWindow, s string, i int) int {
	n := len(s)
	w.ensure(i)
	c := s[i]
	if c == '\'' {
		if k := contractionAt(s, i, true); k > 0 {
			return i + k
		}
	}
	cls := w.class(i)
	switch cls {
	case classLetter:
		return w.runEnd(i, classLetter)
	case classNumber:
		e := i
		for k := 0; k < 3 && e < n && w.class(e) == classNumber; k++ {
			e += charLen(s, e) // e < i+16: in the window
		}
		return e
	}
	if c != '\r' && c != '\n' {
		if j := i + charLen(s, i); j < n && w.class(j) == classLetter {
			return w.runEnd(j, classLetter)
		}
	}
	j := i
	if c == ' ' {
		j++
	}
	if j < n && w.class(j) == classOther {
		e := w.runEnd(j, classOther)
		for e < n && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e
	}
	// Whitespace (cls is classSpace).
	k := w.runEnd(i, classSpace)
	for q := k - 1; q >= i; q-- {
		if s[q] == '\r' || s[q] == '\n' {
			return q + 1
		}
	}
	if k < n {
		if last := lastCharStart(s, k); last > i {
			return last
		}
	}
	return k
}
