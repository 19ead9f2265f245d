package tokenize

import (
	"sync/atomic"

	"gptkit/internal/hugemem"
)

// Under tiktoken's semantics a piece of CJK text (clauses of 3-byte characters without
// spaces) merges its characters' own bytes first, then the characters into words: most
// of mergeRanksMedium's merges, two lookups each, rebuild characters. charStarts lets it
// start from the characters instead, where that provably changes nothing:
//
// The merge loop takes the lowest rank of all adjacent pairs, each time. Say BPE on the
// bytes of a character c alone makes its parts (one token, or two) through merges of
// ranks up to M. Run on the bytes of a piece, as long as c is not yet in those parts one
// of c's own pairs (rank ≤ M) is there to be taken, so every merge taken meanwhile ranks
// ≤ M. Started from c's parts instead, the piece has pairs the bytes' run has only later
// or never: a part of c with the part beside it, and none of c's own. If every such pair
// ranks above M, none of them is taken before the bytes' run has made c's parts, so both
// runs take the same merges in the same order, less c's own, and are the same from
// there on. Those pairs make a token that ends with a proper prefix of c or starts with a
// proper suffix of c (c in two parts, or the bytes' run, where c's proper parts meet
// their neighbours), or, c in one part, a longer token that ends or starts with c. So
// c starts as its parts where the lowest rank of all those tokens (L: from the tables
// below, by the bytes on either side of c) is above M. (Ties cannot reorder anything:
// equal ranks are the same token at two places, two pairs that share no part.)
// Checked by TestMergeRanksMedium, TestCharStartsStraddling and FuzzMergeRanksMedium
// against mergeRanksShort, which starts from bytes, and by TestCharStartsWholeChar on
// rank files where a token that holds a whole character ranks below its merges.
//
// On the cjk corpus of make bench ~90% (cl100k_base) and ~95% (o200k_base) of the
// characters start as their parts.

// charTables are a tokenizer's lower bounds on the ranks of the tokens that would join
// a part of a character with bytes outside it, and the characters' own merges.
type charTables struct {
	// By two bytes x, y (x | y<<8): suf2, the lowest rank of the tokens (of two bytes or
	// more) that end with x, y; suf2Long, of those of three bytes or more whose
	// third-last byte is below 0xC0 (charStarts gives up where the byte before c is a
	// lead byte, so only these can end with that byte and c[:2]). pre2: the lowest rank
	// of the tokens that start with x, y; pre2Long, of those of three bytes or more whose
	// third byte is not a continuation byte (charStarts gives up where the byte after c
	// is one).
	suf2, suf2Long []uint32
	pre2, pre2Long []uint32
	// whole, by the code point of a 2- or 3-byte character: the lowest rank of the
	// tokens longer than the character that start or end with it.
	whole []uint32
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
// vocabulary; 1.25 MB of bounds and 512 KB of characters).
func (t *Tokenizer) charTab() *charTables {
	t.charOnce.Do(func() {
		ct := &charTables{chars: hugemem.Make[atomic.Uint64](1 << 16)}
		tabs := hugemem.Make[uint32](5 << 16)
		for i := range tabs {
			tabs[i] = noRank
		}
		ct.suf2, ct.suf2Long, ct.pre2, ct.pre2Long = tabs[:1<<16], tabs[1<<16:2<<16], tabs[2<<16:3<<16], tabs[3<<16:4<<16]
		ct.whole = tabs[4<<16:]
		low := func(tab []uint32, x, y byte, r uint32) {
			k := uint16(x) | uint16(y)<<8
			tab[k] = min(tab[k], r)
		}
		for id := range t.vocab.len() {
			tok := t.vocab.at(id)
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
			if size, cp := charAt(tok, 0); size > 0 && size < n {
				ct.whole[cp] = min(ct.whole[cp], r)
			}
			for size := 2; size <= 3 && size < n; size++ {
				if sz, cp := charAt(tok, n-size); sz == size {
					ct.whole[cp] = min(ct.whole[cp], r)
				}
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
// the offsets where a part starts; the others get ranks noRank, and their next and ids
// are left as they were, never read): the parts of each character for which that
// changes nothing (see above), one part a byte elsewhere.
func (t *Tokenizer) charStarts(p string, next []int32, ids, ranks []uint32) {
	ct := t.charTab()
	n := len(p)
	for i := 0; i < n; {
		b0 := p[i]
		next[i], ids[i], ranks[i] = int32(i+1), uint32(t.byteIDs[b0]), noRank
		size, cp := charAt(p, i)
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
		split := int(v >> charSplitShift & 3)
		if split == size { // c in one part: tokens longer than c that hold it whole
			lower = min(lower, ct.whole[cp])
		}
		if v&charMerges == 0 || uint32(v>>charMShift&idMask) >= lower {
			for k := i + 1; k < i+size; k++ {
				next[k], ids[k], ranks[k] = int32(k+1), uint32(t.byteIDs[p[k]]), noRank
			}
			i += size
			continue
		}
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

// charAt returns the length (2 or 3) and the code point of the character that starts
// at s[i], or 0 if none does: a lead byte and its continuation bytes, not an overlong
// 3-byte form (so that the code point names one byte sequence). Surrogates' byte forms
// count: they are bytes like others here.
func charAt(s string, i int) (int, rune) {
	b0 := s[i]
	switch {
	case b0 >= 0xC2 && b0 < 0xE0 && i+2 <= len(s) && s[i+1]&0xC0 == 0x80:
		return 2, rune(b0&0x1F)<<6 | rune(s[i+1]&0x3F)
	case b0 >= 0xE0 && b0 < 0xF0 && i+3 <= len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 && (b0 != 0xE0 || s[i+1] >= 0xA0):
		return 3, rune(b0&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
	}
	return 0, 0
}
