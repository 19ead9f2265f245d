package tokenize

import "unicode/utf8"

//go:generate go run ./internal/gen/classes

// Code point classes as HF's ByteLevel regex sees them (\p{L}, \p{N}, \s, everything else).
const (
	classOther  = 0
	classLetter = 1
	classNumber = 2
	classSpace  = 3
)

// asciiClass is the class of each ASCII byte; bytes ≥ 0x80 are marked classMulti.
var asciiClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 0x80:
			t[c] = classMulti
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = classLetter
		case c >= '0' && c <= '9':
			t[c] = classNumber
		case c == ' ', c >= '\t' && c <= '\r':
			t[c] = classSpace
		default:
			t[c] = classOther
		}
	}
	return t
}()

// classMulti marks a byte that starts (or continues) a multi-byte sequence.
const classMulti = 4

// runeClass is the HF class of code point r (Unicode 16.0 letters and numbers).
func runeClass(r rune) uint8 {
	if uint32(r) >= 0x110000 {
		return classOther
	}
	blk := uint32(classBlockIndex[r>>8])
	i := blk<<8 | uint32(r&0xFF)
	return classBlocks[i>>2] >> ((i & 3) * 2) & 3
}

// classAt returns the class of the code point at s[i] and its length in bytes.
func classAt(s string, i int) (uint8, int) {
	c := asciiClass[s[i]]
	if c != classMulti {
		return c, 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return runeClass(r), n
}
