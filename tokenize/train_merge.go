package tokenize

import (
	"context"
	"fmt"
	"sort"
)

// The merge loop. Every distinct word is a sequence of token ids (initially its bytes'
// ids), weighted by its count. For every adjacent pair we keep its weighted count and the
// words it occurs in (a list that may hold words that no longer contain it; they are
// skipped when merged). A max-heap of (count, pair) entries with lazy invalidation picks
// the next merge: a popped entry whose count is stale is pushed back with the current
// count, exactly as HF's BpeTrainer does. Merging a pair rewrites only the words on its
// list and updates the counts of the neighbouring pairs.
//
// Where HF's trainer departs from this (we do not copy it): when a merge creates a string
// that is already a token (two different pairs giving the same bytes, possible in long
// runs of one character), HF reuses the token's id, as we do, but afterwards a pair that
// involves that id can sit in its heap several times with different word sets, and it
// then merges it in some words only and may write the same merge twice. Here a pair is
// always merged in every word that contains it.

// pairKey packs a (left id, right id) pair; comparing keys compares pairs
// lexicographically, which is HF's tie rule.
func pairKey(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) }

type pairInfo struct {
	count int64   // weighted occurrences
	words []int32 // words it occurs in (a superset; no word twice in a row)
	step  int32   // last merge step that created an occurrence, for heap pushes
}

type merger struct {
	keys  []string          // id -> vocab key (byte-level characters; specials as they are)
	keyID map[string]uint32 // vocab key -> id

	syms   []uint32 // all words' symbols: word w is syms[start[w] : start[w]+length[w]]
	start  []int
	length []int32
	count  []int64

	pairs  map[uint64]int32 // pair -> index into info
	info   []pairInfo
	free   []int32 // reusable info indices
	heap   pairHeap
	merges [][2]uint32

	step    int32    // number of the merge in progress
	cur     uint64   // the pair being merged
	touched []uint64 // pairs that gained occurrences in this step
}

// newMerger lays out the words (distinct pieces with their counts) as byte-token ids and
// counts their pairs.
func newMerger(special []string, words map[string]int64) *merger {
	m := &merger{
		keys:  make([]string, 0, len(special)+256),
		keyID: make(map[string]uint32, len(special)+256),
		pairs: make(map[uint64]int32),
	}
	for _, s := range special {
		m.addKey(s)
	}
	// The byte tokens, ordered by their byte-level character as HF orders its alphabet.
	order := make([]int, 256)
	for b := range order {
		order[b] = b
	}
	sort.Slice(order, func(i, j int) bool { return byteToChar(byte(order[i])) < byteToChar(byte(order[j])) })
	var byteID [256]uint32
	for _, b := range order {
		byteID[b] = m.addKey(string(byteToChar(byte(b))))
	}

	// Words of one byte have no pairs and never change: leave them out.
	total, n := 0, 0
	for w := range words {
		if len(w) > 1 {
			total += len(w)
			n++
		}
	}
	m.syms = make([]uint32, 0, total)
	m.start = make([]int, 0, n)
	m.length = make([]int32, 0, n)
	m.count = make([]int64, 0, n)
	for w, c := range words {
		if len(w) < 2 {
			continue
		}
		m.start = append(m.start, len(m.syms))
		m.length = append(m.length, int32(len(w)))
		m.count = append(m.count, c)
		for i := 0; i < len(w); i++ {
			m.syms = append(m.syms, byteID[w[i]])
		}
	}
	for w := range m.start {
		s := m.word(w)
		for i := 0; i+1 < len(s); i++ {
			m.inc(pairKey(s[i], s[i+1]), int32(w), m.count[w])
		}
	}
	m.heap = make(pairHeap, 0, len(m.pairs))
	for p, idx := range m.pairs {
		m.heap = append(m.heap, heapEntry{count: m.info[idx].count, pair: p})
	}
	m.heap.init()
	return m
}

func (m *merger) addKey(k string) uint32 {
	id := uint32(len(m.keys))
	m.keys = append(m.keys, k)
	m.keyID[k] = id
	return id
}

func (m *merger) word(w int) []uint32 {
	s := m.start[w]
	return m.syms[s : s+int(m.length[w])]
}

