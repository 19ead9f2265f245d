package tokenize

import (
	"container/heap"
	"math"
	"math/bits"
	"slices"
)

// The merge loops (BPE proper), for pieces the piece cache does not hold (encode.go).
//
// Performance notes (BenchmarkEncode, BenchmarkEncodeAdversarial):
//   - Short pieces are merged tiktoken-style: an array of parts and the rank of each
//     adjacent pair; each merge rescans the ranks (cheap ints) and looks up two new pairs.
//   - HF merges are looked up by the pair of ids (HF's semantics: the rank of the pair in
//     the merges list), never by concatenating bytes, in a packed open-addressing table
//     (8-byte slots, half full: the GPT-2 table is 0.8 MB; a Go map of the same was
//     slower on every input). tiktoken's are looked up by bytes (bpe_ranks.go).
//   - Pieces longer than heapThreshold (a 1 MB run of letters is one piece) are where the
//     linear-time goal is decided. A heap (container/heap, 16-byte entries) cost 30x the
//     per-byte time of normal text on 1 MB of random a-z; the bucket queue by rank in
//     mergeLong brought it to 6.6x, and the rest was cache misses: one per queued pair on
//     the 1M-symbol array. What got it to ~3.6x: 4-byte queue entries (under pair-rank
//     semantics a rank names its pair, so a position is all a bucket needs), a first pass
//     over each bucket that touches its symbols so the misses overlap, 8-byte symbols
//     with the rarely used back links in a separate array, and the packed pair table.
//     (Those ratios were against the encoder of the time; against today's normal text it
//     is 15-20x.) Under HF's merges such pieces, and every piece over backtrackMinLen
//     bytes, now go to the backtracking encoder (bpe_backtrack.go); mergeLong stays for
//     tiktoken's ranks and for vocabularies it does not accept.

const (
	heapThreshold = 256 // pieces longer than this (bytes) use the long-piece merge loops
	// backtrackMinLen: pieces longer than this (bytes) go to the backtracking encoder
	// where the tokenizer has one (shorter ones are in the caches mostly). mergeShort
	// rescans its ranks after each merge, which is quadratic: text of CJK characters (3
	// bytes each, no spaces) is pieces of 20-150 bytes up to the next punctuation, which
	// GPT-2 encoded at ~19 MB per CPU-second with mergeShort up to 256 bytes, ~42 with
	// this (BenchmarkEncode on the cjk corpus of make bench, tools/cjkcorpus).
	backtrackMinLen = 16
	noRank          = math.MaxUint32
)

// pairRank returns the rank of merging (a, b) and the id it makes, or noRank.
func (t *Tokenizer) pairRank(a, b uint32) (rank, id uint32) {
	r := t.merges.get(a, b)
	if r == noRank {
		return noRank, 0
	}
	return r, t.merges.made(r)
}

// initialParts returns the one-byte token ids of p. Bytes the vocabulary lacks are
// dropped, as HF's BPE model without an unk token does.
func (t *Tokenizer) initialParts(parts []uint32, p string) []uint32 {
	parts = parts[:0]
	for i := 0; i < len(p); i++ {
		if id := t.byteIDs[p[i]]; id >= 0 {
			parts = append(parts, uint32(id))
		}
	}
	return parts
}

