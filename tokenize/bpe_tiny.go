package tokenize

// mergeTinyNotToken is BPE (pair-rank semantics) of a piece of two to four bytes that
// the vocabulary table has just said BPE does not build whole: the piece is no token,
// or a token its merges do not rebuild (wholeBad). Either way BPE leaves it in two
// tokens or more, so the merge that would join the last two is never looked up:
//
//   - two bytes: the two byte tokens, no lookup at all;
//   - three bytes: the lower of the two byte pairs' ranks (the left one on a tie), from
//     the byte pair table, merges once: no pair-table probe;
//   - four bytes: after the first merge, one or two pair-table probes (the new token
//     with its neighbours), then at most one more merge.
//
// mergeShort, which this stands in for here, probes the pair table once more for
// every merge it makes or checks; on random printable ASCII (BenchmarkEncodeAdversarial's
// no-whitespace-mixed) most pieces of three or four bytes that no cache holds are such
// pieces (see docs/tokenizer-performance.md). Pieces with a byte that has no token, of
// one byte, or under tiktoken's rank semantics go to mergeSmall.
// TestMergeTinyNotToken checks it against mergeShort for every such piece of two and
// three printable bytes and for random pieces of four of any bytes.
func (t *Tokenizer) mergeTinyNotToken(st *encodeState, p string) []uint32 {
	if t.mergeSemantics != "pairs" || len(p) < 2 || len(p) > 4 {
		return t.mergeSmall(st, p)
	}
	var ids [4]uint32
	for i := 0; i < len(p); i++ {
		id := t.byteIDs[p[i]]
		if id < 0 {
			return t.mergeSmall(st, p)
		}
		ids[i] = uint32(id)
	}
	parts := st.parts[:0]
	bp := t.bytePairs()
	switch len(p) {
	case 2:
		parts = append(parts, ids[0], ids[1])
	case 3:
		r0, r1 := bp.rank(p[0], p[1]), bp.rank(p[1], p[2])
		switch {
		case r0 == noRank && r1 == noRank:
			parts = append(parts, ids[0], ids[1], ids[2])
		case r0 <= r1:
			parts = append(parts, t.merges.made(r0), ids[2])
		default:
			parts = append(parts, ids[0], t.merges.made(r1))
		}
	default:
		parts = t.mergeFourNotToken(parts, bp, p, &ids)
	}
	keepScratch(&st.parts, parts)
	return parts
}

// mergeFourNotToken appends to parts the BPE of the four bytes p (token ids in ids),
// a piece BPE does not build whole (see mergeTinyNotToken).
func (t *Tokenizer) mergeFourNotToken(parts []uint32, bp *bytePairTable, p string, ids *[4]uint32) []uint32 {
	r0, r1, r2 := bp.rank(p[0], p[1]), bp.rank(p[1], p[2]), bp.rank(p[2], p[3])
	// The first merge: the lowest rank, the leftmost on a tie.
	switch {
	case r0 == noRank && r1 == noRank && r2 == noRank:
		return append(parts, ids[0], ids[1], ids[2], ids[3])
	case r0 <= r1 && r0 <= r2: // [ab] c d
		x := t.merges.made(r0)
		left, _ := t.pairRank(x, ids[2])
		return joinLowest(parts, t, x, ids[2], ids[3], left, r2)
	case r1 <= r2: // a [bc] d
		x := t.merges.made(r1)
		left, _ := t.pairRank(ids[0], x)
		right, _ := t.pairRank(x, ids[3])
		return joinLowest(parts, t, ids[0], x, ids[3], left, right)
	default: // a b [cd]
		x := t.merges.made(r2)
		right, _ := t.pairRank(ids[1], x)
		return joinLowest(parts, t, ids[0], ids[1], x, r0, right)
	}
}

// joinLowest appends the three tokens a, b, c after the one merge BPE makes among them:
// the lower of left (a with b) and right (b with c), the left one on a tie, or none.
// (The merge after it would make the whole piece, which BPE does not build.)
func joinLowest(parts []uint32, t *Tokenizer, a, b, c, left, right uint32) []uint32 {
	switch {
	case left == noRank && right == noRank:
		return append(parts, a, b, c)
	case left <= right:
		return append(parts, t.merges.made(left), c)
	default:
		return append(parts, a, t.merges.made(right))
	}
}
