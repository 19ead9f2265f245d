package tokenize

// The byte-level alphabet: GPT-2's vocab and merge files write each byte as one printable
// code point. Bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for themselves; the other 68
// bytes, in increasing order, are U+0100, U+0101, ... (space is 'Ġ' U+0120, '\n' is 'Ċ').
var byteToRune, runeToByte = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = next
			next++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevelDecode turns a vocabulary string written in the byte-level alphabet into
// the raw bytes it stands for. ok is false if a character is outside the alphabet.
func byteLevelDecode(s string) (raw string, ok bool) {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		c, in := runeToByte[r]
		if !in {
			return "", false
		}
		b = append(b, c)
	}
	return string(b), true
}

// byteLevelEncode writes raw bytes in the byte-level alphabet.
func byteLevelEncode(raw string) string {
	r := make([]rune, len(raw))
	for i := 0; i < len(raw); i++ {
		r[i] = byteToRune[raw[i]]
	}
	return string(r)
}

// byteToChar is the byte-level alphabet's character for byte b.
func byteToChar(b byte) rune { return byteToRune[b] }

// charToByte is the byte that byte-level character r stands for.
func charToByte(r rune) (byte, bool) {
	b, ok := runeToByte[r]
	return b, ok
}
