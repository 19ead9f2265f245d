package tokenize

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"gptkit/internal/hugemem"
)

// The encoder of long pieces under pair-rank semantics (HF merges lists): a 1 MB run of
// letters or digits is one piece, and the merge loops (bpe.go) spend 25-80 ns a byte on
// it, a cache miss per queued pair. This one walks the piece once, left to right, in
// the manner of the backtracking encoder of GitHub's rust-gems `bpe` crate (its README
// explains the idea; no code of it is used here):
//
//   - BPE's result is the one sequence of tokens that covers the piece and whose every
//     adjacent pair is compatible: BPE run on the bytes of the two tokens alone gives
//     exactly those two tokens (compatible). So the tokens can be found greedily: at
//     each position take the longest token the vocabulary has there (prefixtable.go), or
//     the next shorter one while the pair it makes with the previous token is not
//     compatible or the position after it is known to lead nowhere; when no token fits,
//     step back one token and mark the position as leading nowhere (it can lead nowhere
//     whatever the previous token: the prefix of a piece has one BPE encoding).
//   - Whether a pair is compatible is decided from the merge that makes each token (its
//     canonical split: the last merge BPE does on the token's own bytes), undoing the
//     later of the two merges at a time, as BPE's merges would have happened backwards,
//     and checking that the pair across the boundary could not have merged first (a
//     lower rank; the same rank and left of the merge undone on the right, as BPE takes
//     the leftmost). A few pair-table lookups; answers are kept per goroutine (btState).
//   - Only tokens that BPE builds from their own bytes take part (the others never
//     appear in BPE's output), and it needs what trained vocabularies give: merges in
//     non-decreasing rank order (monotone), each token made by one merge. A tokenizer
//     without them keeps mergeLong (newBacktrack returns nil), and so does a piece with
//     a byte the vocabulary lacks (NeoX has none for 0xC0, 0xC1, 0xF5-0xFF, which valid
//     UTF-8 never holds).
//
// Cost: per token, a longest-token lookup (a few bits of the vocabulary table's bit set
// and a probe of the table; prefixtable.go), a compatibility check per token tried, and
// a step back every few tokens; no queue, no heap. It is built on a tokenizer's first
// long piece (~6 ms and ~1.4 MB for GPT-2 and NeoX, BenchmarkNewBacktrack), not at load;
// each goroutine's state adds ~1.5 MB of caches then (btState).
// FuzzBacktrackMatchesReference and TestBacktrack check it against the reference's BPE.

type backtrack struct {
	toks []btToken // by id
	// sizes[id] is the length in bytes of a token taking part, 0 for one that takes no
	// part: what the search reads of every token it tries, 2 bytes a token (~100 KB for
	// GPT-2, which a core's L2 keeps; toks, 600 KB, it does not: read from toks, the
	// sizes cost random digits a third of their speed).
	sizes    []uint16
	shorter  []int32      // by id: the longest token taking part that is a proper prefix, or -1
	prefixes *prefixTable // finds the longest token taking part at a position
	merges   *pairTable
	digits   *digitTokens // the digit-only tokens, for runs of digits (bpe_digits.go), or nil
}

// btToken is what compatible needs of a token, in one place (12 bytes).
type btToken struct {
	rank        int32  // of the merge that makes it; -1: a byte's token; -2: takes no part
	left, right uint32 // the canonical split (tokens made by a merge)
}

// btHot is the number of tokens whose pairs btState keeps the answers of compatible for
// (btHot² × 2 bits); btCacheBits the log2 of the number of other pairs it keeps.
const (
	btHot       = 1024
	btCacheBits = 18
	btCacheSize = 1 << btCacheBits
	btColdLimit = 1 << 16
	btOffCount  = 1 << 18
	// btLongestBits is the log2 of the number of slots of btState.longest.
	btLongestBits = 14
)

