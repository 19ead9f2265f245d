package tokenize

import (
	"sync/atomic"
)

// Under tiktoken's semantics a piece of CJK text (clauses of 3-byte characters without
// spaces) merges its characters' own bytes first, then the characters into words: most
// of mergeRanksMedium's merges, two lookups each, rebuild characters. charStarts lets it
// start from the characters instead, where that provably changes nothing:
//
// The merge loop takes the lowest rank of all adjacent pairs, each time. Say BPE on the
// bytes of a character c alone makes its parts (one token, or two) through merges of
// ranks up to M. In a piece, the only merges that could interleave with those and
// change them are those that join a proper part of c with bytes outside it: they make
// a token that ends with a proper prefix of c (c[:1], c[:2]) or starts with a proper
// suffix (c[2:], c[1:]). If every such token has a rank above M (L, a lower bound from
// the tables below and the bytes on either side of c), the loop has merged c into its
// parts before any of them can be a pair, and afterwards no pair holds a proper part
// of c. The other merges (elsewhere in the piece) touch other bytes, so starting from
// c's parts gives the same merges in the same order, less c's own. Ranks are token ids,
// distinct, so no tie can reorder them. Checked by TestMergeRanksMedium against
// mergeRanksShort, which starts from bytes.
//
// On the cjk corpus of make bench ~90% (cl100k_base) and ~95% (o200k_base) of the
// characters start as their parts.

// charTables are a tokenizer's lower bounds on the ranks of tokens that would join a
// proper part of a character with bytes outside it, by two bytes (x | y<<8), and the
// characters' own merges.
type charTables struct {
	// suf2: the lowest rank of the tokens (of two bytes or more) that end with x, y;
	// suf2Long: of those of three bytes or more whose third-last byte is not a UTF-8
	// lead byte (it may stand before a character: tokens X+c[:2], X ending in it).
	suf2, suf2Long []uint32
	// pre2: the lowest rank of the tokens that start with x, y; pre2Long: of those of
	// three bytes or more whose third byte is not a continuation byte (c[1:]+Y).
	pre2, pre2Long []uint32
	// chars holds, by the code point of a 2- or 3-byte character (below U+10000), BPE
	// of its bytes alone: 0 not yet computed, else charKnown and, if it merges, the
	// charMerges bit, the ids of its parts (id0, id1: idMask if one), the length in
	// bytes of the first part (charSplitShift) and the highest rank merged (charMShift).
	chars []atomic.Uint64
}

const (
	charKnown      = 1 << 63
	charMerges     = 1 << 62
	charSplitShift = 60
	charMShift     = 40
)

// charTab returns t's charTables, built on the first call (~1-3 ms: a pass over the
// vocabulary).
func (t *Tokenizer) charTab() *charTables {
	t.charOnce.Do(func() {
		ct := &charTables{chars: make([]atomic.Uint64, 1<<16)}
		tabs := make([]uint32, 4<<16)
		for i := range tabs {
			tabs[i] = noRank
		}
		ct.suf2, ct.suf2Long, ct.pre2, ct.pre2Long = tabs[:1<<16], tabs[1<<16:2<<16], tabs[2<<16:3<<16], tabs[3<<16:]
		low := func(tab []uint32, x, y byte, r uint32) {
			k := uint16(x) | uint16(y)<<8
			tab[k] = min(tab[k], r)
		}
		for id, tok := range t.vocab {
			n, r := len(tok), uint32(id) // the rank is the id
			if n < 2 {
				continue
			}
			low(ct.suf2, tok[n-2], tok[n-1], r)
			low(ct.pre2, tok[0], tok[1], r)
			if n >= 3 && tok[n-3] < 0xC0 {
				low(ct.suf2Long, tok[n-2], tok[n-1], r)
			}
			if n >= 3 && tok[2]&0xC0 != 0x80 {
				low(ct.pre2Long, tok[0], tok[1], r)
			}
		}
		t.charTabs = ct
	})
	return t.charTabs
}

