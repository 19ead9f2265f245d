package tokenize

import (
	"cmp"
	"math/bits"
	"slices"

	"gptkit/internal/hugemem"
)

// pairTable maps a pair of token ids to the rank of their merge: an open-addressing hash
// table with linear probing whose slots pack left id, right id and rank into one uint64
// (20 bits each), 2 slots per merge (half full): the GPT-2 table takes 0.8 MB, a quarter
// of a Go map's. Pair lookups are most of the merge loop's time, and in long pieces most
// pairs do not merge; the filter answers most of those, so few probes run on to an
// empty slot. (Before the filter, 3/2 slots per merge made pieces of 1 MB merge 20-35%
// slower than 4 did; with it, 2 slots against 4, the table no longer twice an L2 of
// 512 KB-2 MB: glued letters +10%, the mixed corpus +3%, 12 alternating rounds each,
// session s34.) Slots hold the packed pair inverted, so that a
// zero slot (what make gives, no initialising pass over the table) is an empty one; an
// index is the high word of hash × size (any size, not a power of two).
//
// Under pair-rank semantics (HF merges lists) a rank names one merge, and the id it
// makes and its pair are looked up by rank in mergedByRank, leftByRank and rightByRank;
// under tiktoken's a rank is the id made (and several pairs make one id), and those
// are nil.
type pairTable struct {
	slots []uint64 // ^(left<<40 | right<<20 | rank), or 0
	// filter has a bit per hash of a merge's pair (pairFilterBits): most pairs looked
	// up are no merge (in long pieces, in random text), and this 128 KB bit set, which
	// stays in the core's cache, answers them without a probe of the table.
	filter                  []uint64
	mergedByRank            []uint32
	leftByRank, rightByRank []uint32
}

// pairMerge is one merge: the pair (left, right) of token ids merges at rank into id.
type pairMerge struct{ left, right, rank, id uint32 }

const (
	pairBits  = 20
	pairLimit = 1<<pairBits - 1 // ids and ranks must be below this
	pairMask  = pairLimit
)

func mergePairKey(left, right uint32) uint64 { return uint64(left)<<pairBits | uint64(right) }

// slotOf maps a hash to one of size slots (the high word of hash × size).
func slotOf(hash uint64, size int) uint64 {
	hi, _ := bits.Mul64(hash, uint64(size))
	return hi
}

func pairHash(key uint64) uint64 { return key * 0x9E3779B97F4A7C15 }

// newPairTable builds the table of merges (distinct pairs; ids and ranks below
// pairLimit). byRank: keep the by-rank arrays (pair-rank semantics).
func newPairTable(merges []pairMerge, byRank bool) *pairTable {
	size := 2*len(merges) + 1
	pt := &pairTable{slots: hugemem.Make[uint64](size), filter: hugemem.Make[uint64](1 << pairFilterBits / 64)}
	if byRank {
		maxRank := -1
		for _, m := range merges {
			maxRank = max(maxRank, int(m.rank))
		}
		pt.mergedByRank = make([]uint32, maxRank+1)
		pt.leftByRank = make([]uint32, maxRank+1)
		pt.rightByRank = make([]uint32, maxRank+1)
	}
	for _, m := range sortedByHome(len(merges), size, func(i int) pairMerge { return merges[i] }, func(m *pairMerge) uint64 {
		return slotOf(pairHash(mergePairKey(m.left, m.right)), size)
	}) {
		key := mergePairKey(m.left, m.right)
		i := slotOf(pairHash(key), size)
		for pt.slots[i] != 0 {
			if i++; i == uint64(size) {
				i = 0
			}
		}
		pt.slots[i] = ^(key<<pairBits | uint64(m.rank))
		f := pairFilterIndex(key)
		pt.filter[f>>6] |= 1 << (f & 63)
		if byRank {
			pt.mergedByRank[m.rank], pt.leftByRank[m.rank], pt.rightByRank[m.rank] = m.id, m.left, m.right
		}
	}
	return pt
}

// sortedByHome returns the items item(0..n-1) sorted by home(item), their first slot
// in a table of size slots, to within a bucket of about size/4096 (a counting sort,
// stable): inserted in that order, the writes to a table much larger than the caches
// stay near each other, and the items are read in order (inserting 446,189 o200k pairs
// in id order cost ~35 ms of cache misses; a permutation of indexes, read through,
// left a miss per item; making each item again for the second pass, instead of
// keeping them, took longer).
func sortedByHome[E any](n, size int, item func(i int) E, home func(*E) uint64) []E {
	shift := max(bits.Len(uint(size))-12, 0)
	count := make([]int32, size>>shift+2)
	homes := make([]uint32, n)
	items := make([]E, n)
	for i := range n {
		items[i] = item(i)
		h := uint32(home(&items[i]) >> shift)
		homes[i] = h
		count[h+1]++
	}
	for b := 1; b < len(count); b++ {
		count[b] += count[b-1]
	}
	out := make([]E, n)
	for i, h := range homes {
		out[count[h]] = items[i]
		count[h]++
	}
	return out
}

const pairFilterBits = 20

func pairFilterIndex(key uint64) uint64 { return key * 0xC2B2AE3D27D4EB4F >> (64 - pairFilterBits) }

// get returns the rank of merging (left, right), or noRank.
func (pt *pairTable) get(left, right uint32) uint32 {
	key := mergePairKey(left, right)
	if f := pairFilterIndex(key); pt.filter[f>>6]&(1<<(f&63)) == 0 {
		return noRank
	}
	size := uint64(len(pt.slots))
	for i := slotOf(pairHash(key), len(pt.slots)); ; {
		s := pt.slots[i]
		if ^s>>pairBits == key {
			return uint32(^s & pairMask)
		}
		if s == 0 {
			return noRank
		}
		if i++; i == size {
			i = 0
		}
	}
}

// made returns the id that the merge of rank makes.
func (pt *pairTable) made(rank uint32) uint32 {
	if pt.mergedByRank == nil {
		return rank // tiktoken: the rank is the id
	}
	return pt.mergedByRank[rank]
}

// all returns the merges in the table by rank, then left and right id.
func (pt *pairTable) all() []pairMerge {
	var ms []pairMerge
	pt.each(func(left, right, rank, id uint32) { ms = append(ms, pairMerge{left, right, rank, id}) })
	slices.SortFunc(ms, func(a, b pairMerge) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.left, b.left), cmp.Compare(a.right, b.right))
	})
	return ms
}

// each calls f for every merge in the table.
func (pt *pairTable) each(f func(left, right, rank, id uint32)) {
	for _, s := range pt.slots {
		if s != 0 {
			s = ^s
			rank := uint32(s & pairMask)
			f(uint32(s>>(2*pairBits)), uint32(s>>pairBits&pairMask), rank, pt.made(rank))
		}
	}
}
