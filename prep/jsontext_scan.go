package prep

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// The fast path of TextField (and of scanRecord and StringMember): one pass over the
// line (scanObject) that validates it exactly as encoding/json's scanner does (RFC
// 8259 grammar; invalid UTF-8 inside strings is accepted, as there) and remembers
// where the last members of the names asked for hold their values; then only the
// values needed are decoded. Whenever the line is not a valid object whose text is a
// string or a list of strings, the fast path gives up (done == false) and
// slowTextField answers, so that errors are encoding/json's own.

// maxFastDepth is the nesting depth beyond which the fast path gives up (encoding/json
// allows 10000 and errors beyond; the fallback decides).
const maxFastDepth = 1000

// String flags from scanString.
const (
	strEscaped = 1 << iota // holds a backslash escape
	strBadUTF8             // holds bytes that are not valid UTF-8, or a \u escape of a lone UTF-16 surrogate
)

// span is where a member's value lies in a line: line[start:end], with scanString's
// flags when it is a string. start is -1 when there is no such member.
type span struct {
	start, end int
	flags      uint8
}

// value returns the value of s in line, or nil if there is none.
func (s span) value(line []byte) []byte {
	if s.start < 0 {
		return nil
	}
	return line[s.start:s.end]
}

// scanObject validates line as one JSON object, exactly as encoding/json would, and
// sets spans[i] to the value of the last member named names[i] (the last counts, as
// in encoding/json). ok is false when the line is not a valid object or the scan
// gives up (nesting deeper than maxFastDepth): the caller then asks encoding/json.
func scanObject(line []byte, names []string, spans []span) (ok bool) {
	for k := range spans {
		spans[k] = span{start: -1, end: -1}
	}
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for {
			if i >= len(line) || line[i] != '"' {
				return false
			}
			keyEnd, keyFlags, good := scanString(line, i)
			if !good {
				return false
			}
			keyStart := i
			i = skipSpace(line, keyEnd)
			if i >= len(line) || line[i] != ':' {
				return false
			}
			i = skipSpace(line, i+1)
			start := i
			var flags uint8
			if i, flags, good = skipValue(line, i, 1); !good {
				return false
			}
			for k, name := range names {
				if keyEqual(line[keyStart+1:keyEnd-1], keyFlags, name) {
					spans[k] = span{start, i, flags}
				}
			}
			i = skipSpace(line, i)
			if i >= len(line) {
				return false
			}
			if line[i] == ',' {
				i = skipSpace(line, i+1)
				continue
			}
			if line[i] != '}' {
				return false
			}
			i++
			break
		}
	}
	return skipSpace(line, i) == len(line)
}

// fastTextField is TextField for valid objects whose text is a string or a list of
// strings. done is false when it gives up.
func fastTextField(line []byte, key string) (text string, ok, badUTF8, done bool) {
	var spans [1]span
	if !scanObject(line, []string{key}, spans[:]) {
		return "", false, false, false
	}
	raw := spans[0].value(line)
	if raw == nil {
		return "", false, false, true
	}
	text, badUTF8, good := decodeText(raw, spans[0].flags)
	return text, good, badUTF8, good // not text: the fallback writes the error
}

// decodeText decodes raw, the valid JSON value of a text member whose scanString flags
// are flags if it is a string: a string, or a list of strings joined with
// ListSeparator. badUTF8 says whether it held invalid UTF-8 (now U+FFFD). ok is false
// if raw is neither.
func decodeText(raw []byte, flags uint8) (text string, badUTF8, ok bool) {
	switch raw[0] {
	case '"':
		return decodeString(raw[1:len(raw)-1], flags), flags&strBadUTF8 != 0, true
	case '[':
		return decodeList(raw)
	}
	return "", false, false
}

// keyEqual reports whether the member name raw (between its quotes, escapes not
// decoded), flagged by scanString with flags, equals key once decoded.
func keyEqual(raw []byte, flags uint8, key string) bool {
	if flags == 0 {
		return string(raw) == key
	}
	return decodeString(raw, flags) == key
}

// decodeList decodes the valid JSON array raw, joining its strings with
// ListSeparator. ok is false if an element is not a string.
func decodeList(raw []byte) (text string, badUTF8, ok bool) {
	var parts []string
	i := skipSpace(raw, 1)
	if raw[i] == ']' {
		return "", false, true
	}
	for {
		if raw[i] != '"' {
			return "", false, false
		}
		end, flags, _ := scanString(raw, i)
		parts = append(parts, decodeString(raw[i+1:end-1], flags))
		badUTF8 = badUTF8 || flags&strBadUTF8 != 0
		i = skipSpace(raw, end)
		if raw[i] == ']' {
			return strings.Join(parts, ListSeparator), badUTF8, true
		}
		i = skipSpace(raw, i+1) // the ','
	}
}

// skipSpace returns the index of the first byte at or after i that is not JSON
// whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipValue scans the JSON value at b[i], nested depth deep, and returns the index
// after it; flags are scanString's for a string. ok is false if the value is not
// valid JSON or nests too deep.
func skipValue(b []byte, i, depth int) (end int, flags uint8, ok bool) {
	if i >= len(b) {
		return 0, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i)
	case c == '{' || c == '[':
		end, ok = skipContainer(b, i, depth)
		return end, 0, ok
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		end, ok = scanNumber(b, i)
		return end, 0, ok
	}
	return 0, 0, false
}

