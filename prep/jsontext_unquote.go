package prep

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// decodeString decodes the contents raw of a valid JSON string (without its quotes)
// that scanString flagged with flags, exactly as encoding/json's unquote does (see
// appendString).
func decodeString(raw []byte, flags uint8) string {
	if flags == 0 {
		return string(raw)
	}
	buf := appendString(nil, raw, flags)
	return unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
}

// appendString appends the decoded contents raw of a valid JSON string flagged by
// scanString with flags to dst. Without escapes and invalid UTF-8 it is one copy. With
// escapes only (most JSONL text: a newline is one) it is appendEscaped's one pass;
// finding each backslash with bytes.IndexByte and appending the stretch between took
// over twice as long on corpora with an escape every 15 bytes.
func appendString(dst, raw []byte, flags uint8) []byte {
	switch flags {
	case 0:
		return append(dst, raw...)
	case strEscaped:
		return appendEscaped(dst, raw)
	}
	buf := slices.Grow(dst, len(raw))
	for len(raw) > 0 {
		n := len(raw)
		if flags&strEscaped != 0 {
			if n = bytes.IndexByte(raw, '\\'); n < 0 {
				n = len(raw)
			}
		}
		buf = appendUTF8(buf, raw[:n])
		if raw = raw[n:]; len(raw) > 0 {
			buf, raw = appendEscape(buf, raw)
		}
	}
	return buf
}

// appendEscaped is appendString of valid UTF-8 with escapes. Plain stretches and
// one-byte escapes go 32 or 64 bytes per step through decodePlain (AVX2, AVX-512);
// then it writes 8 bytes at a time into a buffer with room for them, and moves on by
// as many as precede the next backslash.
func appendEscaped(dst, raw []byte) []byte {
	buf := slices.Grow(dst, len(raw)+32)
	buf = buf[:cap(buf)]
	n := len(dst)
	for i := 0; i < len(raw); {
		if i, n = decodePlain(buf, n, raw, i); i >= len(raw) {
			break
		}
		if i+8 <= len(raw) {
			w := binary.LittleEndian.Uint64(raw[i:])
			binary.LittleEndian.PutUint64(buf[n:], w)
			z := w ^ backslashs
			if m := (z - ones) &^ z & highBits; m != 0 {
				k := bits.TrailingZeros64(m) >> 3
				i, n = i+k, n+k
			} else {
				i, n = i+8, n+8
				continue
			}
		} else if raw[i] != '\\' {
			buf[n] = raw[i]
			i, n = i+1, n+1
			continue
		}
		// An escape at raw[i]: one of one byte in place, else appendEscape, which
		// writes in place too (an escape is never longer decoded).
		if v := simpleEscapes[raw[i+1]]; v != 0 {
			buf[n] = v
			i, n = i+2, n+1
			continue
		}
		out, rest := appendEscape(buf[:n], raw[i:])
		i, n = len(raw)-len(rest), len(out)
		if cap(out) != cap(buf) { // cannot happen
			buf = slices.Grow(out, len(raw)-i+32)
			buf = buf[:cap(buf)]
		}
	}
	return buf[:n]
}

// The vector code of scanString and appendEscaped (jsonLevel): SWAR alone, AVX2, or
// AVX-512 (VBMI2) decoding.
const (
	jsonSWAR = iota
	jsonAVX2
	jsonAVX512
)

// escapeTable maps each ASCII byte that a backslash escapes to the byte the escape
// stands for (the others to themselves): the AVX-512 decoder's VPERMI2B table.
var escapeTable = func() (t [128]byte) {
	for c := range t {
		t[c] = byte(c)
		if v := simpleEscapes[c]; v != 0 {
			t[c] = v
		}
	}
	return t
}()

// simpleEscapes maps the byte after a backslash to the byte the escape stands for (0:
// not a one-byte escape, \\u).
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// appendUTF8 appends b, replacing each byte that does not start a valid UTF-8 sequence
// with U+FFFD (as encoding/json and utf8.DecodeRune do).
func appendUTF8(buf, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			buf = utf8.AppendRune(buf, utf8.RuneError)
		} else {
			buf = append(buf, b[:size]...)
		}
		b = b[size:]
	}
	return buf
}

// appendEscape appends what the escape at the start of b stands for (b[0] is '\\', and
// the escape is valid JSON) and returns the rest of b. A \u escape of a UTF-16 surrogate
// takes the following \u escape with it when the two make a pair; otherwise it stands
// for U+FFFD, as in encoding/json.
func appendEscape(buf, b []byte) ([]byte, []byte) {
	switch c := b[1]; c {
	case 'b':
		buf = append(buf, '\b')
	case 'f':
		buf = append(buf, '\f')
	case 'n':
		buf = append(buf, '\n')
	case 'r':
		buf = append(buf, '\r')
	case 't':
		buf = append(buf, '\t')
	case 'u':
		r := hex4(b[2:])
		b = b[6:]
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if len(b) >= 6 && b[0] == '\\' && b[1] == 'u' {
				r2 = hex4(b[2:])
			}
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				return utf8.AppendRune(buf, pair), b[6:]
			}
			r = utf8.RuneError
		}
		return utf8.AppendRune(buf, r), b
	default: // '"', '\\', '/'
		buf = append(buf, c)
	}
	return buf, b[2:]
}

// validUTF8 returns b as a string in which each byte that does not start a valid
// UTF-8 sequence is replaced by U+FFFD, as encoding/json does with JSON strings.
func validUTF8(b []byte) string {
	buf := appendUTF8(make([]byte, 0, len(b)+16), b)
	return unsafe.String(unsafe.SliceData(buf), len(buf))
}
