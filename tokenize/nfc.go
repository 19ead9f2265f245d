package tokenize

//go:generate go run ./internal/gen/nfc

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// The info byte of a code point (nfcInfo, tables in nfc_tables.go).
const (
	nfcRankMask = 0x3F // rank of the canonical combining class (0 for ccc 0); nfcCCC maps it back
	nfcMaybe    = 0x40 // NFC_Quick_Check=Maybe: may compose with a preceding character
	nfcNo       = 0x80 // NFC_Quick_Check=No: never occurs in NFC text
)

// Hangul syllable composition (Unicode chapter 3.12).
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulNCount = hangulVCount * hangulTCount
	hangulSCount = hangulLCount * hangulNCount
)

// NFC returns s in Unicode Normalization Form C exactly as the NFC normalizer of
// Hugging Face tokenizers computes it: standard UAX #15 NFC with the data of
// Unicode 9.0. Code points assigned after Unicode 9.0 are treated as starters
// (canonical combining class 0) that never decompose, compose or get reordered.
//
// When s is already normalized, which a quick check over its code points can
// usually tell, NFC returns s itself without allocating. Only the stretches
// around characters that fail the quick check are normalized. Invalid UTF-8 bytes
// are passed through unchanged and separate the text around them like a
// character that combines with nothing.
func NFC(s string) string {
	i, start := nfcSpan(s, 0)
	if i == len(s) {
		return s
	}
	return nfcFrom(s, start, i)
}

// nfcInfo returns the info byte of r: its ccc rank and quick-check flags.
// Info 0 means r is a starter that is NFC_Quick_Check=Yes, a normalization
// boundary: nothing before it interacts with it or with what follows it.
func nfcInfo(r rune) uint8 {
	u := uint32(r)
	if u >= nfcInfoLimit {
		return 0
	}
	return nfcBlocks[uint32(nfcIndex[u>>nfcBlockShift])<<nfcBlockShift|u&(1<<nfcBlockShift-1)]
}

