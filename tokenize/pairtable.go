package tokenize

import "math/bits"

// pairTable maps a pair of token ids to the rank of their merge: an open-addressing hash
// table with linear probing whose slots pack left id, right id and rank into one uint64
// (20 bits each), so the GPT-2 table takes 1 MiB instead of the 4+ MiB of a Go map.
// The id a merge makes is looked up by rank in mergedByRank. Pair lookups are most of
// the merge loop's time and mostly cache misses; a smaller table misses less.
type pairTable struct {
	slots        []uint64 // left<<40 | right<<20 | rank, or emptySlot
	mask         uint64
	mergedByRank []uint32
	// The pair each rank merges; meaningful under pair-rank semantics, where a rank
	// names one pair (mergeLong's bucket queue relies on it).
	leftByRank, rightByRank []uint32
}

// pairMerge is one merge: the pair (left, right) of token ids merges at rank into id.
type pairMerge struct{ left, right, rank, id uint32 }

const (
	pairBits  = 20
	pairLimit = 1<<pairBits - 1 // ids and ranks must be below this
	pairMask  = pairLimit
	emptySlot = ^uint64(0)
)

func mergePairKey(left, right uint32) uint64 { return uint64(left)<<pairBits | uint64(right) }

func pairHash(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> 24 }

// newPairTable builds the table of merges, at most two thirds full. The pairs must be
// distinct; ids and ranks below pairLimit.
func newPairTable(merges []pairMerge) *pairTable {
	size := 1 << bits.Len(uint(len(merges)+len(merges)/2+1))
	pt := &pairTable{slots: make([]uint64, size), mask: uint64(size - 1)}
	for i := range pt.slots {
		pt.slots[i] = emptySlot
	}
	maxRank := -1
	for _, m := range merges {
		maxRank = max(maxRank, int(m.rank))
	}
	pt.mergedByRank = make([]uint32, maxRank+1)
	pt.leftByRank = make([]uint32, maxRank+1)
	pt.rightByRank = make([]uint32, maxRank+1)
	for _, k := range homeOrder(len(merges), size, func(i int) uint64 {
		m := merges[i]
		return pairHash(mergePairKey(m.left, m.right)) & pt.mask
	}) {
		m := merges[k]
		key := mergePairKey(m.left, m.right)
		i := pairHash(key) & pt.mask
		for pt.slots[i] != emptySlot {
			i = (i + 1) & pt.mask
		}
		pt.slots[i] = key<<pairBits | uint64(m.rank)
		pt.mergedByRank[m.rank], pt.leftByRank[m.rank], pt.rightByRank[m.rank] = m.id, m.left, m.right
	}
	return pt
}

// homeOrder returns the indexes 0..n-1 in the order of home(i), their first slot in a
// table of size slots (a power of two), to within a bucket of slots/4096: inserted in
// that order, the writes to a table much larger than the caches stay near each other
// (inserting 446,189 o200k pairs in id order cost ~35 ms of cache misses).
func homeOrder(n, size int, home func(i int) uint64) []int32 {
	shift := max(bits.Len(uint(size))-1-12, 0)
	count := make([]int32, size>>shift+1)
	homes := make([]uint32, n)
	for i := range n {
		h := uint32(home(i) >> shift)
		homes[i] = h
		count[h+1]++
	}
	for b := 1; b < len(count); b++ {
		count[b] += count[b-1]
	}
	order := make([]int32, n)
	for i, h := range homes {
		order[count[h]] = int32(i)
		count[h]++
	}
	return order
}

// get returns the rank of merging (left, right), or noRank.
func (pt *pairTable) get(left, right uint32) uint32 {
	key := mergePairKey(left, right)
	for i := pairHash(key) & pt.mask; ; i = (i + 1) & pt.mask {
		s := pt.slots[i]
		if s>>pairBits == key {
			return uint32(s & pairMask)
		}
		if s == emptySlot {
			return noRank
		}
	}
}

// each calls f for every merge in the table.
func (pt *pairTable) each(f func(left, right, rank, id uint32)) {
	for _, s := range pt.slots {
		if s != emptySlot {
			rank := uint32(s & pairMask)
			f(uint32(s>>(2*pairBits)), uint32(s>>pairBits&pairMask), rank, pt.mergedByRank[rank])
		}
	}
}
