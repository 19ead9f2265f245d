package sim

import (
	"fmt"
	"strings"
)

// tokKind is the kind of a PTX token.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // opcodes, directives, registers, labels, symbols: [A-Za-z_$%.][A-Za-z0-9_$.]* (with ::)
	tNumber         // 12, 0x1F, 0f3F800000, 0d3FF0000000000000, 1.5, 7U
	tString         // "nounroll"
	tPunct          // one of , ; : { } [ ] ( ) < > + - ! | @ = *
)

type token struct {
	kind tokKind
	text string
	line int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tString:
		return fmt.Sprintf("%q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// lex splits PTX text into tokens, dropping comments. It fails only on a byte
// that cannot start a token or an unterminated comment or string.
func lex(src string) ([]token, error) {
	var toks []token
	line := 1
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated /* comment", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				j++
			}
			if j >= len(src) || src[j] != '"' {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			toks = append(toks, token{tString, src[i+1 : j], line})
			i = j + 1
		case isIdentStart(c):
			j := i + 1
			for j < len(src) {
				if isIdentChar(src[j]) {
					j++
				} else if src[j] == ':' && j+1 < len(src) && src[j+1] == ':' {
					j += 2
				} else {
					break
				}
			}
			toks = append(toks, token{tIdent, src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			// exponents of decimal floats: 1.5e-3
			if j < len(src) && (src[j] == '-' || src[j] == '+') && (src[j-1] == 'e' || src[j-1] == 'E') && isDecimalFloat(src[i:j]) {
				j++
				for j < len(src) && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			toks = append(toks, token{tNumber, src[i:j], line})
			i = j
		case strings.IndexByte(",;:{}[]()<>+-!|@=*", c) >= 0:
			toks = append(toks, token{tPunct, src[i : i+1], line})
			i++
		default:
			return nil, fmt.Errorf("line %d: unexpected character %q", line, c)
		}
	}
	toks = append(toks, token{tEOF, "", line})
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c == '%' || c == '.'
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9'
}

// isDecimalFloat reports whether s looks like the mantissa of a decimal float
// with an exponent letter at its end (1.5e, 2E).
func isDecimalFloat(s string) bool {
	if len(s) < 2 || strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") || strings.HasPrefix(s, "0f") ||
		strings.HasPrefix(s, "0F") || strings.HasPrefix(s, "0d") || strings.HasPrefix(s, "0D") {
		return false
	}
	for _, c := range s[:len(s)-1] {
		if !(c >= '0' && c <= '9' || c == '.') {
			return false
		}
	}
	return true
}
