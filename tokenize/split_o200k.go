package tokenize

import (
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// splitO200K is a hand-made scanner equal to o200kPattern (tiktoken's regex, ordered
// alternation with backtracking), a piece at a time, in place of the general pattern
// matcher (which tried every alternative item by item: 13-20 MB per CPU-second for the
// whole encoder). At each position, the first of:
//  1. an optional character that is not \r, \n, a letter or a number, then as many
//     "upper" characters ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]) as leave at least one
//     "lower" one ([\p{Ll}\p{Lm}\p{Lo}\p{M}]) after them, then all the lower ones, then
//     an optional contraction ('s, 't, 're, 've, 'm, 'll, 'd in either case);
//  2. the same with at least one upper character and any lower ones after them;
//  3. one to three numbers;
//  4. an optional U+0020, a run of characters that are not whitespace, letters or
//     numbers, then any \r, \n and /;
//  5. whitespace, as cl100k's: up to and including the last \r or \n of the run; else
//     the whole run at the end of the text, else all of it but its last character.
//
// With the optional first character, each of 1 and 2 is tried with it, then without it
// (a mark can be that character and also a word's first). It is a splitter; tests
// compare it with o200kPattern.split.
func splitO200K(_ *classWindow, s string, from int, ends []int) []int {
	for i := from; i < len(s) && len(ends) < cap(ends); {
		i = o200kPieceEnd(s, i)
		ends = append(ends, i)
	}
	return ends
}

// The classes of a character for o200k's pattern, as bits.
const (
	o200kUpper  = 1 << iota // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	o200kLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	o200kLetter             // \p{L}
	o200kNumber             // \p{N}
	o200kSpace              // \s
	o200kCRLF               // \r or \n
)

// o200kASCII holds the classes of the ASCII characters.
var o200kASCII = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = o200kRuneClass(r)
	}
	return t
}()

// o200kBlocks holds the classes of the characters below U+10000, 256 to a block, each
// block built on the first character of it met (~25 µs): o200kRuneClass looks the
// letters' cases up in the unicode package's range tables, which cost 17% of
// o200k_base's time on CJK text.
var o200kBlocks [1 << 8]atomic.Pointer[[1 << 8]uint8]

// o200kClass returns the classes of r, through o200kBlocks below U+10000.
func o200kClass(r rune) uint8 {
	if r >= 1<<16 {
		return o200kRuneClass(r)
	}
	blk := o200kBlocks[r>>8].Load()
	if blk == nil {
		blk = new([1 << 8]uint8)
		for k := range blk {
			blk[k] = o200kRuneClass(r&^0xFF | rune(k))
		}
		o200kBlocks[r>>8].Store(blk) // the same bytes whoever stores last
	}
	return blk[r&0xFF]
}

// o200kRuneClass returns the classes of r.
func o200kRuneClass(r rune) uint8 {
	switch runeClass(r) {
	case classLetter:
		c := uint8(o200kLetter)
		if tkUpperish(r) {
			c |= o200kUpper
		}
		if tkLowerish(r) {
			c |= o200kLower
		}
		return c
	case classNumber:
		return o200kNumber
	case classSpace:
		if r == '\r' || r == '\n' {
			return o200kSpace | o200kCRLF
		}
		return o200kSpace
	}
	if unicode.Is(unicode.M, r) {
		return o200kUpper | o200kLower
	}
	return 0
}

// o200kAt returns the classes of the character at s[i] and its length in bytes.
func o200kAt(s string, i int) (uint8, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return o200kASCII[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return o200kClass(r), n
}

// o200kRun returns the end of the run of characters from i that have a class in mask.
func o200kRun(s string, i int, mask uint8) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf { // (o200kAt, inlined by hand for ASCII)
			if o200kASCII[b]&mask == 0 {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if o200kClass(r)&mask == 0 {
			break
		}
		i += n
	}
	return i
}

// o200kPieceEnd returns the end of the o200k piece that starts at i.
func o200kPieceEnd(s string, i int) int {
	c0, n0 := o200kAt(s, i)
	lead := c0&(o200kCRLF|o200kLetter|o200kNumber) == 0 // may be the optional first character
	// 1, then 2: words.
	if lead {
		if e := o200kLowerWord(s, i+n0); e > 0 {
			return e
		}
	}
	if e := o200kLowerWord(s, i); e > 0 {
		return e
	}
	if lead {
		if e := o200kUpperWord(s, i+n0); e > 0 {
			return e
		}
	}
	if e := o200kUpperWord(s, i); e > 0 {
		return e
	}
	// 3: numbers.
	if c0&o200kNumber != 0 {
		e := i + n0
		for k := 1; k < 3 && e < len(s); k++ {
			c, n := o200kAt(s, e)
			if c&o200kNumber == 0 {
				break
			}
			e += n
		}
		return e
	}
	// 4: "other" characters.
	j := i
	if s[i] == ' ' {
		j++
	}
	if j < len(s) {
		if c, _ := o200kAt(s, j); c&(o200kSpace|o200kLetter|o200kNumber) == 0 {
			e := j
			for e < len(s) {
				c, n := o200kAt(s, e)
				if c&(o200kSpace|o200kLetter|o200kNumber) != 0 {
					break
				}
				e += n
			}
			for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
				e++
			}
			return e
		}
	}
	// 5: whitespace (c0 is whitespace: every other character started a piece above).
	k := o200kRun(s, i, o200kSpace)
	for q := k - 1; q >= i; q-- {
		if s[q] == '\r' || s[q] == '\n' {
			return q + 1
		}
	}
	if k < len(s) {
		if last := lastCharStart(s, k); last > i {
			return last
		}
	}
	return max(k, i+n0)
}

// o200kLowerWord returns the end of alternative 1 without its optional first
// character at p: upper characters, at least one lower one, an optional contraction;
// or -1.
func o200kLowerWord(s string, p int) int {
	if p >= len(s) {
		return -1
	}
	lastLower := -1 // the end of the last character of the upper run that is lower too
	k := p
	for k < len(s) && s[k] >= 'A' && s[k] <= 'Z' { // ASCII capitals: upper, not lower
		k++
	}
	for k < len(s) {
		c, n := o200kAt(s, k)
		if c&o200kUpper == 0 {
			break
		}
		k += n
		if c&o200kLower != 0 {
			lastLower = k
		}
	}
	// The upper run gives characters back until a lower one follows it: the one at k
	// (then all the lower ones after it), else the last lower one of the run (alone:
	// the characters after it in the run are not lower, nor is the one at k).
	e := lastLower
	if k < len(s) {
		if c, _ := o200kAt(s, k); c&o200kLower != 0 {
			e = o200kRun(s, k, o200kLower)
		}
	}
	if e < 0 {
		return -1
	}
	return e + contractionAt(s, e, true)
}

// o200kUpperWord returns the end of alternative 2 without its optional first
// character at p: at least one upper character, the lower ones after them, an optional
// contraction; or -1.
func o200kUpperWord(s string, p int) int {
	if p >= len(s) {
		return -1
	}
	k := o200kRun(s, p, o200kUpper)
	if k == p {
		return -1
	}
	e := o200kRun(s, k, o200kLower)
	return e + contractionAt(s, e, true)
}