// newBacktrack builds the backtracking encoder of t, or returns nil if t's vocabulary
// lacks what it needs (see above).
func newBacktrack(t *Tokenizer) *backtrack {
	if t.mergeSemantics != "pairs" || t.merges == nil || !t.monotone || t.vocab.len() > idMask+1 {
		return nil
	}
	n := t.vocab.len()
	bt := &backtrack{toks: hugemem.Make[btToken](n), shorter: hugemem.Make[int32](n), merges: t.merges}
	for id := range bt.toks {
		bt.toks[id] = btToken{rank: -2}
	}
	for _, id := range t.byteIDs {
		if id >= 0 {
			bt.toks[id].rank = -1
		}
	}
	// Each token is made by at most one merge, and not a byte's token. The ranks have
	// holes where a merges list repeats a pair: there the merge made is id 0 from left 0,
	// which no merge can be (a merge's bytes are longer than its left token's).
	pt := t.merges
	made := make([]bool, n)
	for r, id := range pt.mergedByRank {
		if id == 0 && pt.leftByRank[r] == 0 {
			continue
		}
		if made[id] || bt.toks[id].rank == -1 {
			return nil // made by two merges, or a byte's token made by one
		}
		made[id] = true
	}
	// A token made by a merge takes part if BPE rebuilds it from its own bytes
	// (findUnreachableTokens, computed at load or compiled in): with merges in rank
	// order and one merge per token, exactly when both halves take part and are
	// compatible (TestBacktrack checks that the two agree). Without wholeBad (HF
	// ignore_merges) it is decided by compatible, in rank order.
	byCompat := t.ignoreMerges
	for r, id := range pt.mergedByRank {
		if !made[id] || id == 0 && pt.leftByRank[r] == 0 {
			continue
		}
		left, right := pt.leftByRank[r], pt.rightByRank[r]
		if byCompat {
			if bt.toks[left].rank < -1 || bt.toks[right].rank < -1 || !bt.compatible(left, right, 0) {
				continue
			}
		} else if t.wholeBad != nil && int(id) < len(t.wholeBad) && t.wholeBad[id] {
			continue
		}
		tk := &bt.toks[id]
		tk.rank, tk.left, tk.right = int32(r), left, right
	}
	var ids []int
	bt.sizes = hugemem.Make[uint16](n)
	for id, tk := range bt.toks {
		if tk.rank >= -1 {
			if len(t.vocab.at(id)) > 0xFFFF {
				return nil
			}
			ids = append(ids, id)
			bt.sizes[id] = uint16(len(t.vocab.at(id)))
		}
	}
	bt.prefixes = newPrefixTable(&t.vocab, ids, t.whole, bt.sizes)
	for id := range bt.shorter {
		bt.shorter[id] = -1
	}
	for _, id := range ids {
		tok := t.vocab.at(id)
		if s := bt.prefixes.longest(tok, 0, len(tok)-1); s >= 0 {
			bt.shorter[id] = s
		}
	}
	bt.digits = newDigitTokens(t, bt)
	return bt
}

// compatible reports whether BPE on the bytes of tokens a and b gives a, b: going back
// through the merges that made them, later first, no pair across the boundary merges
// at a rank below limit (limit 0 skips the check of a, b themselves: a token's split).
func (bt *backtrack) compatible(a, b uint32, limit uint32) bool {
	for {
		if bt.merges.get(a, b) < limit {
			return false
		}
		ta, tb := &bt.toks[a], &bt.toks[b]
		switch {
		case ta.rank > tb.rank:
			limit, a = uint32(ta.rank), ta.right
		case tb.rank >= 0:
			limit, b = uint32(tb.rank)+1, tb.left
		default:
			return true
		}
	}
}

// btState is the per-goroutine scratch of backtrack.encode.
type btState struct {
	dead []uint64 // a bit per position of the piece: no encoding of the rest starts there
	// Answers of compatible, kept from piece to piece (a pair's answer never changes):
	// for pairs of up to btHot tokens (hot: their index + 1 by id, 0: none; hotIDs the
	// ids given one), two bits a pair in pairs (bit 1: known, bit 0: compatible); for
	// other pairs, and for hot pairs not yet in pairs, in cache (compatibleCached).
	// cold counts the answers computed for pairs without an index, warm those found in
	// pairs: at btColdLimit cold ones, if they are over four times the warm ones (many
	// more tokens than btHot take turns: glued English letters), pairs is cleared and
	// left alone for the next off (btOffCount) answers, then the hot tokens are chosen
	// again (the next ones met: the ~1,000 tokens of random digits, say).
	hot             []uint16
	hotIDs          []uint32
	pairs           []uint64
	cold, warm, off int
	cache           []uint32
	// The longest token at a position whose first two bytes start tokens of at most 4
	// bytes (random digits: 2-4), by those bytes (longestAt).
	longest []btLongestSlot
	digits  digitState // encodeDigits' scratch
}

