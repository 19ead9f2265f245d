package tokenize

import (
	"slices"
	"strings"
	"unsafe"
)

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
	pieceBatch        = 4096    // pieces found per splitter call
	longCacheMaxPiece = 256     // longer pieces are not cached
	longCacheMaxIDs   = 1 << 18 // long-piece cache arena size (ids) before a reset
	longCacheMaxItems = 1 << 14
	// The long-piece cache is probed and filled only while it pays: at least one in
	// longCacheMinHitsIn of every longCacheWindow lookups must hit. Else it is left
	// alone, kept as it is, for the next longCacheOffMin bytes of text (counted a batch
	// of pieces at a time, from the end of the batch it closed in), then tried again;
	// each window that fails in a row doubles that, up to longCacheOffMax, and one that
	// passes sets it back. A miss costs hashing the piece twice, a copy of it and a map
	// insert (~15% of merging a clause of CJK-like text, whose clauses are pieces that
	// seldom come back); a hit saves the whole merge.
	//   - A cache still filling is not judged until it holds longCacheWarm pieces or
	//     half its arena's ids (unless a window has failed since the last that passed):
	//     text whose long pieces come back after a few thousand others would look like
	//     text whose pieces never do. (Pieces that come back only after more than
	//     ~9,000 others, longCacheWarm and a window, are judged on their first pass.)
	//   - The time off is counted in bytes of text, not in long pieces: text with few
	//     long pieces (English, code), after text whose long pieces never came back,
	//     gets the cache back as soon as text with many.
	//   - A small window keeps what a closing costs small; the time off, growing, keeps
	//     how often it is paid small.
	longCacheWindow    = 1024
	longCacheMinHitsIn = 8
	longCacheWarm      = 8192
	longCacheOffMin    = 256 << 10
	longCacheOffMax    = 16 << 20
)

// encodeState is per-goroutine scratch space and caches, pooled on the Tokenizer.
type encodeState struct {
	win  classWindow
	ends []int
	// cutEnds: the ends of the parts of a long piece cut at its safe positions
	// (safesplit.go).
	cutEnds []int
	front   frontCache
	// tokensPerByte of the last text of 64 bytes or more (0.25 before the first): how
	// Encode sizes its result.
	tokensPerByte float64
	pieces        pieceCache
	// Pieces longer than cacheMaxLen, up to longCacheMaxPiece bytes.
	long      map[string]cacheEntry
	longArena []uint32
	// textSeen counts the bytes of text encoded with this state, a batch of pieces at a
	// time (encodeSegment), wrapping around (compared by difference).
	textSeen int
	// The long-piece cache's gate: lookups and hits in the current window, the
	// textSeen from which it is open again, and how many bytes the next window that
	// fails will close it for (0: longCacheOffMin).
	longLookups, longHits, longOpenAt, longBackoff int

	parts  []uint32 // ids of the parts of the piece being merged
	ranks  []uint32 // ranks[i] = rank of the pair (parts[i], parts[i+1])
	starts []int32  // tiktoken's semantics: byte offsets of the parts (mergeRanksShort)
	// mergeRanksMedium's links, ids and ranks by byte offset, and lowest rank by block.
	mNext, mPrev []int32
	mID, mRank   []uint32
	mBlock       []uint32
	heap         mergeHeap
	syms         []symbol
	prevs        []int32
	// mergeLong's bucket queue: positions by pair rank, and a bit per non-empty rank.
	buckets  [][]uint32 // positions of candidate pairs, by rank
	nonEmpty []uint64
	touch    uint32 // keeps mergeLong's prefetching loads alive
	bt       btState
	// host is the text being encoded (or its normalized form): the segments are parts
	// of it, and the hot loop may load words past a segment's end up to host's end
	// (readable). "" between calls, so that the pool holds no text.
	host string
}

