package tokenize

import "strings"

// Cut returns the first offset p with from ≤ p < limit at which text can be cut into
// text[:p] and text[p:] so that encoding the two and joining their ids gives the ids
// of the whole: Encode(text) equals Encode(text[:p]) followed by Encode(text[p:]). It
// returns -1 when there is none in that range, or when the tokenizer does not allow
// cuts (a prefix space is added to each text, or an added token holds a newline).
//
// Callers use it to encode one large text in parts: on several cores, or a part at a
// time so that its ids need not all be held at once.
//
// For byte-level BPE, p is just after a '\n' that follows an ASCII character other
// than whitespace, and before an ASCII letter or digit. Every pre-tokenizer ends a piece
// there, whether or not the text goes on: the newline is a whitespace run of its own
// (or ends a run of "other" characters that takes it in), a newline never starts or
// joins the next piece, and a letter or digit is never taken into the piece before a
// newline. No added token spans it, and NFC does not combine across it.
//
// Windows line ends ("\r\n" in that place) are cut too, where each pre-tokenizer ends
// a piece whether or not the text goes on: the tiktoken patterns (cl100k_base,
// o200k_base) after the "\r\n" (one piece, or the end of a run of "other" characters);
// GPT-2's pattern between the '\r' and the '\n' (it makes them two pieces, but a text
// that ends in "\r\n" one). Not when an added token holds a '\r'.
func (t *Tokenizer) Cut(text string, from, limit int) int {
	limit = min(limit, len(text))
	from = max(from, 1)
	switch t.kind {
	case KindByteChar, KindChar:
		// Before a byte that continues no character (the byte tokenizer too: a
		// caller that replaces invalid UTF-8 part by part must not cut a
		// character in two). An ill-formed sequence never runs across such a byte.
		for p := from; p < limit; p++ {
			if text[p]&0xC0 != 0x80 { // the start of a character (or a stray byte)
				return p
			}
		}
		return -1
	}
	if !t.cuttable {
		return -1
	}
	from = max(from, 2)
	for p := from; p < limit; p++ {
		k := strings.IndexByte(text[p-1:limit-1], '\n')
		if k < 0 {
			return -1
		}
		p += k
		if c := text[p] | 0x20; c >= 'a' && c <= 'z' || text[p] >= '0' && text[p] <= '9' {
			switch {
			case asciiNonSpace(text[p-2]):
				return p
			case text[p-2] == '\r' && t.crCuttable && p >= 3 && asciiNonSpace(text[p-3]):
				if t.pattern != "gpt2" {
					return p // after the "\r\n"
				}
				if p-1 >= from {
					return p - 1 // between the '\r' and the '\n'
				}
			}
		}
	}
	return -1
}

// asciiNonSpace reports whether c is an ASCII character other than whitespace.
func asciiNonSpace(c byte) bool {
	return c < 0x80 && c != ' ' && (c < '\t' || c > '\r')
}
