package tokenize

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

// Byte classes for the pre-tokenizers, a block of 64 bytes at a time.
//
// The scanners (scan_*.go) ask two questions: "what is the class of the character at
// byte i" and "where does the run of class c that continues at i end". Both are a bit
// test or a trailing-zero count on per-block bit masks: for each 64-byte block, one
// bit per byte in each of letter, number and space (a byte in none of them is
// "other"). Every byte of a multi-byte character carries the class of its character.
//
// classifyBlocks fills the masks of ASCII bytes and marks the bytes ≥ 0x80 in multi;
// it has an AVX2 version (classify_amd64.s) and the SWAR version classifyBlocksGo
// below, which the noasm build and CPUs without AVX2 use. classWindow.fixMulti then
// decodes the characters of the marked bytes (rare in English, common elsewhere) and
// gives their bytes the class from the Unicode 16.0 tables (runeClass).

// classBlock holds the masks of 64 bytes: bit k stands for byte k of the block. The
// first four are indexed by class (classOther, classLetter, classNumber, classSpace);
// the classifier puts the bytes ≥ 0x80 in [classOther] (blockMulti), which
// classWindow.fill replaces with the "other" bytes once it has classified those
// characters. The rest mark single bytes the scanners look for.
type classBlock [8]uint64

const (
	blockMulti      = classOther
	blockSpaceChar  = 4 // ' '
	blockApostrophe = 5 // '\''
	blockCRLF       = 6 // '\r' or '\n'
	blockHigh       = 7 // bytes ≥ 0x80
)

// SWAR constants: one byte replicated eight times.
const (
	swarOnes = 0x0101010101010101
	swarHigh = 0x8080808080808080
	swarLow7 = 0x7F7F7F7F7F7F7F7F
)

// swarInRange sets the high bit of each byte of x7 (bytes ≤ 0x7F) that lies in [lo, hi];
// bytes of x7 plus 0x80 cannot carry into the next byte, so the lanes stay apart.
func swarInRange(x7 uint64, lo, hi byte) uint64 {
	return (x7 + swarOnes*uint64(0x80-lo)) &^ (x7 + swarOnes*uint64(0x7F-hi)) & swarHigh
}

// swarMoveMask gathers the high bit of each byte of x (the other bits clear) into the
// low 8 bits, byte k to bit k.
func swarMoveMask(x uint64) uint64 {
	return (x >> 7) * 0x0102040810204080 >> 56
}

// classifyBlocksGo is the pure-Go twin of classifyBlocksAVX2: it fills dst[i] from the
// 64 bytes src[64i:64i+64]. len(src) must be 64*len(dst).
func classifyBlocksGo(dst []classBlock, src []byte) {
	_ = src[:64*len(dst)]
	for i := range dst {
		var b classBlock
		for w := range 8 {
			x := binary.LittleEndian.Uint64(src[64*i+8*w:])
			x7 := x & swarLow7
			ascii := ^x & swarHigh
			spaceChar := swarInRange(x7, ' ', ' ') & ascii
			shift := uint(8 * w)
			b[blockMulti] |= swarMoveMask(x&swarHigh) << shift
			b[classLetter] |= swarMoveMask(swarInRange(x7|0x2020202020202020, 'a', 'z')&ascii) << shift
			b[classNumber] |= swarMoveMask(swarInRange(x7, '0', '9')&ascii) << shift
			b[classSpace] |= swarMoveMask(swarInRange(x7, '\t', '\r')&ascii|spaceChar) << shift
			b[blockSpaceChar] |= swarMoveMask(spaceChar) << shift
			b[blockApostrophe] |= swarMoveMask(swarInRange(x7, '\'', '\'')&ascii) << shift
			b[blockCRLF] |= swarMoveMask((swarInRange(x7, '\r', '\r')|swarInRange(x7, '\n', '\n'))&ascii) << shift
		}
		b[blockHigh] = b[blockMulti]
		dst[i] = b
	}
}

// asciiPrefixGo returns the length of the longest prefix of s made of whole 128-byte
// chunks of ASCII bytes other than c: validUTF8 need not look at those bytes again, and
// an added token whose first byte is c starts after them. It is the twin of
// asciiPrefixAVX2.
func asciiPrefixGo(s string, c byte) int {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	cs := swarOnes * uint64(c)
	i := 0
	for ; i+128 <= len(b); i += 128 {
		var x, eq uint64
		for k := 0; k < 128; k += 8 {
			w := binary.LittleEndian.Uint64(b[i+k:])
			x |= w
			v := w ^ cs // a zero byte where w has c
			eq |= (v - swarOnes) &^ v
		}
		if (x|eq)&swarHigh != 0 {
			break
		}
	}
	return i
}

