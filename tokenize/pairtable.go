package tokenize

import "math/bits"

// pairTable maps a pair of token ids to (rank, merged id): an open-addressing hash table
// with linear probing over uint64 keys. It is several times faster than a Go map here,
// and pair lookups are most of the merge loop's time.
type pairTable struct {
	slots []pairSlot
	mask  uint64
}

// pairSlot keeps key and value side by side: one cache line fetch per probe.
type pairSlot struct {
	key uint64 // left<<32|right, emptyPair if unused
	val uint64 // rank<<32|id
}

const emptyPair = ^uint64(0)

func newPairTable(n int) *pairTable {
	size := 1 << bits.Len(uint(n*2+1))
	pt := &pairTable{slots: make([]pairSlot, size), mask: uint64(size - 1)}
	for i := range pt.slots {
		pt.slots[i].key = emptyPair
	}
	return pt
}

func pairHash(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> 20 }

// put stores v for k unless k is present; it reports whether it stored.
func (pt *pairTable) put(k, v uint64) bool {
	for i := pairHash(k) & pt.mask; ; i = (i + 1) & pt.mask {
		switch pt.slots[i].key {
		case emptyPair:
			pt.slots[i] = pairSlot{k, v}
			return true
		case k:
			return false
		}
	}
}

func (pt *pairTable) get(k uint64) (uint64, bool) {
	for i := pairHash(k) & pt.mask; ; i = (i + 1) & pt.mask {
		switch sl := &pt.slots[i]; sl.key {
		case k:
			return sl.val, true
		case emptyPair:
			return 0, false
		}
	}
}