type btLongestSlot struct {
	key uint32 // the text's first n bytes, n the longest token its first two bytes start
	val uint32 // the token's id + 2 (-1: none); 0: an empty slot
}

// longestAt is bt.prefixes.longest(p, pos, len(p)) through st's cache of the answers
// that depend on at most 4 bytes of the text. (At 8, letters of other scripts, whose
// first two bytes start tokens of 5-8 bytes, missed it more often than not.)
func (bt *backtrack) longestAt(st *btState, p string, pos int) int32 {
	if pos+4 <= len(p) {
		m := bt.prefixes.lens[uint16(p[pos])|uint16(p[pos+1])<<8]
		if m != 0 && m < 1<<4 && m&1 == 0 {
			// Tokens of 2 to n bytes start with those two bytes (n from them, so
			// the first n bytes tell the answer, and the key is exact).
			n := bits.Len16(m)
			key := binary.LittleEndian.Uint32(unsafe.Slice(unsafe.StringData(p[pos:]), 4)) & uint32(loMask[n])
			sl := &st.longest[uint64(key)*0x9E3779B97F4A7C15>>(64-btLongestBits)]
			if sl.key == key && sl.val != 0 {
				return int32(sl.val) - 2
			}
			id := bt.prefixes.longest(p, pos, len(p))
			if id >= -1 {
				*sl = btLongestSlot{key, uint32(id + 2)}
			}
			return id
		}
	}
	return bt.prefixes.longest(p, pos, len(p))
}

// compatibleCached is compatible(a, b, noRank) through st's caches.
//
// st.cache is direct-mapped, 4 bytes a slot: the pair's 40 bits (a<<20 | b: ids are
// below 2^20) times an odd constant, modulo 2^40, a one-to-one map; its top 18 bits
// choose the slot and the other 22 are kept in it, so a slot names its pair exactly, in
// half the memory of the whole key. 1 MB: glued English letters meet ~250,000 distinct
// pairs a MB, and 2^18 slots made them 12% faster than 2^16 on a 2 MB L2 (2^19, 2 MB:
// 18%), the other inputs and the mixed corpus unchanged (session s44; on a 512 KB L2,
// 2^17 slots had been no faster than 2^16).
//
// Pairs of hot tokens are looked up in st.pairs first (2 bits a pair, by the tokens'
// indexes: ~1,000 hot tokens' pairs in ~256 KB, the pairs of the first few hundred in
// a corner of it), which random digits, say, find in cache where the slots of cache
// are spread over all of it: +30-55% on them, +10-15% on glued letters.
func (bt *backtrack) compatibleCached(st *btState, a, b uint32) bool {
	if st.off == 0 {
		if ha, hb := st.hot[a], st.hot[b]; ha != 0 && hb != 0 {
			i := uint(ha-1)*btHot + uint(hb-1)
			if v := st.pairs[i>>5] >> (i & 31 * 2) & 3; v != 0 {
				st.warm++
				return v == 3
			}
		}
	}
	x := (uint64(a)<<idBits | uint64(b)) * btCacheMul & (1<<(2*idBits) - 1)
	i, tag := x>>(2*idBits-btCacheBits), uint32(x&(1<<(2*idBits-btCacheBits)-1))<<2|2
	if s := st.cache[i]; s&^1 == tag {
		return s&1 != 0
	}
	ok := bt.compatibleHot(st, a, b)
	if ok {
		tag |= 1
	}
	st.cache[i] = tag
	return ok
}

// btCacheMul is odd: multiplying by it modulo 2^40 maps pairs one to one.
const btCacheMul = 0x9E3779B97F4A7C15

