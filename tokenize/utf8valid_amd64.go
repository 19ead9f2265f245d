//go:build amd64 && !noasm && gc

package tokenize

import (
	"unicode/utf8"
	"unsafe"
)

// UTF-8 validation 32 bytes a step (utf8valid_amd64.s), after Keiser and Lemire,
// "Validating UTF-8 in less than one instruction per byte" (2021), as simdjson does
// it: three 16-entry tables, looked up (VPSHUFB) by the high and low nibbles of the
// byte before and the high nibble of the byte itself, flag what a pair of bytes can
// get wrong; an AND of the three keeps the errors that pair has. The byte two or
// three after a 3- or 4-byte lead must be a continuation byte, the one case a pair
// cannot see. The readable twin is utf8.ValidString (validRest under noasm), which the
// tests and FuzzValidUTF8 compare it with.

// Error bits of a byte pair (byte 1, byte 2).
const (
	utf8TooShort     = 1 << 0 // a lead byte, then no continuation byte
	utf8TooLong      = 1 << 1 // ASCII, then a continuation byte
	utf8Overlong3    = 1 << 2 // E0, then 80-9F
	utf8TooLarge     = 1 << 3 // F4, then 90-BF; F5-FF, then 80-BF
	utf8Surrogate    = 1 << 4 // ED, then A0-BF
	utf8Overlong2    = 1 << 5 // C0 or C1, then a continuation byte
	utf8TooLarge1000 = 1 << 6 // F5-FF, then 80-8F
	utf8Overlong4    = 1 << 6 // F0, then 80-8F
	utf8TwoConts     = 1 << 7 // two continuation bytes (an error unless after a 3- or 4-byte lead)
	utf8Carry        = utf8TooShort | utf8TooLong | utf8TwoConts
)

// utf8Tables is what validUTF8AVX2 loads: the three lookup tables (each 16 entries,
// twice, one per 128-bit lane) and its byte constants, 32 copies each.
type utf8Tables struct {
	byte1High, byte1Low, byte2High [32]byte
	nibble, third, fourth, highBit [32]byte
}

var utf8Lookup = func() (t utf8Tables) {
	byte1High := [16]byte{
		// 0_______: ASCII
		utf8TooLong, utf8TooLong, utf8TooLong, utf8TooLong, utf8TooLong, utf8TooLong, utf8TooLong, utf8TooLong,
		// 10______: a continuation byte
		utf8TwoConts, utf8TwoConts, utf8TwoConts, utf8TwoConts,
		utf8TooShort | utf8Overlong2,                 // 1100____
		utf8TooShort,                                 // 1101____
		utf8TooShort | utf8Overlong3 | utf8Surrogate, // 1110____
		utf8TooShort | utf8TooLarge | utf8TooLarge1000 | utf8Overlong4, // 1111____
	}
	byte1Low := [16]byte{
		utf8Carry | utf8Overlong3 | utf8Overlong2 | utf8Overlong4, // ____0000
		utf8Carry | utf8Overlong2,                                 // ____0001
		utf8Carry, utf8Carry,                                      // ____001_
		utf8Carry | utf8TooLarge,                    // ____0100
		utf8Carry | utf8TooLarge | utf8TooLarge1000, // ____0101
		utf8Carry | utf8TooLarge | utf8TooLarge1000, // ____011_
		utf8Carry | utf8TooLarge | utf8TooLarge1000,
		utf8Carry | utf8TooLarge | utf8TooLarge1000, // ____1___
		utf8Carry | utf8TooLarge | utf8TooLarge1000,
		utf8Carry | utf8TooLarge | utf8TooLarge1000,
		utf8Carry | utf8TooLarge | utf8TooLarge1000,
		utf8Carry | utf8TooLarge | utf8TooLarge1000,
		utf8Carry | utf8TooLarge | utf8TooLarge1000 | utf8Surrogate, // ____1101
		utf8Carry | utf8TooLarge | utf8TooLarge1000,
		utf8Carry | utf8TooLarge | utf8TooLarge1000,
	}
	byte2High := [16]byte{
		// 0_______: ASCII
		utf8TooShort, utf8TooShort, utf8TooShort, utf8TooShort, utf8TooShort, utf8TooShort, utf8TooShort, utf8TooShort,
		utf8TooLong | utf8Overlong2 | utf8TwoConts | utf8Overlong3 | utf8TooLarge1000 | utf8Overlong4, // 1000____
		utf8TooLong | utf8Overlong2 | utf8TwoConts | utf8Overlong3 | utf8TooLarge,                     // 1001____
		utf8TooLong | utf8Overlong2 | utf8TwoConts | utf8Surrogate | utf8TooLarge,                     // 101_____
		utf8TooLong | utf8Overlong2 | utf8TwoConts | utf8Surrogate | utf8TooLarge,
		// 11______: a lead byte
		utf8TooShort, utf8TooShort, utf8TooShort, utf8TooShort,
	}
	for i := range 32 {
		t.byte1High[i], t.byte1Low[i], t.byte2High[i] = byte1High[i&15], byte1Low[i&15], byte2High[i&15]
		// 0xE0-0x80, 0xF0-0x80: subtracted with saturation from the byte two (three)
		// back, leave the high bit set exactly where that byte is a 3-byte (4-byte) lead.
		t.nibble[i], t.third[i], t.fourth[i], t.highBit[i] = 0x0F, 0xE0-0x80, 0xF0-0x80, 0x80
	}
	return t
}()

// validUTF8AVX2 reports whether the n bytes at p (a multiple of 32) have no UTF-8
// error, but for a character they leave unfinished at the end.
//
//go:noescape
func validUTF8AVX2(p *byte, n int, t *utf8Tables) bool

// validRest is utf8.ValidString(s): 32 bytes a step with AVX2, then the character the
// steps leave unfinished (from its first byte) and what follows it with utf8.
func validRest(s string) bool {
	if !hasAVX2 || len(s) < 64 {
		return utf8.ValidString(s)
	}
	n := len(s) &^ 31
	if !validUTF8AVX2(unsafe.StringData(s), n, &utf8Lookup) {
		return false
	}
	t := n
	for j := n - 1; j >= n-3; j-- {
		if c := s[j]; c >= 0xC0 {
			t = j
			break
		} else if c < 0x80 {
			break
		}
	}
	return utf8.ValidString(s[t:])
}
