package tokenize

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Cutting long pieces where no token can span (GPT-2, GPT-NeoX, cl100k_base). A clause
// of Chinese or Japanese without punctuation is one pre-tokenized piece of 12-120 bytes
// under GPT-2's pattern (` ?\p{L}+`), which the backtracking encoder searched token by
// token at ~22 ns a byte, where English words come from the caches at ~2.5. But BPE never makes a symbol that is not a token of the
// vocabulary, so where no token of the vocabulary can lie across a position of the
// piece (the bytes on both sides of it, as far as any token reaches, are no token's),
// no merge ever joins the two sides, each side merges as it would alone, and the
// piece's ids are those of its parts, one after the other. Each part (a character or
// two of Chinese, mostly) is then a short piece like any other: the front cache, the
// vocabulary table, the short merge loops.
//
// A token lies across the position between bytes i-1 and i of the piece if it starts at
// i-1 (its first two bytes are p[i-1:i+1]), ends at i+1 (its last two bytes are those),
// or reaches at least two bytes each side (it holds the four bytes p[i-2:i+2]). So a
// position is safe if that pair of bytes is neither the first two nor the last two
// bytes of any token (edge, a bit per pair: 8 KB) and those four bytes are in no token
// (inner, a bit per hash of each four bytes found in a token across such a position: a
// bit hit by another's hash only makes a safe position look unsafe). Only positions
// next to a multi-byte character are tried: runs of ASCII letters and digits, which
// tokens span everywhere, cost a scan for bytes of 0x80 or more. Measured (4 MB of the
// cjk bench corpus, positions between two multi-byte characters): 97.8% safe under
// GPT-2, 98.8% under NeoX, 91.8% under cl100k_base, 74.8% under o200k_base.
//
// A part is encoded as a piece, so it must get the ids BPE's merges give it: where a
// piece found whole in the vocabulary is taken as that token (tiktoken; HF's
// ignore_merges), a part that is a token the merges do not rebuild would not. HF merges
// lists without ignore_merges look pieces up whole only where the merges rebuild them
// (wholeBad). For tiktoken's vocabularies the cuts are only between two multi-byte
// characters, so every part holds a byte of 0x80 or more, and the splitter is built only
// if the merges rebuild every token with such a byte: known from the compiled form of a
// named tokenizer (MarshalCompiled checks it: cl100k_base's 4,906 such tokens, o200k_base's
// 71,035), else checked when it is built for vocabularies of at most ranksCheckMax of them
// (~2 µs each). HF's ignore_merges (Llama 3): not cut. TestSafeSplit checks the cut pieces' ids against the
// reference encoder.
type safeSplitter struct {
	edge  []uint64 // bit b0 | b1<<8: some token starts or ends with bytes b0, b1
	inner []uint64 // bit innerHash(4 bytes): four bytes across a position that is tried, in some token
	shift uint32   // 32 - log2 of inner's bits
	// bothMulti: positions are tried only between two multi-byte characters
	// (tiktoken's vocabularies).
	bothMulti bool
}

// ranksCheckMax is the most tokens with a byte of 0x80 or more that newSafeSplitter
// checks the merges rebuild, for a vocabulary that takes pieces whole (~2 µs each).
const ranksCheckMax = 16 << 10

// innerHash maps four bytes to a bit of sp.inner.
func (sp *safeSplitter) innerHash(w uint32) uint32 { return w * 0x9E3779B1 >> sp.shift }

// triedAt reports whether a position between bytes b0 and b1 may be tried: between two
// characters, one of them multi-byte. Only these: inner holds the four bytes of tokens
// across these alone, so a position inside a character (invalid UTF-8 handed on as
// valid) is never taken for safe.
func triedAt(b0, b1 byte) bool { return b1&0xC0 != 0x80 && (b1 >= 0x80 || b0 >= 0x80) }

