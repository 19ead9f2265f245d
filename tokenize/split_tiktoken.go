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
	splitters["cl100k_base"] = cl100kPattern.split
	splitters["o200k_base"] = o200kPattern.split
}
