package tokenize

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"gptkit/internal/hugemem"
)

// prefixTable finds the longest token taking part in the backtracking encoder
// (bpe_backtrack.go) that a text starts with at a position. It holds no table of token
// prefixes: the text's first two bytes give the lengths of the tokens taking part that
// start with them (lens, 128 KB, mostly in cache), and each such length, longest first,
// is looked up in the tokenizer's vocabulary table (vocabtable.go: its bit set answers
// most lengths that are no token, a probe the rest); the first token found that takes
// part is the answer. Tokens of more than 16 bytes (runs of one character, mostly) are
// found through a map of their prefixes.
//
// Performance note: a table of every prefix of up to 16 bytes of every token (4 MB for
// prefixes of 3-8 bytes and 1.5 MB for 9-16, GPT-2), walked one length at a time, cost a
// hashed lookup per byte of the token found plus one, most of them cache misses, and
// ~45 ms of building per process; before it, a trie walked node by node made each step's
// load wait for the one before. See docs/tokenizer-performance.md.
type prefixTable struct {
	// one[b]: the token of byte b or -1.
	one [256]int32
	// lens[b0 | b1<<8]: bit n-1 is set if a token of n bytes (2-16) taking part starts
	// with b0, b1; bit 0 if one of more than 16 bytes does.
	lens []uint16
	// lens4[prefix4Slot of the first four bytes]: bit n-1 is set if a token of n bytes
	// (4-16) taking part starts with those four bytes, or with four that share the slot.
	lens4 []uint16
	whole *vocabTable
	sizes []uint16 // by id: 0 for a token that takes no part (backtrack.sizes)
	// Prefixes of more than 16 bytes of the tokens longer than 16: the id of the token
	// the prefix is, or -1.
	more map[string]int32
}

// newPrefixTable builds the finder of the tokens ids (taking part, ids into vocab;
// whole holds every keyable token of up to 16 bytes).
func newPrefixTable(vocab *tokenStrings, ids []int, whole *vocabTable, sizes []uint16) *prefixTable {
	pt := &prefixTable{lens: hugemem.Make[uint16](1 << 16), lens4: hugemem.Make[uint16](1 << prefix4Bits), whole: whole, sizes: sizes, more: map[string]int32{}}
	for b := range pt.one {
		pt.one[b] = -1
	}
	for _, id := range ids {
		tok := vocab.at(id)
		switch n := len(tok); {
		case n == 1:
			pt.one[tok[0]] = int32(id)
		case n <= 16:
			pt.lens[uint16(tok[0])|uint16(tok[1])<<8] |= 1 << (n - 1)
			if n >= 4 {
				pt.lens4[prefix4Slot(binary.LittleEndian.Uint32([]byte(tok[:4])))] |= 1 << (n - 1)
			}
		default:
			pt.lens[uint16(tok[0])|uint16(tok[1])<<8] |= 1
			for k := 17; k < n; k++ {
				if _, ok := pt.more[tok[:k]]; !ok {
					pt.more[tok[:k]] = -1
				}
			}
			pt.more[tok] = int32(id)
		}
	}
	return pt
}

// longest returns the longest token taking part of at most limit bytes that p[pos:]
// starts with (-1 if none), or -2 if p holds a byte there that no pieceKey tells apart
// (0xF8-0xFF, never in UTF-8) where a token may end.
func (pt *prefixTable) longest(p string, pos, limit int) int32 {
	lim := min(len(p)-pos, limit)
	if lim < 2 {
		if lim < 1 {
			return -1
		}
		return pt.one[p[pos]]
	}
	m := uint32(pt.lens[uint16(p[pos])|uint16(p[pos+1])<<8])
	if m&1 != 0 && lim > 16 {
		if id := pt.longestMore(p, pos, lim); id >= 0 {
			return id
		}
	}
	m &= 1<<min(lim, 16) - 2 // lengths 2 to lim
	if m == 0 {
		return pt.one[p[pos]]
	}
	var w0, w1 uint64
	if pos+16 <= len(p) {
		b := unsafe.Slice(unsafe.StringData(p[pos:]), 16)
		w0, w1 = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	} else {
		w0, w1 = pieceKey(p, pos, len(p)-pos) // only the bytes of the rest are used
	}
	if m >= 1<<3 && lim >= 4 {
		m &= uint32(pt.lens4[prefix4Slot(uint32(w0))]) | (1<<3 - 1) // lengths 4-16 by four bytes
	}
	for m != 0 {
		n := bits.Len32(m) // bit n-1: length n
		m &^= 1 << (n - 1)
		var v uint64
		if n <= 8 {
			if n == 8 && w0>>56 >= 0xF8 {
				return -2
			}
			v = pt.whole.find(w0&loMask[n]|loMark[n], 0, n)
		} else {
			if n == 16 && w1>>56 >= 0xF8 {
				return -2
			}
			v = pt.whole.find(w0, w1&hiMask[n]|hiMark[n], n)
		}
		if v != 0 {
			if id := v & idMask; pt.sizes[id] != 0 {
				return int32(id)
			}
		}
	}
	return pt.one[p[pos]]
}

// prefix4Bits is the log2 of the number of slots of prefixTable.lens4 (GPT-2's tokens
// of 4-16 bytes start with ~20,000 distinct four bytes).
const prefix4Bits = 17

func prefix4Slot(b4 uint32) uint64 { return uint64(b4) * 0x9E3779B97F4A7C15 >> (64 - prefix4Bits) }

// longestMore returns the longest token of 17 to lim bytes that p[pos:] starts with,
// or -1, through the map.
func (pt *prefixTable) longestMore(p string, pos, lim int) int32 {
	best := int32(-1)
	for end := pos + 17; end <= pos+lim; end++ {
		id, ok := pt.more[p[pos:end]]
		if !ok {
			break
		}
		if id >= 0 {
			best = id
		}
	}
	return best
}