// mergeShort runs BPE on a short piece with a rank array rescanned after each merge.
func (t *Tokenizer) mergeShort(st *encodeState, p string) []uint32 {
	parts := t.initialParts(st.parts, p)
	ranks := st.ranks[:0]
	if len(parts) == len(p) {
		// Every byte has its token: the first ranks are those of byte pairs.
		bp := t.bytePairs()
		for i := 0; i+1 < len(p); i++ {
			ranks = append(ranks, bp.rank(p[i], p[i+1]))
		}
	} else {
		for i := 0; i+1 < len(parts); i++ {
			r, _ := t.pairRank(parts[i], parts[i+1])
			ranks = append(ranks, r)
		}
	}
	for len(ranks) > 0 {
		best, bi := lowestRank(ranks)
		if bi < 0 {
			break
		}
		parts[bi] = t.merges.made(best) // a rank names one merge (pair-rank semantics)
		parts = append(parts[:bi+1], parts[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi > 0 {
			ranks[bi-1], _ = t.pairRank(parts[bi-1], parts[bi])
		}
		if bi < len(ranks) {
			ranks[bi], _ = t.pairRank(parts[bi], parts[bi+1])
		}
	}
	keepScratch(&st.parts, parts)
	keepScratch(&st.ranks, ranks)
	return parts
}

// lowestRank returns the lowest rank in ranks and its first index, or -1 if none is
// below noRank.
func lowestRank(ranks []uint32) (best uint32, at int) {
	best, at = noRank, -1
	for i, r := range ranks {
		if r < best {
			best, at = r, i
		}
	}
	return best, at
}

// symbol is a node of the linked list mergeLong works on.
// A merged-away symbol gets id deadSymbol, which no queued pair names. Its left
// neighbours live in a separate array (prevs): the hot loop reads only id and next, so
// more symbols share a cache line.
type symbol struct {
	id   uint32
	next int32 // -1 at the end
}

const deadSymbol = ^uint32(0)

// mergeCand is a candidate merge of symbol pos with its right neighbour.
type mergeCand struct {
	rank, pos   uint32
	left, right uint32 // ids when queued; stale if the symbols changed since
}

type mergeHeap []mergeCand

func (h mergeHeap) Len() int { return len(h) }
func (h mergeHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h mergeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *mergeHeap) Push(x any)   { *h = append(*h, x.(mergeCand)) }
func (h *mergeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeLong runs BPE on a long piece. With a monotone merge table (see checkMonotone)
// merges happen in non-decreasing rank order, so a bucket queue indexed by rank replaces
// the heap: each bucket holds the positions of candidate pairs of that rank, processed
// left to right (sorted when reached); new pairs always land in later buckets. Cost is
// O(n) plus a scan of one bit per rank.
func (t *Tokenizer) mergeLong(st *encodeState, p string) []uint32 {
	if !t.monotone || t.mergeSemantics != "pairs" {
		return t.mergeLongHeap(st, p)
	}
	ids := t.initialParts(st.parts, p)
	syms, prevs := st.syms[:0], st.prevs[:0]
	for i, id := range ids {
		syms = append(syms, symbol{id: id, next: int32(i + 1)})
		prevs = append(prevs, int32(i-1))
	}
	if len(syms) == 0 {
		return ids
	}
	syms[len(syms)-1].next = -1
	if st.buckets == nil {
		st.buckets = make([][]uint32, t.maxRank+1)
		st.nonEmpty = make([]uint64, t.maxRank/64+1)
	}
	buckets, nonEmpty := st.buckets, st.nonEmpty
	mt := t.merges
	push := func(pos int32) {
		nx := syms[pos].next
		if nx < 0 {
			return
		}
		if rank := mt.get(syms[pos].id, syms[nx].id); rank != noRank {
			buckets[rank] = append(buckets[rank], uint32(pos))
			nonEmpty[rank>>6] |= 1 << (rank & 63)
		}
	}
	for i := range syms {
		push(int32(i))
	}
	for w := 0; w < len(nonEmpty); w++ {
		for nonEmpty[w] != 0 {
			rank := uint32(w<<6 + bits.TrailingZeros64(nonEmpty[w]))
			nonEmpty[w] &^= 1 << (rank & 63)
			b := buckets[rank]
			if !slices.IsSorted(b) {
				slices.Sort(b)
			}
			// Touch every symbol first: these loads are independent, so their cache
			// misses overlap; the merge loop below then finds them in cache.
			var touch uint32
			for _, pos := range b {
				touch += syms[pos].id
			}
			st.touch += touch
			// Under pair-rank semantics a rank names one pair: a queued position is
			// still valid if its symbols are still that pair.
			left, right, merged := mt.leftByRank[rank], mt.rightByRank[rank], mt.mergedByRank[rank]
			for _, pos := range b {
				l := &syms[pos]
				if l.id != left || l.next < 0 || syms[l.next].id != right {
					continue // stale: the pair changed since it was queued
				}
				nx := &syms[l.next]
				nx.id = deadSymbol
				l.id = merged
				l.next = nx.next
				if nx.next >= 0 {
					prevs[nx.next] = int32(pos)
				}
				if p := prevs[pos]; p >= 0 {
					push(p)
				}
				push(int32(pos))
			}
			buckets[rank] = b[:0]
		}
	}
	out := ids[:0]
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	st.parts, st.syms, st.prevs = out, syms, prevs
	return out
}

// mergeLongHeap runs BPE on a long piece in O(n log n): a heap of candidate merges ordered by
// (rank, position), lazily invalidated, over a linked list of symbols. Merging the
// lowest-ranked, leftmost pair first is exactly what the short loops do. Under
// tiktoken's semantics a symbol's index is the offset of its first byte (every byte is
// a token), and a pair's rank is that of their bytes together (rankOf).
func (t *Tokenizer) mergeLongHeap(st *encodeState, p string) []uint32 {
	ids := t.initialParts(st.parts, p)
	syms, prevs := st.syms[:0], st.prevs[:0]
	for i, id := range ids {
		syms = append(syms, symbol{id: id, next: int32(i + 1)})
		prevs = append(prevs, int32(i-1))
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	ranked := t.mergeSemantics == "ranks"
	// pairAt returns the rank of merging symbol pos with the next, and the id it makes.
	pairAt := func(pos int32) (rank, id uint32) {
		nx := syms[pos].next
		if nx < 0 {
			return noRank, 0
		}
		if ranked {
			end := len(p)
			if nn := syms[nx].next; nn >= 0 {
				end = int(nn)
			}
			r := t.rankOf(p, int(pos), end)
			return r, r
		}
		return t.pairRank(syms[pos].id, syms[nx].id)
	}
	h := st.heap[:0]
	push := func(pos int32) {
		if r, _ := pairAt(pos); r != noRank {
			heap.Push(&h, mergeCand{r, uint32(pos), syms[pos].id, syms[syms[pos].next].id})
		}
	}
	for i := range syms {
		if r, _ := pairAt(int32(i)); r != noRank {
			h = append(h, mergeCand{r, uint32(i), syms[i].id, syms[i+1].id})
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		c := heap.Pop(&h).(mergeCand)
		l := &syms[c.pos]
		if l.id != c.left || l.next < 0 || syms[l.next].id != c.right {
			continue
		}
		_, id := pairAt(int32(c.pos))
		r := &syms[l.next]
		r.id = deadSymbol
		l.id = id
		l.next = r.next
		if r.next >= 0 {
			prevs[r.next] = int32(c.pos)
		}
		if p := prevs[c.pos]; p >= 0 {
			push(p)
		}
		push(int32(c.pos))
	}
	out := ids[:0]
	for i := int32(0); i >= 0 && int(i) < len(syms); i = syms[i].next {
		out = append(out, syms[i].id)
	}
	st.parts, st.syms, st.prevs, st.heap = out, syms, prevs, h
	return out
}