// nfcSpan runs the NFC quick check on s from i, which must be a boundary. It returns
// the index of the first character that fails the check, or len(s), and the index
// of the last boundary at or before it, where normalization has to start.
func nfcSpan(s string, i int) (fail, start int) {
	start = i
	var last uint8 // ccc rank of the previous character
	for i < len(s) {
		if s[i] < utf8.RuneSelf {
			// ASCII is all boundaries: skip 8 bytes at a time while their high bits are clear.
			for i+8 <= len(s) && nfcLoad8(s, i)&0x8080808080808080 == 0 {
				i += 8
			}
			for i < len(s) && s[i] < utf8.RuneSelf {
				i++
			}
			start, last = i-1, 0
			continue
		}
		// nfcDecode, inline (the call costs more than the decoding).
		var r rune
		size := 0
		if i+3 <= len(s) {
			c0, c1, c2 := uint32(s[i]), uint32(s[i+1]), uint32(s[i+2])
			if c0 < 0xE0 {
				if c0 >= 0xC2 && c1&0xC0 == 0x80 {
					r, size = rune((c0&0x1F)<<6|c1&0x3F), 2
				}
			} else if c0 < 0xF0 && c1&0xC0 == 0x80 && c2&0xC0 == 0x80 {
				if v := (c0&0x0F)<<12 | (c1&0x3F)<<6 | c2&0x3F; v >= 0x800 && v&0xF800 != 0xD800 {
					r, size = rune(v), 3
				}
			}
		}
		if size == 0 {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if r == utf8.RuneError && size == 1 {
			// An invalid byte combines with nothing: a boundary follows it.
			i++
			start, last = i, 0
			continue
		}
		info := nfcInfo(r)
		switch {
		case info == 0:
			start, last = i, 0
		case info > nfcRankMask || info < last:
			// NFC_QC No or Maybe, or combining marks out of canonical order.
			return i, start
		default:
			last = info
		}
		i += size
	}
	return i, start
}

// nfcDecode is utf8.DecodeRuneInString(s[i:]) for s[i] ≥ 0x80, with the two- and
// three-byte forms (the scripts of most text beyond ASCII) decoded here, inline: the
// standard library's are a call to its slow path, ~8% of NeoX's time on text of
// other scripts. Everything else, invalid bytes included, goes to the library.
func nfcDecode(s string, i int) (rune, int) {
	if i+3 <= len(s) {
		c0, c1, c2 := uint32(s[i]), uint32(s[i+1]), uint32(s[i+2])
		if c0 < 0xE0 {
			if c0 >= 0xC2 && c1&0xC0 == 0x80 {
				return rune((c0&0x1F)<<6 | c1&0x3F), 2
			}
		} else if c0 < 0xF0 && c1&0xC0 == 0x80 && c2&0xC0 == 0x80 {
			// Not overlong (≥ U+0800), not a surrogate.
			if r := (c0&0x0F)<<12 | (c1&0x3F)<<6 | c2&0x3F; r >= 0x800 && r&0xF800 != 0xD800 {
				return rune(r), 3
			}
		}
	}
	return utf8.DecodeRuneInString(s[i:])
}

// nfcLoad8 returns the 8 bytes of s at i as a little-endian word (one load).
func nfcLoad8(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// nfcBoundaryAfter returns the index of the first boundary after the character at i
// (or len(s)).
func nfcBoundaryAfter(s string, i int) int {
	_, size := utf8.DecodeRuneInString(s[i:])
	for i += size; i < len(s); i += size {
		if s[i] < utf8.RuneSelf {
			return i
		}
		var r rune
		r, size = nfcDecode(s, i)
		if (r == utf8.RuneError && size == 1) || nfcInfo(r) == 0 {
			return i
		}
	}
	return len(s)
}

// nfcFrom normalizes s whose first quick-check failure is at fail, with the last
// boundary before it at start. Stretches from a boundary to the next are
// normalized on their own; s is returned if none of them changes.
func nfcFrom(s string, start, fail int) string {
	var (
		b       strings.Builder
		copied  int // s[:copied] is accounted for in b
		changed bool
		charBuf [32]nfcChar
		outBuf  [64]byte
	)
	// Stack buffers, so that stretches that turn out unchanged cost no allocation.
	chars, out := charBuf[:0], outBuf[:0]
	for fail < len(s) {
		end := nfcBoundaryAfter(s, fail)
		seg := s[start:end]
		if chars, out = nfcNormalize(seg, chars, out); string(out) != seg {
			if !changed {
				changed = true
				b.Grow(len(s) + len(s)/8)
			}
			b.WriteString(s[copied:start])
			b.Write(out)
			copied = end
		}
		fail, start = nfcSpan(s, end)
	}
	if !changed {
		return s
	}
	b.WriteString(s[copied:])
	return b.String()
}

// nfcSlow normalizes all of s with the full algorithm, without the quick check.
// It defines what NFC must return; tests compare the two.
func nfcSlow(s string) string {
	var (
		chars []nfcChar
		norm  []byte
		out   []byte
	)
	for len(s) > 0 {
		j := 0
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			j += size
		}
		chars, norm = nfcNormalize(s[:j], chars, norm)
		out = append(out, norm...)
		if j < len(s) {
			out = append(out, s[j]) // invalid byte
			j++
		}
		s = s[j:]
	}
	return string(out)
}

// nfcChar is a code point with its info byte.
type nfcChar struct {
	r    rune
	info uint8
}

// nfcNormalize returns NFC(seg) for valid UTF-8 seg: canonical decomposition,
// canonical ordering, canonical composition. It reuses the buffers c, for the
// code points, and out, for the result, and returns them.
func nfcNormalize(seg string, c []nfcChar, out []byte) ([]nfcChar, []byte) {
	c = c[:0]
	for _, r := range seg {
		c = nfcDecompose(c, r)
	}
	nfcReorder(c)
	c = nfcCompose(c)
	out = out[:0]
	for _, ch := range c {
		out = utf8.AppendRune(out, ch.r)
	}
	return c, out
}

// nfcDecompose appends the full canonical decomposition of r to dst.
func nfcDecompose(dst []nfcChar, r rune) []nfcChar {
	if s := r - hangulSBase; s >= 0 && s < hangulSCount {
		dst = append(dst,
			nfcChar{hangulLBase + s/hangulNCount, 0},
			nfcChar{hangulVBase + s%hangulNCount/hangulTCount, nfcMaybe})
		if t := s % hangulTCount; t != 0 {
			dst = append(dst, nfcChar{hangulTBase + t, nfcMaybe})
		}
		return dst
	}
	if r >= 0xC0 { // the first code point with a decomposition is U+00C0
		if i, ok := slices.BinarySearch(nfcDecompKeys[:], uint32(r)); ok {
			for _, d := range nfcDecompRunes[nfcDecompOff[i]:nfcDecompOff[i+1]] {
				dst = append(dst, nfcChar{rune(d), nfcInfo(rune(d))})
			}
			return dst
		}
	}
	return append(dst, nfcChar{r, nfcInfo(r)})
}

// nfcReorder sorts each run of non-starters stably by combining class.
func nfcReorder(c []nfcChar) {
	for i := 0; i < len(c); {
		if c[i].info&nfcRankMask == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(c) && c[j].info&nfcRankMask != 0 {
			j++
		}
		if j-i > 1 {
			slices.SortStableFunc(c[i:j], func(a, b nfcChar) int {
				return int(a.info&nfcRankMask) - int(b.info&nfcRankMask)
			})
		}
		i = j
	}
}

// nfcCompose applies canonical composition to the decomposed, ordered c in place.
func nfcCompose(c []nfcChar) []nfcChar {
	if len(c) == 0 {
		return c
	}
	starter := -1       // index of the last starter in c[:k]
	last := uint8(0xFF) // rank of c[k-1]; 0xFF blocks everything before the first starter
	if c[0].info&nfcRankMask == 0 {
		starter, last = 0, 0
	}
	k := 1
	for _, ch := range c[1:] {
		rank := ch.info & nfcRankMask
		// ch combines with the starter if it may compose at all and nothing
		// between them blocks it: no starter, no mark of equal or higher class.
		if starter >= 0 && ch.info&nfcMaybe != 0 && (last < rank || last == 0) {
			if r, ok := nfcComposePair(c[starter].r, ch.r); ok {
				c[starter].r = r
				continue
			}
		}
		if rank == 0 {
			starter = k
		}
		last = rank
		c[k] = ch
		k++
	}
	return c[:k]
}

// nfcComposePair returns the primary composite of a and b, if there is one.
func nfcComposePair(a, b rune) (rune, bool) {
	if l := a - hangulLBase; l >= 0 && l < hangulLCount {
		if v := b - hangulVBase; v >= 0 && v < hangulVCount {
			return hangulSBase + (l*hangulVCount+v)*hangulTCount, true
		}
	}
	if s := a - hangulSBase; s >= 0 && s < hangulSCount && s%hangulTCount == 0 {
		if t := b - hangulTBase; t > 0 && t < hangulTCount {
			return a + t, true
		}
	}
	if i, ok := slices.BinarySearch(nfcCompKeys[:], uint64(a)<<21|uint64(b)); ok {
		return rune(nfcCompRunes[i]), true
	}
	return 0, false
}