// run merges until the vocabulary has vocabSize tokens or the most frequent pair occurs
// fewer than minFreq times.
func (m *merger) run(ctx context.Context, vocabSize int, minFreq int64, progress func(string, int64, int64)) error {
	want := int64(vocabSize - len(m.keys))
	report := func() {
		if progress != nil {
			progress("merge", int64(len(m.merges)), want)
		}
	}
	report()
	for len(m.keys) < vocabSize && len(m.heap) > 0 {
		e := m.heap.pop()
		idx, ok := m.pairs[e.pair]
		if !ok {
			continue // the pair no longer occurs
		}
		if c := m.info[idx].count; c != e.count {
			m.heap.push(heapEntry{count: c, pair: e.pair}) // stale: requeue with its count
			continue
		}
		if e.count < minFreq {
			break
		}
		m.merge(e.pair)
		if len(m.merges)%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("tokenize: train: %w", err)
			}
			report()
		}
	}
	report()
	return nil
}

// merge replaces every occurrence of pair p in every word with one new token.
func (m *merger) merge(p uint64) {
	a, b := uint32(p>>32), uint32(p)
	key := m.keys[a] + m.keys[b]
	n, exists := m.keyID[key]
	if !exists {
		n = m.addKey(key)
	}
	m.merges = append(m.merges, [2]uint32{a, b})
	m.step++
	m.cur = p
	idx := m.pairs[p]
	words := m.info[idx].words
	delete(m.pairs, p) // occurrences of p that vanish in overlaps (a a a) are not counted down
	for _, w := range words {
		m.mergeWord(w, a, b, n)
	}
	m.info[idx] = pairInfo{}
	m.free = append(m.free, idx)
	for _, q := range m.touched {
		if i, ok := m.pairs[q]; ok {
			m.heap.push(heapEntry{count: m.info[i].count, pair: q})
		}
	}
	m.touched = m.touched[:0]
}

// mergeWord merges the occurrences of (a, b) in word w left to right into n, in place,
// and updates the counts of the pairs around them (as HF's Word::merge does).
func (m *merger) mergeWord(w int32, a, b, n uint32) {
	s := m.word(int(w))
	c := m.count[w]
	j := 0
	for i := 0; i < len(s); {
		if s[i] != a || i+1 >= len(s) || s[i+1] != b {
			s[j] = s[i]
			i++
			j++
			continue
		}
		if j > 0 {
			prev := s[j-1]
			m.dec(pairKey(prev, a), c)
			m.inc(pairKey(prev, n), w, c)
		}
		if i+2 < len(s) {
			next := s[i+2]
			m.dec(pairKey(b, next), c)
			m.inc(pairKey(n, next), w, c)
		}
		s[j] = n
		i += 2
		j++
	}
	m.length[w] = int32(j)
}

// inc adds c occurrences of pair p in word w.
func (m *merger) inc(p uint64, w int32, c int64) {
	idx, ok := m.pairs[p]
	if !ok {
		if k := len(m.free); k > 0 {
			idx = m.free[k-1]
			m.free = m.free[:k-1]
		} else {
			idx = int32(len(m.info))
			m.info = append(m.info, pairInfo{})
		}
		m.pairs[p] = idx
	}
	pi := &m.info[idx]
	pi.count += c
	if k := len(pi.words); k == 0 || pi.words[k-1] != w {
		pi.words = append(pi.words, w)
	}
	if pi.step != m.step {
		pi.step = m.step
		m.touched = append(m.touched, p)
	}
}

// dec removes c occurrences of pair p; a pair that no longer occurs is forgotten.
func (m *merger) dec(p uint64, c int64) {
	idx, ok := m.pairs[p]
	if !ok {
		if p == m.cur {
			return
		}
		panic(fmt.Sprintf("tokenize: train: pair %d,%d lost its count", p>>32, uint32(p)))
	}
	pi := &m.info[idx]
	pi.count -= c
	if pi.count == 0 {
		delete(m.pairs, p)
		m.info[idx] = pairInfo{} // drop the word list; never reuse its array
		m.free = append(m.free, idx)
	}
}

// heapEntry is a candidate merge; count may be stale.
type heapEntry struct {
	count int64
	pair  uint64
}

// pairHeap is a max-heap on (count, then smallest pair).
type pairHeap []heapEntry

func (h pairHeap) less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count > h[j].count
	}
	return h[i].pair < h[j].pair
}

func (h pairHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *pairHeap) push(e heapEntry) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *pairHeap) pop() heapEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return top
}

func (h pairHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		best := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			best = r
		}
		if !h.less(best, i) {
			return
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
}