// skipContainer scans the object or array at b[i], nested depth deep.
func skipContainer(b []byte, i, depth int) (end int, ok bool) {
	if depth >= maxFastDepth {
		return 0, false
	}
	object := b[i] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return i + 1, true
	}
	for {
		if object {
			if i >= len(b) || b[i] != '"' {
				return 0, false
			}
			if i, _, ok = scanString(b, i); !ok {
				return 0, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return 0, false
			}
			i = skipSpace(b, i+1)
		}
		if i, _, ok = skipValue(b, i, depth+1); !ok {
			return 0, false
		}
		i = skipSpace(b, i)
		switch {
		case i >= len(b):
			return 0, false
		case b[i] == ',':
			i = skipSpace(b, i+1)
		case b[i] == closer:
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// literal scans the literal word at b[i].
func literal(b []byte, i int, word string) (end int, flags uint8, ok bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return 0, 0, false
	}
	return i + len(word), 0, true
}

// scanNumber scans the number at b[i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (end int, ok bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return 0, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return 0, false
		}
		i = skipDigits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return 0, false
		}
		i = skipDigits(b, i)
	}
	return i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipDigits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

// SWAR constants: a byte value repeated in each of the 8 bytes of a word.
const (
	ones       = 0x0101010101010101
	highBits   = 0x8080808080808080
	quotes     = '"' * ones
	backslashs = '\\' * ones
	spaces     = ' ' * ones
)

// specialBytes flags, in the high bit of each byte, the bytes of w (little-endian)
// that are '"', '\\', below 0x20 or above 0x7f. A flag may be false above a true one
// (borrows carry upwards) but the lowest flag is always true, which is all
// scanString uses.
func specialBytes(w uint64) uint64 {
	zeroIfQuote := w ^ quotes
	zeroIfBackslash := w ^ backslashs
	return ((zeroIfQuote - ones) &^ zeroIfQuote & highBits) |
		((zeroIfBackslash - ones) &^ zeroIfBackslash & highBits) |
		((w - spaces) &^ w & highBits) |
		(w & highBits)
}

// scanString scans the string at b[i] (b[i] is '"') and returns the index after its
// closing quote and what it holds. ok is false if the string is not valid JSON: it
// does not end, holds a control character, or an escape is malformed. Invalid UTF-8
// is valid JSON (encoding/json decodes it to U+FFFD); it sets strBadUTF8, as does a
// \u escape of a lone UTF-16 surrogate (U+FFFD too).
//
// Plain stretches go 32 bytes per step through scanPlain (AVX2, one-byte escapes
// skipped in the same loop), then 8 bytes at a time while none of them is special (a
// quote, a backslash, a control character or non-ASCII); a run of non-ASCII bytes is
// checked whole by utf8.Valid.
func scanString(b []byte, i int) (end int, flags uint8, ok bool) {
	i++
	for {
		var escaped bool
		if i, escaped = scanPlain(b, i); escaped {
			flags |= strEscaped
		}
		for i+8 <= len(b) {
			special := specialBytes(binary.LittleEndian.Uint64(b[i:]))
			if special != 0 {
				i += bits.TrailingZeros64(special) >> 3
				break
			}
			i += 8
		}
		if i >= len(b) {
			return 0, 0, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, flags, true
		case c == '\\':
			flags |= strEscaped
			if i+1 >= len(b) {
				return 0, 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r := hex4(b[i+2:])
				if r < 0 {
					return 0, 0, false
				}
				i += 6
				if r >= 0xd800 && r <= 0xdfff {
					// A UTF-16 surrogate: with the low one after it, a pair; alone, it
					// cannot be UTF-8 and becomes U+FFFD (appendEscape), counted as
					// invalid UTF-8 is (Python keeps it, and HF tokenizers refuse it).
					if r <= 0xdbff && i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if r2 := hex4(b[i+2:]); r2 >= 0xdc00 && r2 <= 0xdfff {
							i += 6
							continue
						}
					}
					flags |= strBadUTF8
				}
			default:
				return 0, 0, false
			}
		case c < 0x20:
			return 0, 0, false
		case c < utf8.RuneSelf: // an ordinary byte among the last 7
			i++
		default:
			// A run of non-ASCII bytes, checked whole: a multi-byte sequence cannot
			// run past an ASCII byte (the closing quote is one), so the run holds
			// invalid UTF-8 exactly when decoding b[i:] rune by rune, as
			// encoding/json does, meets some.
			j := i + 1
			for j+8 <= len(b) && binary.LittleEndian.Uint64(b[j:])&highBits == highBits {
				j += 8
			}
			for j < len(b) && b[j] >= utf8.RuneSelf {
				j++
			}
			if !utf8.Valid(b[i:j]) {
				flags |= strBadUTF8
			}
			i = j
		}
	}
}

// hex4 returns the value of the 4 hex digits at the start of b, or -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
