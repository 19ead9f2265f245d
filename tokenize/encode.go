package tokenize

import "strings"

// The encode path of byte-level BPE tokenizers: added tokens, normalization,
// pre-tokenization, then each piece through the piece cache or the merge loop.
//
// Performance notes (BenchmarkEncode; figures and what was tried in
// docs/tokenizer-performance.md):
//   - Pre-tokenization reads bit masks of the byte classes (classify.go: AVX2 or SWAR,
//     64 bytes at a time) instead of decoding characters one by one: a run of letters
//     ends at a trailing-zero count.
//   - The pieces of a stretch of text are found first (up to pieceBatch of them), then
//     encoded: two tight loops instead of one that does both.
//   - A piece of ≤ 16 bytes is looked up in the per-goroutine pieceCache by its bytes
//     (two words, no hashing of a string, no pointer to follow); nearly every piece of
//     real text hits after the first few hundred kilobytes.
//   - A miss looks the piece up whole in the vocabulary, else merges it (bpe.go), and
//     fills the cache. Longer pieces (≤ longCacheMaxPiece bytes) have a map cache.

const (
	pieceBatch        = 1024    // pieces found per splitter call
	longCacheMaxPiece = 64      // longer pieces are not cached
	longCacheMaxIDs   = 1 << 18 // long-piece cache arena size (ids) before a reset
	longCacheMaxItems = 1 << 14
)

// encodeState is per-goroutine scratch space and caches, pooled on the Tokenizer.
type encodeState struct {
	win    classWindow
	ends   []int
	out    []int // Encode's buffer (see Tokenizer.encode)
	pieces pieceCache
	// Pieces longer than cacheMaxLen, up to longCacheMaxPiece bytes.
	long      map[string]cacheEntry
	longArena []uint32

	parts []uint32 // ids of the parts of the piece being merged
	ranks []uint32 // ranks[i] = rank of the pair (parts[i], parts[i+1])
	heap  mergeHeap
	syms  []symbol
	prevs []int32
	// mergeLong's bucket queue: positions by pair rank, and a bit per non-empty rank.
	buckets  [][]uint32 // positions of candidate pairs, by rank
	nonEmpty []uint64
	touch    uint32 // keeps mergeLong's prefetching loads alive
}

type cacheEntry struct{ off, n uint32 }

func (t *Tokenizer) getState() *encodeState {
	if st, ok := t.states.Get().(*encodeState); ok {
		return st
	}
	return &encodeState{ends: make([]int, 0, pieceBatch)}
}

func (t *Tokenizer) putState(st *encodeState) { t.states.Put(st) }

// encodeBPE encodes valid UTF-8 text: added tokens, normalization, pre-tokenization, BPE.
func (t *Tokenizer) encodeBPE(st *encodeState, text string, dst []int) []int {
	return encodeAroundAdded(st, t.rawAdded, text, dst, t.encodeNormalized)
}

// encodeNormalized normalizes a segment between raw added tokens, then splits it on the
// added tokens that match normalized text.
func (t *Tokenizer) encodeNormalized(st *encodeState, seg string, dst []int) []int {
	if seg == "" {
		return dst
	}
	if t.normalize != nil {
		seg = t.normalize(seg)
	}
	return encodeAroundAdded(st, t.normAdded, seg, dst, t.encodeSegment)
}

// encodeAroundAdded appends the ids of s: the added tokens m finds in it (m may be nil)
// and, through encodeGap, the text between them.
func encodeAroundAdded(st *encodeState, m *addedMatcher, s string, dst []int, encodeGap func(*encodeState, string, []int) []int) []int {
	if m == nil {
		return encodeGap(st, s, dst)
	}
	for from := 0; from < len(s); {
		start, end, id := m.find(s, from)
		if start < 0 {
			return encodeGap(st, s[from:], dst)
		}
		dst = encodeGap(st, s[from:start], dst)
		dst = append(dst, id)
		from = end
	}
	return dst
}

// encodeSegment pre-tokenizes a segment free of added tokens and encodes each piece.
func (t *Tokenizer) encodeSegment(st *encodeState, seg string, dst []int) []int {
	if seg == "" {
		return dst
	}
	if t.addPrefixSpace && seg[0] != ' ' {
		seg = " " + seg
	}
	st.win.reset(seg)
	cache := &st.pieces
	ends := st.ends
	for from := 0; from < len(seg); {
		ends = t.split(&st.win, seg, from, ends[:0])
		if len(ends) == 0 {
			break
		}
		prev := from
		for _, end := range ends {
			if n := end - prev; n <= cacheMaxLen && cache.sets != nil {
				lo, hi := pieceWords(seg, prev, n)
				set := cache.set(lo, hi)
				if s := &set[0]; s.lo == lo && s.hi == hi && s.meta&31 == uint64(n) {
					if s.meta&0xE0 == 1<<5 { // one id
						dst = append(dst, int(s.meta>>8&idMask))
					} else {
						dst = cache.appendSlot(s, dst)
					}
					prev = end
					continue
				}
				if s := &set[1]; s.lo == lo && s.hi == hi && s.meta&31 == uint64(n) {
					dst = cache.appendSlot(s, dst)
					prev = end
					continue
				}
			}
			dst = t.encodePiece(st, seg[prev:end], dst)
			prev = end
		}
		from = prev
	}
	st.ends = ends
	return dst
}

// encodePiece appends the ids of one pre-tokenized piece that is not in the piece
// cache, and caches them.
func (t *Tokenizer) encodePiece(st *encodeState, p string, dst []int) []int {
	if len(p) <= cacheMaxLen {
		ids := t.pieceIDs(st, p)
		lo, hi := pieceWords(p, 0, len(p))
		st.pieces.put(lo, hi, len(p), ids)
		for _, id := range ids {
			dst = append(dst, int(id))
		}
		return dst
	}
	cacheable := len(p) <= longCacheMaxPiece
	if cacheable && st.long != nil {
		if e, ok := st.long[p]; ok {
			for _, id := range st.longArena[e.off : e.off+e.n] {
				dst = append(dst, int(id))
			}
			return dst
		}
	}
	ids := t.pieceIDs(st, p)
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	if cacheable {
		if st.long == nil || len(st.long) >= longCacheMaxItems || len(st.longArena)+len(ids) > longCacheMaxIDs {
			st.long = make(map[string]cacheEntry, 1024)
			st.longArena = st.longArena[:0]
		}
		st.long[strings.Clone(p)] = cacheEntry{uint32(len(st.longArena)), uint32(len(ids))}
		st.longArena = append(st.longArena, ids...)
	}
	return dst
}

// pieceIDs returns the ids of one piece: the piece itself when it is a token that BPE
// would rebuild, else what the merge loop gives. The result is valid until the next
// call with st.
func (t *Tokenizer) pieceIDs(st *encodeState, p string) []uint32 {
	if id, ok := t.ids[p]; ok && (t.wholeBad == nil || !t.wholeBad[id]) {
		st.parts = append(st.parts[:0], id)
		return st.parts
	}
	if len(p) > heapThreshold {
		return t.mergeLong(st, p)
	}
	return t.mergeShort(st, p)
}