// charInfo returns what chars holds for the character c (2 or 3 bytes, lead byte then
// continuation bytes, no overlong 3-byte form) whose code point is cp, computing it on
// the first call.
func (t *Tokenizer) charInfo(ct *charTables, c string, cp rune) uint64 {
	if v := ct.chars[cp].Load(); v != 0 {
		return v
	}
	v := uint64(charKnown)
	bp := t.bytePairs()
	pack := func(id0, id1 uint32, split int, m uint32) uint64 {
		return charKnown | charMerges | uint64(split)<<charSplitShift | uint64(m)<<charMShift | uint64(id1)<<idBits | uint64(id0)
	}
	if len(c) == 2 {
		if r := bp.rank(c[0], c[1]); r != noRank {
			v = pack(r, idMask, 2, r)
		}
	} else if r1, r2 := bp.rank(c[0], c[1]), bp.rank(c[1], c[2]); r1 != noRank || r2 != noRank {
		r3 := t.rankOf(c, 0, 3) // of the two parts, once one pair has merged
		first := min(r1, r2)    // r1 ≠ r2: c[:2] and c[1:] are different tokens
		switch {
		case r3 != noRank:
			v = pack(r3, idMask, 3, max(first, r3))
		case r1 < r2:
			v = pack(r1, uint32(t.byteIDs[c[2]]), 2, r1)
		default:
			v = pack(uint32(t.byteIDs[c[0]]), r2, 1, r2)
		}
	}
	ct.chars[cp].Store(v) // the same value whoever stores it
	return v
}

// charStarts sets up mergeRanksMedium's parts of p (next and ids by byte offset, for
// the offsets where a part starts; the others get ranks noRank): the parts of each
// character for which that changes nothing (see above), one part a byte elsewhere.
func (t *Tokenizer) charStarts(p string, next []int32, ids, ranks []uint32) {
	ct := t.charTab()
	n := len(p)
	for i := 0; i < n; {
		b0 := p[i]
		next[i], ids[i], ranks[i] = int32(i+1), uint32(t.byteIDs[b0]), noRank
		size := 0
		var cp rune
		switch {
		case b0 >= 0xC2 && b0 < 0xE0 && i+2 <= n && p[i+1]&0xC0 == 0x80:
			size, cp = 2, rune(b0&0x1F)<<6|rune(p[i+1]&0x3F)
		case b0 >= 0xE0 && b0 < 0xF0 && i+3 <= n && p[i+1]&0xC0 == 0x80 && p[i+2]&0xC0 == 0x80 && (b0 != 0xE0 || p[i+1] >= 0xA0):
			size, cp = 3, rune(b0&0x0F)<<12|rune(p[i+1]&0x3F)<<6|rune(p[i+2]&0x3F)
		}
		if size == 0 {
			i++
			continue
		}
		v := t.charInfo(ct, p[i:i+size], cp)
		lower := uint32(noRank) // L
		if i > 0 {
			a := p[i-1]
			if a >= 0xC0 { // invalid UTF-8 around c: no bound from these tables
				lower = 0
			}
			lower = min(lower, ct.suf2[uint16(a)|uint16(b0)<<8])
			if size == 3 {
				lower = min(lower, ct.suf2Long[uint16(b0)|uint16(p[i+1])<<8])
			}
		}
		if e := i + size; e < n {
			d := p[e]
			if d&0xC0 == 0x80 {
				lower = 0
			}
			lower = min(lower, ct.pre2[uint16(p[e-1])|uint16(d)<<8])
			if size == 3 {
				lower = min(lower, ct.pre2Long[uint16(p[e-2])|uint16(p[e-1])<<8])
			}
		}
		if v&charMerges == 0 || uint32(v>>charMShift&idMask) >= lower {
			for k := i + 1; k < i+size; k++ {
				next[k], ids[k], ranks[k] = int32(k+1), uint32(t.byteIDs[p[k]]), noRank
			}
			i += size
			continue
		}
		split := int(v >> charSplitShift & 3)
		next[i], ids[i] = int32(i+split), uint32(v&idMask)
		for k := i + 1; k < i+size; k++ {
			ranks[k] = noRank // not a part's start
		}
		if split < size {
			next[i+split], ids[i+split] = int32(i+size), uint32(v>>idBits&idMask)
		}
		i += size
	}
}