// validUTF8 is utf8.ValidString, with the ASCII prefix of s (all of most English
// text) checked 128 bytes a step first: utf8.ValidString's own ASCII loop takes 8 bytes
// a step, ~3% of Encode's time on English. It also returns the length of a prefix of s
// without the byte c (0 for c ≥ 0x80).
func validUTF8(s string, c byte) (valid bool, noC int) {
	p := asciiPrefix(s, c)
	if c >= 0x80 {
		return validRest(s[p:]), 0
	}
	return validRest(s[p:]), p
}

// windowBlocks is how many blocks a classWindow classifies at a time (16 KiB of text):
// small enough that the masks stay in the L1 cache while the scanner reads them.
const windowBlocks = 256

// classWindow holds the class masks of a stretch of s, classified on demand as a
// scanner moves forward. It covers [base, limit); fill moves it to cover a position,
// keeping the block before it (the scanners look back at most a few bytes).
type classWindow struct {
	s           string
	base, limit int
	// end is where runEnd stops: len(s), or the end of the segment of s being split
	// (encodeSegment splits a segment of the text it classifies whole).
	end    int
	blocks [windowBlocks]classBlock
	tail   [64]byte // the last, partial block, zero-padded (zero bytes are "other")
}

func (w *classWindow) reset(s string) { w.s, w.base, w.limit, w.end = s, 0, 0, len(s) }

// ensure makes the window cover bytes i to i+15 (those below len(s)). The scanners call
// it at the start of each piece; they look at most a character before the piece's
// start, and at most three characters after it except through runEnd, which moves the
// window itself.
func (w *classWindow) ensure(i int) {
	if i+16 > w.limit && w.limit < len(w.s) {
		w.fill(i)
	}
}

// block returns the window's index of the block that starts at byte B (a multiple of
// 64 below len(s)), moving the window so that it holds the blocks before and after it
// too (where they exist).
func (w *classWindow) block(B int) int {
	if B+128 > w.limit && w.limit < len(w.s) || B < w.base+64 && B > 0 {
		w.fill(B)
	}
	return (B - w.base) >> 6
}

// fill classifies the window that starts one block before the block of byte p.
func (w *classWindow) fill(p int) {
	s := w.s
	first := max(p>>6-1, 0)
	nb := min(windowBlocks, (len(s)+63)>>6-first)
	base := first << 6
	full := nb
	if base+nb<<6 > len(s) {
		full--
	}
	if full > 0 {
		classifyBlocks(w.blocks[:full], unsafe.Slice(unsafe.StringData(s[base:]), full<<6))
	}
	if full < nb {
		n := copy(w.tail[:], s[base+full<<6:])
		clear(w.tail[n:])
		classifyBlocks(w.blocks[full:nb], w.tail[:])
	}
	w.base, w.limit = base, base+nb<<6
	w.fixMulti(nb)
	for k := range w.blocks[:nb] {
		b := &w.blocks[k]
		b[classOther] = ^(b[classLetter] | b[classNumber] | b[classSpace])
	}
}