// within returns the offset of s in st.host, if s lies within it.
func (st *encodeState) within(s string) (int, bool) {
	h := st.host
	if len(s) == 0 || len(h) == 0 {
		return 0, false
	}
	hp, sp := uintptr(unsafe.Pointer(unsafe.StringData(h))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
	if sp >= hp && sp+uintptr(len(s)) <= hp+uintptr(len(h)) {
		return int(sp - hp), true
	}
	return 0, false
}

// sameString reports whether a and b are the same bytes in memory (not only equal).
func sameString(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// readable returns how many bytes from the start of s may be loaded: up to the end of
// st.host when s lies within it, else len(s).
func (st *encodeState) readable(s string) int {
	h := st.host
	if len(s) == 0 || len(h) == 0 {
		return len(s)
	}
	hp, sp := uintptr(unsafe.Pointer(unsafe.StringData(h))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
	if sp >= hp && sp+uintptr(len(s)) <= hp+uintptr(len(h)) {
		return int(hp + uintptr(len(h)) - sp)
	}
	return len(s)
}

type cacheEntry struct{ off, n uint32 }

func (t *Tokenizer) getState() *encodeState {
	if st, ok := t.states.Get().(*encodeState); ok {
		return st
	}
	return newEncodeState()
}

// newEncodeState returns a fresh encode state, its caches empty.
func newEncodeState() *encodeState {
	return &encodeState{ends: make([]int, 0, pieceBatch), tokensPerByte: 0.25}
}

func (t *Tokenizer) putState(st *encodeState) { t.states.Put(st) }

// tokenID is what ids are appended to: int (Encode, AppendEncode) or int32
// (AppendEncodeInt32: half the memory). The encode path is generic in it, instantiated
// once for each (they have different shapes, so neither pays for the other).
type tokenID interface{ ~int | ~int32 }

// encodeBPE encodes valid UTF-8 text: added tokens, normalization, pre-tokenization, BPE.
// No raw added token starts in text[:skip] (validUTF8 found none of their first byte
// there, in the same pass: the search would be a second pass over all of most texts).
func encodeBPE[T tokenID](t *Tokenizer, st *encodeState, text string, skip int, dst []T) []T {
	st.host = text
	st.win.reset(text)
	dst = encodeAroundAdded(t, st, t.rawAdded, text, skip, dst, encodeNormalized[T])
	st.host = ""
	st.win.reset("")
	return dst
}

// encodeNormalized normalizes a segment between raw added tokens, then splits it on the
// added tokens that match normalized text.
func encodeNormalized[T tokenID](t *Tokenizer, st *encodeState, seg string, dst []T) []T {
	if seg == "" {
		return dst
	}
	if t.normalize != nil {
		if norm := t.normalize(seg); norm != seg {
			// A new string: segments of it may read to its end only.
			host := st.host
			st.host = norm
			st.win.reset(norm)
			dst = encodeAroundAdded(t, st, t.normAdded, norm, 0, dst, encodeSegment[T])
			st.host = host
			st.win.reset(host)
			return dst
		}
	}
	return encodeAroundAdded(t, st, t.normAdded, seg, 0, dst, encodeSegment[T])
}

// encodeAroundAdded appends the ids of s: the added tokens m finds in it (m may be nil;
// none starts before skip) and, through encodeGap, the text between them.
func encodeAroundAdded[T tokenID](t *Tokenizer, st *encodeState, m *addedMatcher, s string, skip int, dst []T, encodeGap func(*Tokenizer, *encodeState, string, []T) []T) []T {
	if m == nil {
		return encodeGap(t, st, s, dst)
	}
	for from := 0; from < len(s); {
		start, end, id := m.find(s, max(from, skip))
		if start < 0 {
			return encodeGap(t, st, s[from:], dst)
		}
		dst = encodeGap(t, st, s[from:start], dst)
		dst = append(dst, T(id))
		from = end
	}
	return dst
}

// encodeSegment pre-tokenizes a segment free of added tokens and encodes each piece.
func encodeSegment[T tokenID](t *Tokenizer, st *encodeState, seg string, dst []T) []T {
	if seg == "" {
		return dst
	}
	if t.addPrefixSpace && seg[0] != ' ' {
		seg = " " + seg
	}
	// The block splitters split a segment of st.host (cut out by added tokens) as the
	// part of st.host from the segment's start to its end, with the window that
	// classifies st.host whole: a piece starts at from, and no rule looks before it.
	// (NeoX's space-run added tokens cut code into segments of a few dozen bytes: each
	// was classified on its own, a window at a time.) Other segments, and the pattern
	// matcher, get a window of their own.
	from := 0
	if off, ok := st.within(seg); ok && t.blockSplit && sameString(st.win.s, st.host) {
		from, seg = off, st.host[:off+len(seg)]
		st.win.end = len(seg)
	} else {
		st.win.reset(seg)
	}
	avail := st.readable(seg)
	ends := st.ends
	for from < len(seg) {
		ends = t.split(&st.win, seg, from, ends[:0])
		if len(ends) == 0 {
			break
		}
		st.textSeen += ends[len(ends)-1] - from
		dst = encodePieces(t, st, seg, avail, from, ends, false, dst)
		from = ends[len(ends)-1]
	}
	keepScratch(&st.ends, ends)
	return dst
}

// encodePieces appends the ids of the pieces of seg that end at ends, the first
// starting at prev (avail bytes from seg's start may be loaded): through the hot loop
// while the front cache holds them, each other one through encodePiece. cut says the
// pieces are the parts of a cut piece (safesplit.go): a long one has no safe position,
// and is encoded whole.
func encodePieces[T tokenID](t *Tokenizer, st *encodeState, seg string, avail, prev int, ends []int, cut bool, dst []T) []T {
	if st.front.slots == nil {
		st.front.init()
	}
	front := &st.front
	for k := 0; k < len(ends); k++ {
		var done int
		dst, done = appendShortTokens(front, seg, avail, prev, ends[k:], dst)
		if k += done; k == len(ends) {
			break
		}
		if k > 0 {
			prev = ends[k-1]
		}
		if cut && ends[k]-prev > cacheMaxLen {
			dst = encodeLongWhole(t, st, seg[prev:ends[k]], dst)
		} else {
			dst = encodePiece(t, st, seg, prev, ends[k], dst)
		}
		prev = ends[k]
	}
	return dst
}

// appendShortTokensGo is the hot loop of encodeSegment (appendShortTokens: in assembly
// on amd64, shorttokens_amd64.s, with this as its twin): it appends the ids of the pieces
// of text (ends as in splitter, ends[-1] taken as prev) of at most 16 bytes that the
// front cache holds (one to three ids in the slot, or four or more in front.more), and
// stops at the first piece that is not (or that starts within 16 bytes of the end of the
// avail bytes from text's start that may be loaded, where the loads would overrun: text
// is a segment of a larger string, whose bytes past the segment the masks drop). It
// returns dst and the number of pieces done.
//
// The loop itself (shortTokensGo) stops at a piece of four or more ids too, which this
// appends before going on: appending them inside the loop made the compiler keep fewer
// values in registers across it (5-8% slower, with -tags noasm).
func appendShortTokensGo[T tokenID](front *frontCache, text string, avail, prev int, ends []int, dst []T) ([]T, int) {
	done := 0
	for {
		var k int
		var val uint64
		dst, k, val = shortTokensGo(front, text, avail, prev, ends[done:], dst)
		if done += k; val == 0 {
			return dst, done
		}
		if done > 0 {
			prev = ends[done-1]
		}
		lo, hi := pieceKey(text, prev, ends[done]-prev) // (prev <= avail-16: 16 bytes readable)
		ids, ok := front.moreIDs(val, lo, hi)
		if !ok {
			return dst, done
		}
		for _, id := range ids {
			dst = append(dst, T(id))
		}
		done++
		prev = ends[done-1]
	}
}

// shortTokensGo is the loop of appendShortTokensGo. It stops at a piece of four or more
// ids with that piece's value (count 0) in val, else with val 0. The table and the text
// come as bare pointers, so that the few values the loop needs stay in registers (the
// bounds are known: the index is a hash shifted to below len(short), and the load is
// checked against len(text)-8).
func shortTokensGo[T tokenID](front *frontCache, text string, avail, prev int, ends []int, dst []T) (_ []T, k int, val uint64) {
	if avail < 16 || len(front.slots) == 0 {
		return dst, 0, 0
	}
	table, long, base, limit := unsafe.Pointer(&front.slots[0]), unsafe.Pointer(&front.long[0]), unsafe.Pointer(unsafe.StringData(text)), avail-16
	mask := uint64(len(front.slots) - 1)
	// The ids are written without a branch on their count: all three words of a slot
	// at out[m:m+3], then m moves by the count (the count's branch mispredicted on every
	// change between pieces of one token and of two or three). free is how many ids
	// out has room for past m.
	m := len(dst)
	if cap(dst)-m < frontIDs {
		dst = slices.Grow(dst, frontIDs)
	}
	out := unsafe.Pointer(unsafe.SliceData(dst))
	free := cap(dst) - m
	for k, end := range ends {
		n := end - prev
		if uint(n-1) >= 16 || prev > limit {
			return dst[:m], k, 0
		}
		var val uint64
		if n <= 8 {
			key := *(*uint64)(unsafe.Add(base, prev))&loMask[n&31] | loMark[n&31] // pieceKey, little-endian
			s := (*shortSlot)(unsafe.Add(table, uintptr(shortIndex(key, mask))*unsafe.Sizeof(shortSlot{})))
			if s.ikey != ^key {
				return dst[:m], k, 0
			}
			val = s.val
		} else {
			lo := *(*uint64)(unsafe.Add(base, prev))
			hi := *(*uint64)(unsafe.Add(base, prev+8))&hiMask[n&31] | hiMark[n&31]
			s := (*frontLong)(unsafe.Add(long, uintptr(frontLongIndex(lo, hi))*unsafe.Sizeof(frontLong{})))
			if s.lo != lo || s.ihi != ^hi {
				return dst[:m], k, 0
			}
			val = s.val
		}
		if free < frontIDs {
			dst = slices.Grow(dst[:m], frontIDs)
			out, free = unsafe.Pointer(unsafe.SliceData(dst)), cap(dst)-m
		}
		w := (*[frontIDs]T)(unsafe.Add(out, uintptr(m)*unsafe.Sizeof(T(0))))
		w[0], w[1], w[2] = T(val&idMask), T(val>>idBits&idMask), T(val>>(2*idBits)&idMask)
		c := int(val >> 60)
		if c == 0 { // four or more ids, in front.more: appendShortTokensGo appends them
			return dst[:m], k, val
		}
		m += c
		free -= c
		prev = end
	}
	return dst[:m], len(ends), 0
}

// shortArgs are the arguments and results of the assembly appendShortTokens (the
// offsets are fixed in shorttokens_amd64.s): the front cache's tables, keyMasks, the
// text, nends piece ends, the ids' array out with m of them and room for capOut, prev;
// front.more (nmore ids); k, the pieces done, and full, whether the loop stopped for
// want of room in out for a piece of four or more ids.
//
// text, ends, out and more are set for each call as bare addresses, not pointers: a
// pointer stored into the pooled state is a write barrier while the collector runs, and
// with eight of them a call (four set, four cleared) they were ~4% of random printable
// ASCII's time in BenchmarkEncodeAdversarial (Encode's 1 MB results keep the collector
// busy). What they point to is alive across the call (the callers hold it, and
// appendShortTokens ends with runtime.KeepAlive of each), and, with gc's collector,
// which does not move heap objects, nothing moves it: a goroutine's stack is copied only
// at its own calls (growth) or, to shrink it, at a synchronous safe point, and neither
// lies between the stores and the end of the assembly (NOSPLIT, no calls; an
// asynchronous preemption there leaves the stack as it is). In practice all four are on
// the heap today (dst escapes from AppendEncode). The tables (table, long, masks) are
// set once, by front.init, and stay pointers.
type shortArgs struct {
	table, long, masks  unsafe.Pointer
	text, ends          uintptr
	nends               int
	out                 uintptr
	m, prev, limit, k   int
	more                uintptr
	nmore, capOut, full int
}

// keepScratch stores s, grown from the scratch slice *p of the pooled encode state, back
// in *p when its array is new, and only then: the state is on the heap, so storing a
// slice is a write barrier while the collector runs, and the merges store their scratch
// once a piece (what is kept is the array; every use starts from (*p)[:0]).
func keepScratch[E any](p *[]E, s []E) {
	if unsafe.SliceData(s) != unsafe.SliceData(*p) {
		*p = s
	}
}

// encodePiece appends the ids of the piece seg[prev:end]: for pieces of at most 16
// bytes through the vocabulary table, the piece cache and, on a miss, the merge loop
// (whose result the cache then keeps).
func encodePiece[T tokenID](t *Tokenizer, st *encodeState, seg string, prev, end int, dst []T) []T {
	n := end - prev
	if n > cacheMaxLen {
		return encodeLong(t, st, seg[prev:end], dst)
	}
	lo, hi := pieceKey(seg, prev, n)
	if val, ok := st.front.find(lo, hi, n); ok && val>>60 == 0 {
		if ids, ok := st.front.moreIDs(val, lo, hi); ok {
			for _, id := range ids {
				dst = append(dst, T(id))
			}
			return dst
		}
	}
	if val := t.whole.find(lo, hi, n); val != 0 && (t.wholeBad == nil || !t.wholeBad[val&idMask]) {
		if n <= 8 {
			st.front.put(lo, val)
		} else {
			st.front.putLong(lo, hi, val)
		}
		return append(dst, T(val&idMask))
	}
	if n <= pieceCacheMinLen-1 {
		// Merged faster than the piece cache is probed (bytepairs.go).
		start := len(dst)
		for _, id := range t.mergeTinyNotToken(st, seg[prev:end]) {
			dst = append(dst, T(id))
		}
		putIDs(&st.front, lo, hi, n, dst[start:])
		return dst
	}
	if s := st.pieces.find(lo, hi); s != nil {
		// Back into the front cache.
		start := len(dst)
		dst = appendSlot(&st.pieces, s, dst)
		putIDs(&st.front, lo, hi, n, dst[start:])
		return dst
	}
	ids := t.merge(st, seg[prev:end])
	// The piece cache keeps every merged piece; the front cache too, but it is
	// direct-mapped, and a piece evicted from it must not be merged again.
	st.pieces.put(lo, hi, ids)
	start := len(dst)
	for _, id := range ids {
		dst = append(dst, T(id))
	}
	putIDs(&st.front, lo, hi, n, dst[start:])
	return dst
}

// encodeLong appends the ids of a piece longer than cacheMaxLen bytes: in parts where
// it can be cut (safesplit.go), else whole.
func encodeLong[T tokenID](t *Tokenizer, st *encodeState, p string, dst []T) []T {
	if sp := t.safeSplits(); sp != nil {
		if out, ok := encodeCut(t, st, sp, p, dst); ok {
			return out
		}
	}
	return encodeLongWhole(t, st, p, dst)
}

// encodeLongWhole appends the ids of a piece longer than cacheMaxLen bytes, through the
// long-piece cache when it is at most longCacheMaxPiece bytes.
func encodeLongWhole[T tokenID](t *Tokenizer, st *encodeState, p string, dst []T) []T {
	cacheable := len(p) <= longCacheMaxPiece
	if st.textSeen-st.longOpenAt < 0 {
		cacheable = false
	}
	if cacheable && st.long != nil {
		e, ok := st.long[p]
		if st.longBackoff > 0 || len(st.long) >= longCacheWarm || len(st.longArena) >= longCacheMaxIDs/2 {
			st.judgeLongCache(ok)
		}
		if ok {
			for _, id := range st.longArena[e.off : e.off+e.n] {
				dst = append(dst, T(id))
			}
			return dst
		}
	}
	ids := t.pieceIDs(st, p)
	for _, id := range ids {
		dst = append(dst, T(id))
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

// judgeLongCache counts one lookup of the long-piece cache, a hit or not, in the
// current window and, at the window's end, closes the cache when too few hit.
func (st *encodeState) judgeLongCache(hit bool) {
	st.longLookups++
	if hit {
		st.longHits++
	}
	if st.longLookups < longCacheWindow {
		return
	}
	if st.longHits < longCacheWindow/longCacheMinHitsIn {
		if st.longBackoff == 0 {
			st.longBackoff = longCacheOffMin
		}
		st.longOpenAt = st.textSeen + st.longBackoff
		st.longBackoff = min(2*st.longBackoff, longCacheOffMax)
	} else {
		st.longBackoff = 0
	}
	st.longLookups, st.longHits = 0, 0
}

// pieceIDs returns the ids of one piece: the piece itself when it is a token that BPE
// would rebuild, else what the merge loop gives. The result is valid until the next
// call with st.
func (t *Tokenizer) pieceIDs(st *encodeState, p string) []uint32 {
	if id, ok := t.tokenID(p); ok && (t.wholeBad == nil || !t.wholeBad[id]) {
		parts := append(st.parts[:0], id)
		keepScratch(&st.parts, parts)
		return parts
	}
	return t.merge(st, p)
}

// merge runs BPE on a piece (bpe.go). The result is valid until the next call with st.
func (t *Tokenizer) merge(st *encodeState, p string) []uint32 {
	if len(p) > backtrackMinLen && t.mergeSemantics == "pairs" {
		if bt := t.longEncoder(); bt != nil {
			if out, ok := bt.encode(&st.bt, p, st.parts[:0]); ok {
				keepScratch(&st.parts, out)
				return out
			}
		}
	}
	if len(p) > heapThreshold {
		return t.mergeLong(st, p)
	}
	return t.mergeSmall(st, p)
}

// longEncoder returns the backtracking encoder of long pieces (built on first use), or
// nil if t's vocabulary does not allow it.
func (t *Tokenizer) longEncoder() *backtrack {
	t.backtrackOnce.Do(func() { t.backtrack = newBacktrack(t) })
	return t.backtrack
}

// mergeSmall is the merge loop for short pieces of t's semantics.
func (t *Tokenizer) mergeSmall(st *encodeState, p string) []uint32 {
	if t.mergeSemantics == "ranks" {
		if len(p) > rankMediumMinLen {
			return t.mergeRanksMedium(st, p)
		}
		return t.mergeRanksShort(st, p)
	}
	return t.mergeShort(st, p)
}
