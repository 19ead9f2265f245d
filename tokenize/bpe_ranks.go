package tokenize

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
	st.parts, st.ranks, st.starts = parts, ranks, starts
	return parts
}