// compatibleHot is compatible(a, b, noRank) through st's pairs of hot tokens.
func (bt *backtrack) compatibleHot(st *btState, a, b uint32) bool {
	if st.off > 0 {
		st.off--
		return bt.compatible(a, b, noRank)
	}
	ha, hb := st.hot[a], st.hot[b]
	if ha == 0 {
		ha = st.addHot(a)
	}
	if hb == 0 {
		hb = st.addHot(b)
	}
	if ha == 0 || hb == 0 {
		if st.cold++; st.cold == btColdLimit {
			if st.cold > 4*st.warm {
				// The pairs met are mostly of other tokens: choose again, after
				// a while without.
				st.resetHot()
				st.off = btOffCount
			}
			st.cold, st.warm = 0, 0
		}
		return bt.compatible(a, b, noRank)
	}
	i := uint(ha-1)*btHot + uint(hb-1)
	w, sh := &st.pairs[i>>5], i&31*2
	if v := *w >> sh & 3; v != 0 {
		st.warm++
		return v == 3
	}
	ok := bt.compatible(a, b, noRank)
	v := uint64(2)
	if ok {
		v = 3
	}
	*w |= v << sh
	return ok
}

// addHot gives id the next index of st's pairs, if one is left (0 if not).
func (st *btState) addHot(id uint32) uint16 {
	if len(st.hotIDs) == btHot {
		return 0
	}
	st.hotIDs = append(st.hotIDs, id)
	st.hot[id] = uint16(len(st.hotIDs))
	return uint16(len(st.hotIDs))
}

// resetHot forgets the hot tokens and their pairs' answers (~15 µs; btColdLimit
// answers computed cost ~100 times that).
func (st *btState) resetHot() {
	for _, id := range st.hotIDs {
		st.hot[id] = 0
	}
	st.hotIDs = st.hotIDs[:0]
	clear(st.pairs)
}

// encode appends the BPE encoding of p to out. ok is false if p holds a byte the
// vocabulary lacks, or if the search ran out of tokens, which the vocabulary's checks in
// newBacktrack rule out (the caller then merges p the other way).
func (bt *backtrack) encode(st *btState, p string, out []uint32) (_ []uint32, ok bool) {
	n := len(p)
	if n == 0 {
		return out, true
	}
	if n >= digitRunMin && bt.digits != nil && allDigits(p) {
		if out, ok := bt.encodeDigits(st, p, out); ok {
			return out, true
		}
	}
	words := n/64 + 1
	if cap(st.dead) < words {
		st.dead = make([]uint64, words)
	}
	dead := st.dead[:words]
	clear(dead)
	if st.cache == nil {
		st.cache = hugemem.Make[uint32](btCacheSize)
		st.hot = hugemem.Make[uint16](len(bt.toks))
		st.hotIDs = make([]uint32, 0, btHot)
		st.longest = hugemem.Make[btLongestSlot](1 << btLongestBits)
		st.pairs = hugemem.Make[uint64](btHot * btHot / 32)
	}
	base := len(out)
	pos := 0
	next := bt.longestAt(st, p, 0)
	for {
		if next < 0 {
			return out, false
		}
		tok := next
		last := int32(-1)
		if len(out) > base {
			last = int32(out[len(out)-1])
		}
		for {
			end := pos + int(bt.sizes[tok])
			if dead[end>>6]&(1<<(end&63)) == 0 && (last < 0 || bt.compatibleCached(st, uint32(last), uint32(tok))) {
				out = append(out, uint32(tok))
				pos = end
				if pos == n {
					return out, true
				}
				next = bt.longestAt(st, p, pos)
				break
			}
			if tok = bt.shorter[tok]; tok < 0 {
				// Nothing fits at pos after last: step back.
				if last < 0 {
					return out, false
				}
				dead[pos>>6] |= 1 << (pos & 63)
				out = out[:len(out)-1]
				pos -= int(bt.sizes[last])
				next = last
				break
			}
		}
	}
}

// reachable reports whether id takes part in the backtracking encoder (a byte's token,
// or one BPE builds from its own bytes), for tests.
func (bt *backtrack) reachable(id int) bool { return bt.toks[id].rank >= -1 }
