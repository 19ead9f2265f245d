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

const (
	pairBits  = 20
	pairLimit = 1<<pairBits - 1 // ids and ranks must be below this
	pairMask  = pairLimit
	emptySlot = ^uint64(0)
)

func newPairTable(n int) *pairTable {
	size := 1 << bits.Len(uint(n+n/2+1))
	pt := &pairTable{slots: make([]uint64, size), mask: uint64(size - 1)}
	for i := range pt.slots {
		pt.slots[i] = emptySlot
	}
	return pt
}

func mergePairKey(left, right uint32) uint64 { return uint64(left)<<pairBits | uint64(right) }

func pairHash(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> 24 }

// put stores the merge of (left, right) with rank making id, unless the pair is present;
// it reports whether it stored. Callers check that ids and ranks are below pairLimit.
func (pt *pairTable) put(left, right, rank, id uint32) bool {
	key := mergePairKey(left, right)
	for i := pairHash(key) & pt.mask; ; i = (i + 1) & pt.mask {
		switch s := pt.slots[i]; {
		case s == emptySlot:
			pt.slots[i] = key<<pairBits | uint64(rank)
			for len(pt.mergedByRank) <= int(rank) {
				pt.mergedByRank = append(pt.mergedByRank, 0)
				pt.leftByRank = append(pt.leftByRank, 0)
				pt.rightByRank = append(pt.rightByRank, 0)
			}
			pt.mergedByRank[rank], pt.leftByRank[rank], pt.rightByRank[rank] = id, left, right
			return true
		case s>>pairBits == key:
			return false
		}
	}
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
