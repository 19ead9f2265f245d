package prep

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeString decodes the contents raw of a valid JSON string (without its quotes)
// that scanString flagged with flags, exactly as encoding/json's unquote does.
// Without escapes and invalid UTF-8 it is one copy.
func decodeString(raw []byte, flags uint8) string {
	if flags == 0 {
		return string(raw)
	}
	var sb strings.Builder
	sb.Grow(len(raw))
	for len(raw) > 0 {
		n := len(raw)
		if flags&strEscaped != 0 {
			if n = bytes.IndexByte(raw, '\\'); n < 0 {
				n = len(raw)
			}
		}
		if flags&strBadUTF8 != 0 {
			writeUTF8(&sb, raw[:n])
		} else {
			sb.Write(raw[:n])
		}
		if raw = raw[n:]; len(raw) > 0 {
			raw = writeEscape(&sb, raw)
		}
	}
	return sb.String()
}

// writeUTF8 writes b, replacing each byte that does not start a valid UTF-8 sequence
// with U+FFFD (as encoding/json and utf8.DecodeRune do).
func writeUTF8(sb *strings.Builder, b []byte) {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:size])
		}
		b = b[size:]
	}
}

// writeEscape writes the escape at the start of b (b[0] is '\\', and the escape is
// valid JSON) and returns the rest of b. A \u escape of a UTF-16 surrogate takes the
// following \u escape with it when the two make a pair; otherwise it stands for
// U+FFFD, as in encoding/json.
func writeEscape(sb *strings.Builder, b []byte) []byte {
	switch c := b[1]; c {
	case 'b':
		sb.WriteByte('\b')
	case 'f':
		sb.WriteByte('\f')
	case 'n':
		sb.WriteByte('\n')
	case 'r':
		sb.WriteByte('\r')
	case 't':
		sb.WriteByte('\t')
	case 'u':
		r := hex4(b[2:])
		b = b[6:]
		if utf16.IsSurrogate(r) {
			r2 := rune(-1)
			if len(b) >= 6 && b[0] == '\\' && b[1] == 'u' {
				r2 = hex4(b[2:])
			}
			if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
				sb.WriteRune(pair)
				return b[6:]
			}
			r = utf8.RuneError
		}
		sb.WriteRune(r)
		return b
	default: // '"', '\\', '/'
		sb.WriteByte(c)
	}
	return b[2:]
}

// validUTF8 returns b as a string in which each byte that does not start a valid
// UTF-8 sequence is replaced by U+FFFD, as encoding/json does with JSON strings.
func validUTF8(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	writeUTF8(&sb, b)
	return sb.String()
}