// newSafeSplitter builds the bit sets of t's vocabulary, or returns nil where cutting
// would change ids (see above).
func newSafeSplitter(t *Tokenizer) *safeSplitter {
	if t.ignoreMerges || t.kind != KindBPE {
		return nil
	}
	sp := &safeSplitter{edge: make([]uint64, 1<<16/64)}
	if t.mergeSemantics == "ranks" {
		if !t.highRebuilt && !t.mergesRebuildHighTokens(ranksCheckMax) {
			return nil
		}
		sp.bothMulti = true
	}
	// Of inner's four bytes only those whose middle is a position next tries can
	// match: GPT-2 has 85 such runs of four bytes in its tokens, NeoX 610. inner has
	// 64 bits for each (a bit hit by another's hash makes ~1.5% of safe positions
	// look unsafe), 4 Kbit at least.
	var inner []uint32
	for id := range t.vocab.len() {
		tok := t.vocab.at(id)
		n := len(tok)
		if n < 2 {
			continue
		}
		for _, b := range []uint16{uint16(tok[0]) | uint16(tok[1])<<8, uint16(tok[n-2]) | uint16(tok[n-1])<<8} {
			sp.edge[b>>6] |= 1 << (b & 63)
		}
		for i := 0; i+4 <= n; i++ {
			if triedAt(tok[i+1], tok[i+2]) {
				inner = append(inner, binary.LittleEndian.Uint32([]byte(tok[i:i+4])))
			}
		}
	}
	bits := uint32(12)
	for bits < 24 && 1<<bits < 64*len(inner) {
		bits++
	}
	sp.shift = 32 - bits
	sp.inner = make([]uint64, 1<<bits/64)
	for _, w := range inner {
		h := sp.innerHash(w)
		sp.inner[h>>6] |= 1 << (h & 63)
	}
	return sp
}

// appendCuts appends to ends the safe positions of p, in order: the positions i
// (2 ≤ i ≤ len(p)-2) between two characters, one of them multi-byte, that no token can
// lie across.
func (sp *safeSplitter) appendCuts(ends []int, p string) []int {
	last := len(p) - 2
	i := 0 // a character's first byte (a byte, in invalid UTF-8: cutting anywhere no
	// token lies across is exact), moved a character at a time
	for i < 2 && i < len(p) {
		i += charLen(p, i)
	}
	for i <= last {
		// Skip ASCII seven characters at a time: a position between two ASCII
		// bytes is not tried.
		for i+7 <= len(p) && binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(p[i-1:]), 8))&0x8080808080808080 == 0 {
			i += 7
		}
		if i > last {
			break
		}
		c, prev := p[i], p[i-1]
		if triedAt(prev, c) && (!sp.bothMulti || c >= 0x80 && prev >= 0x80) {
			b := uint16(prev) | uint16(c)<<8
			h := sp.innerHash(binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(p[i-2:]), 4)))
			if sp.edge[b>>6]&(1<<(b&63))|sp.inner[h>>6]&(1<<(h&63)) == 0 {
				ends = append(ends, i)
			}
		}
		i += charLen(p, i)
	}
	return ends
}

// mergesRebuildHighTokens reports whether t's merges rebuild from its own bytes every
// token of two bytes or more with a byte of 0x80 or more, checking at most limit of
// them (false if there are more; limit 0: all).
func (t *Tokenizer) mergesRebuildHighTokens(limit int) bool {
	var ids []int
	for id := range t.vocab.len() {
		tok := t.vocab.at(id)
		if len(tok) >= 2 && strings.IndexFunc(tok, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0 {
			if ids = append(ids, id); limit > 0 && len(ids) > limit {
				return false
			}
		}
	}
	st := t.getState()
	defer t.putState(st)
	for _, id := range ids {
		if parts := t.mergeSmall(st, t.vocab.at(id)); len(parts) != 1 || parts[0] != uint32(id) {
			return false
		}
	}
	return true
}

// safeSplits returns t's safeSplitter, built on first use (nil where pieces are not
// cut).
func (t *Tokenizer) safeSplits() *safeSplitter {
	t.safeSplitOnce.Do(func() { t.safeSplit = newSafeSplitter(t) })
	return t.safeSplit
}

// encodeCut appends the ids of the long piece p cut at its safe positions, and reports
// whether it had one (if not, it appended nothing). The parts go through the hot loop
// as the pieces of a segment do (encodeSegment): most are in the front cache.
func encodeCut[T tokenID](t *Tokenizer, st *encodeState, sp *safeSplitter, p string, dst []T) ([]T, bool) {
	ends := sp.appendCuts(st.cutEnds[:0], p)
	if len(ends) == 0 {
		keepScratch(&st.cutEnds, ends)
		return dst, false
	}
	ends = append(ends, len(p))
	dst = encodePieces(t, st, p, st.readable(p), 0, ends, true, dst)
	keepScratch(&st.cutEnds, ends)
	return dst, true
}