// fixMulti gives the bytes of multi-byte characters in the first nb blocks the class
// of their character. It walks each block's marked bytes forward: a marked byte at or
// after the previous character's end starts a character, which it decodes in place
// (2, 3 or 4 bytes, with utf8's checks), classifies (runeClass) and marks in one OR,
// into the next block too where it crosses into it; a character that follows at once
// is decoded next, without a search of the mask. A byte that does not start a valid
// character (a continuation byte at the window's start, a character within 4 bytes of
// the end of s, or invalid UTF-8, which AppendEncodeValidInt32 may be given) goes to
// fixCharSlow, the standard library's decoding as before (fixMultiSlow in
// classify_test.go is the whole loop in that form, the twin this one is tested
// against).
func (w *classWindow) fixMulti(nb int) {
	s := w.s
	done := w.base // bytes before done are classified
	for bi := range nb {
		m := w.blocks[bi][blockMulti]
		start := w.base + bi<<6
		if done > start {
			if done-start >= 64 {
				continue
			}
			m &^= 1<<uint(done-start) - 1
		}
		b := &w.blocks[bi]
		for m != 0 {
			k := uint(bits.TrailingZeros64(m))
			// A run of multi-byte characters, one after the other.
			for {
				p := start + int(k)
				var r uint32
				n := uint(0)
				if p+4 <= len(s) {
					v := binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(s[p:]), 4))
					switch c0 := v & 0xFF; {
					case c0 < 0xE0:
						// 2 bytes: C2-DF, then a continuation byte.
						if c0 >= 0xC2 && v&0xC000 == 0x8000 {
							r, n = (c0&0x1F)<<6|v>>8&0x3F, 2
						}
					case c0 < 0xF0:
						// 3 bytes: not overlong (≥ U+0800), not a surrogate.
						if v&0xC0C000 == 0x808000 {
							r = (c0&0x0F)<<12 | (v>>8&0x3F)<<6 | v>>16&0x3F
							if r >= 0x800 && r&0xF800 != 0xD800 {
								n = 3
							}
						}
					case c0 < 0xF5:
						// 4 bytes: U+10000 to U+10FFFF.
						if v&0xC0C0C000 == 0x80808000 {
							r = (c0&0x07)<<18 | (v>>8&0x3F)<<12 | (v>>16&0x3F)<<6 | v>>24&0x3F
							if r-0x10000 < 0x100000 {
								n = 4
							}
						}
					}
				}
				if n == 0 {
					done = w.fixCharSlow(p)
					k = uint(done - start)
				} else {
					// An "other" character ORs its bits into b[classOther], the
					// multi mask, where they are already set (fill replaces it).
					cls := runeClass(rune(r)) & 3
					x := uint64(1)<<n - 1
					b[cls] |= x << k
					done = p + int(n)
					if k+n > 64 && bi+1 < nb {
						w.blocks[bi+1][cls] |= x >> (64 - k)
					}
					k += n
				}
				if k >= 64 || m>>k&1 == 0 {
					break
				}
			}
			if k >= 64 {
				break
			}
			m &^= 1<<k - 1
		}
	}
}

// fixCharSlow classifies the character that holds the marked byte p (decoded with the
// standard library from its first byte, up to three bytes back) and returns the end of
// the bytes it marked: past p even where invalid UTF-8 ends the character before p, or
// fixMulti would make no progress.
func (w *classWindow) fixCharSlow(p int) int {
	s := w.s
	q := p // the character's first byte: before p only at the window's start
	for q > 0 && p-q < utf8.UTFMax-1 && s[q]&0xC0 == 0x80 {
		q--
	}
	r, size := utf8.DecodeRuneInString(s[q:])
	done := max(q+size, p+1)
	w.setClass(p, min(done, w.limit), runeClass(r))
	return done
}

// setClass marks bytes [from, to) of the window (at most two blocks) as class cls.
func (w *classWindow) setClass(from, to int, cls uint8) {
	for from < to {
		bi := (from - w.base) >> 6
		lo := uint(from-w.base) & 63
		hi := min(uint(to-w.base-bi<<6), 64)
		m := (^uint64(0) >> (64 - (hi - lo))) << lo
		if cls != classOther {
			w.blocks[bi][cls&3] |= m
		}
		from = w.base + bi<<6 + int(hi)
	}
}

// class returns the class of the character holding byte i (< len(s), in the window:
// see ensure).
func (w *classWindow) class(i int) uint8 {
	b := &w.blocks[(i-w.base)>>6&(windowBlocks-1)]
	k := uint(i) & 63
	return uint8(b[classLetter]>>k&1 | (b[classNumber]>>k&1)<<1 | (b[classSpace]>>k&1)*3)
}

// runEnd returns the end of the run of characters of class cls that continues at byte
// i (≥ the window's start): the first byte at or after i of another class, or w.end.
// It moves the window as it goes.
func (w *classWindow) runEnd(i int, cls uint8) int {
	n := w.end
	for i < n {
		if i >= w.limit {
			w.fill(i)
		}
		// Bits shifted in from above are 0 ("in the run"): they stand for the next block.
		if out := ^w.blocks[(i-w.base)>>6&(windowBlocks-1)][cls&3] >> (uint(i) & 63); out != 0 {
			return min(i+bits.TrailingZeros64(out), n)
		}
		i = i | 63 + 1
	}
	return n
}

// charLen is the length of the UTF-8 character that starts at s[i] (valid UTF-8).
func charLen(s string, i int) int {
	switch c := s[i]; {
	case c < 0x80:
		return 1
	case c < 0xE0:
		return 2
	case c < 0xF0:
		return 3
	}
	return 4
}

// lastCharStart returns the start of the character that ends at byte k of s (k > 0).
func lastCharStart(s string, k int) int {
	k--
	for k > 0 && s[k]&0xC0 == 0x80 {
		k--
	}
	return k
}
