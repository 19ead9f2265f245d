package tokenize

import (
	"math/bits"
	"unicode"
	"unicode/utf8"
)

// The tiktoken pre-tokenization patterns (tiktoken 1.0.22), run literally by the
// backtracking matcher in pattern.go (the oracle of splitCL100K and splitO200K). tiktoken's Rust regex classes are Unicode 16.0, like HF's: \p{L},
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
	splitters["o200k_base"] = splitO200K
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
// Blocks of 64 ASCII bytes go through cl100kBlock, the others a piece at a time through
// cl100kPieceEnd. It is a splitter; tests compare it with cl100kPattern.split.
func splitCL100K(w *classWindow, s string, from int, ends []int) []int {
	return splitBlocks(&cl100kRules, w, s, from, ends)
}

var cl100kRules = blockRules{ok: cl100kBlockOK, block: cl100kBlock, pieceEnd: cl100kPieceEnd}

// cl100kBlockOK: cl100kBlock does blocks of ASCII bytes (multi-byte characters would
// need a search back for the character before a run of letters).
func cl100kBlockOK(w *classWindow, B int) bool {
	return w.blocks[w.block(B)&(windowBlocks-1)][blockHigh] == 0
}

// cl100kBlock finds the piece starts of the block at B (see blockRules and
// splitCL100K). In bit arithmetic over the block's masks (bit p = byte B+p; L letters,
// N numbers, S whitespace, O other, NL \r and \n, WO whitespace but NL, SP U+0020):
//   - a run of letters starts a piece (Ls), unless the byte before it does (J): that
//     byte is WO, or an O that starts a run of O not preceded by SP (P);
//   - a run of O starts a piece, unless SP precedes it: the SP does;
//   - a run of numbers starts a piece every three bytes;
//   - a whitespace run starts a piece, and so do its last byte when it is WO and a
//     non-space follows, and the byte after the last NL of the run when that is WO;
//   - NL right after a run of O belong to its piece (absorbed), and the whitespace byte
//     after them starts one.
//
// Contractions at piece starts (applyContractions) come last.
func cl100kBlock(w *classWindow, s string, B, after int, carry blockCarry) (uint64, blockCarry) {
	c := newBlockContext(w, s, B)
	cur := c.cur
	L, N, S, NL, SP := cur[classLetter], cur[classNumber], cur[classSpace], cur[blockCRLF], cur[blockSpaceChar]
	O := ^(L | N | S) & c.valid // (the padding after the text is no character)
	WO := S &^ NL
	var at uint64 // the bit of after, when it is in this block
	if after >= B {
		at = 1 << uint(after-B)
	}
	bL, bS, bSP, bNL := c.before(classLetter), c.before(classSpace), c.before(blockSpaceChar), c.before(blockCRLF)
	bO := ^(bL | c.before(classNumber) | bS)
	if c.prev == nil {
		bO &^= 1 // no byte before the text
	}
	// Nor is there one before after, as the pattern (which looks at no byte before a
	// match) splits from a piece start: the byte there may be an added token's last
	// ("<|endoftext|>_x" splits its text "_x" as "_x", not after an O run).
	bL, bS, bSP, bNL, bO = bL&^at, bS&^at, bSP&^at, bNL&^at, bO&^at
	aL, aS := c.after(classLetter), c.after(classSpace)
	aO := O >> 1
	if c.next != nil {
		aO |= ^(c.next[classLetter] | c.next[classNumber] | c.next[classSpace]) << 63
	}
	Ls := L &^ bL
	Os := O &^ bO
	P := WO | Os&^bSP
	J := P & aL &^ L // the byte after is a letter that starts a run
	next := blockCarry{prefix: J >> 63, notNext: c.next != nil && c.next[blockHigh] != 0}
	starts := Ls&^(J<<1|carry.prefix) | J | Os&^bSP | SP&aO&^O | S&^bS
	starts |= WO &^ aS & c.validNext

	// Groups of three numbers.
	X := N&^c.before(classNumber) | at&N
	if d := carry.digitStart; d != 0 && N&(d<<1-1) == d<<1-1 {
		X |= d
	}
	var groups uint64
	for Y := X; Y != 0; Y = Y << 3 & N & (N << 1) & (N << 2) {
		groups |= Y
	}
	if N>>63 != 0 && groups != 0 {
		if h := 63 - bits.LeadingZeros64(groups); h >= 61 {
			next.digitStart = 1 << uint(h+3-64)
		}
	}
	starts |= groups

	// NL that a run of O takes, and the whitespace after them.
	T := NL&bO | carry.absorbed&NL
	absorbed := ((NL + T) ^ NL) & NL // each run of NL from its bit in T on
	bAbsorbed := absorbed<<1 | carry.absorbed
	next.absorbed = absorbed >> 63
	starts |= S &^ absorbed & bAbsorbed
	starts &^= absorbed

	// The byte after the last NL of a whitespace run, when it is WO: a start unless
	// another NL follows in the run.
	for Q := WO & bNL; Q != 0; Q &= Q - 1 {
		q := bits.TrailingZeros64(Q)
		if e := wsEnd(s, B+q); e >= len(s) || s[e] != '\r' && s[e] != '\n' {
			starts |= 1 << uint(q)
		}
	}

	starts = starts&^carry.suppress | carry.force | at
	if starts&cur[blockApostrophe] != 0 {
		starts = applyContractions(starts, cur[blockApostrophe], s, B, &next, contractionFolded)
	}
	return starts, next
}

// wsEnd returns the end of the run of whitespace other than \r and \n at byte i.
func wsEnd(s string, i int) int {
	for i < len(s) {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRuneInString(s[i:])
		}
		if r == '\r' || r == '\n' || !isSpace(r) {
			break
		}
		i += n
	}
	return i
}

func contractionFolded(s string, i int) int { return contractionAt(s, i, true) }

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
