package tokenize

import "slices"

// BPE under tiktoken's semantics: a pair of adjacent parts of a piece merges when their
// bytes together are a token, at that token's rank, which is its id. As tiktoken does,
// the rank is looked up by the bytes (rankOf), not by the pair of ids: no table of
// pairs is built at load (for o200k one would hold 446,189 pairs, ~8 ms to build and
// 3 MB compressed in the binary), and the lookup costs what a pair-table lookup does
// (one probe of a table of the same size).

// rankOf returns the rank (= id) of the token whose bytes are p[a:b], or noRank.
func (t *Tokenizer) rankOf(p string, a, b int) uint32 {
	n := b - a
	if n <= 16 {
		// The bytes of a piece of valid UTF-8 always have a key (keyable); a token
		// without one cannot equal them.
		lo, hi := pieceKey(p, a, n)
		if v := t.whole.find(lo, hi, n); v != 0 {
			return uint32(v & idMask)
		}
		return noRank
	}
	if n > t.maxTokenByteLen {
		return noRank
	}
	if id, ok := t.longIDs[p[a:b]]; ok {
		return id
	}
	return noRank
}

// mergeRanksShort runs tiktoken's byte-pair merge on a short piece: parts are byte
// ranges of p, one per byte at first; the pair of lowest rank (leftmost first) merges
// until none can, rescanning the array of pair ranks after each merge.
func (t *Tokenizer) mergeRanksShort(st *encodeState, p string) []uint32 {
	n := len(p)
	starts := st.starts[:0] // part i is p[starts[i]:starts[i+1]]
	parts := st.parts[:0]   // its id
	for i := range n {
		starts = append(starts, int32(i))
		parts = append(parts, uint32(t.byteIDs[p[i]]))
	}
	starts = append(starts, int32(n))
	ranks := st.ranks[:0] // ranks[i]: of merging parts i and i+1
	bp := t.bytePairs()
	for i := 0; i+1 < n; i++ {
		ranks = append(ranks, bp.rank(p[i], p[i+1]))
	}
	for len(ranks) > 0 {
		best, bi := lowestRank(ranks)
		if bi < 0 {
			break
		}
		parts[bi] = best
		parts = append(parts[:bi+1], parts[bi+2:]...)
		starts = append(starts[:bi+1], starts[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi > 0 {
			ranks[bi-1] = t.rankOf(p, int(starts[bi-1]), int(starts[bi+1]))
		}
		if bi < len(ranks) {
			ranks[bi] = t.rankOf(p, int(starts[bi]), int(starts[bi+2]))
		}
	}
	keepScratch(&st.parts, parts)
	keepScratch(&st.ranks, ranks)
	keepScratch(&st.starts, starts)
	return parts
}

const (
	// rankBlock is the number of offsets whose lowest rank mergeRanksMedium keeps.
	rankBlock = 16
	// rankMediumMinLen: pieces longer than this (bytes) and up to heapThreshold go to
	// mergeRanksMedium (from 9 bytes, three CJK characters, it was ~8% faster than
	// from 25 on the cjk corpus, and the same on the others).
	rankMediumMinLen = 8
)

// mergeRanksMedium is mergeRanksShort for pieces of more than rankMediumMinLen bytes,
// with the same result (merges in the same order: the lowest rank first, the leftmost
// of equal ones), without its quadratic cost: the parts are a linked list over the
// piece's byte offsets (a merge unlinks one, no array is shifted), and the lowest rank
// of each block of rankBlock offsets is kept, so a merge scans the blocks' lowest ranks
// and one block instead of every rank.
//
// Performance note: text of CJK characters (3 bytes each, no spaces) is pieces of
// 20-150 bytes up to the next punctuation; mergeRanksShort's rescans and shifts made
// cl100k_base encode it at ~11 MB per CPU-second (tiktoken-rs: ~11), this ~15, and ~35
// starting from characters (charStarts; the cjk corpus of make bench, tools/cjkcorpus).
func (t *Tokenizer) mergeRanksMedium(st *encodeState, p string) []uint32 {
	n := len(p)
	st.mNext = slices.Grow(st.mNext[:0], n)[:n] // the offset after the part that starts at i
	st.mPrev = slices.Grow(st.mPrev[:0], n)[:n] // the offset of the part before it, -1
	st.mID = slices.Grow(st.mID[:0], n)[:n]     // the id of the part that starts at i
	st.mRank = slices.Grow(st.mRank[:0], n)[:n] // rank of merging it with the next part
	nb := (n + rankBlock - 1) / rankBlock
	st.mBlock = slices.Grow(st.mBlock[:0], nb)[:nb]
	next, prev, ids, ranks, blocks := st.mNext, st.mPrev, st.mID, st.mRank, st.mBlock
	t.charStarts(p, next, ids, ranks)
	bp := t.bytePairs()
	for i, h := 0, int32(-1); i < n; i = int(next[i]) {
		prev[i] = h
		h = int32(i)
		if j := int(next[i]); j < n {
			if k := int(next[j]); j == i+1 && k == j+1 {
				ranks[i] = bp.rank(p[i], p[j]) // two bytes
			} else {
				ranks[i] = t.rankOf(p, i, k)
			}
		}
	}
	for b := range blocks {
		blocks[b] = slices.Min(ranks[b*rankBlock : min((b+1)*rankBlock, n)])
	}
	for {
		best, bb := uint32(noRank), -1
		for b, r := range blocks {
			if r < best {
				best, bb = r, b
			}
		}
		if bb < 0 {
			break
		}
		i := bb * rankBlock
		for ranks[i] != best {
			i++
		}
		// The part at i takes in the next one, at j; the part before it is at h.
		j := next[i]
		k := next[j]
		next[i], ids[i] = k, best
		ri := uint32(noRank)
		if int(k) < n {
			prev[k] = int32(i)
			ri = t.rankOf(p, i, int(next[k]))
		}
		setRank(ranks, blocks, i, ri)
		setRank(ranks, blocks, int(j), noRank)
		if h := prev[i]; h >= 0 {
			setRank(ranks, blocks, int(h), t.rankOf(p, int(h), int(k)))
		}
	}
	parts := st.parts[:0]
	for i := 0; i < n; i = int(next[i]) {
		parts = append(parts, ids[i])
	}
	keepScratch(&st.parts, parts)
	return parts
}

// setRank sets ranks[i] to r and keeps blocks[i/rankBlock] the lowest rank of its block.
func setRank(ranks, blocks []uint32, i int, r uint32) {
	old := ranks[i]
	ranks[i] = r
	b := i / rankBlock
	switch {
	case r <= blocks[b]:
		blocks[b] = r
	case old == blocks[b]: // the lowest may have gone up
		blocks[b] = slices.Min(ranks[b*rankBlock : min((b+1)*rankBlock, len(ranks))])
	}
}
