package tokenize

import "math/bits"

// pairTable maps a pair of token ids to (rank, merged id): an open-addressing hash table
// with linear probing over uint64 keys. It is several times faster than a Go map here,
// and pair lookups are most of the merge loop's time.
type pairTable struct {
	keys []uint64 // left<<32|right, emptyPair if unused
	vals []uint64 // rank<<32|id
	mask uint64
}

const emptyPair = ^uint64(0)

func newPairTable(n int) *pairTable {
	size := 1 << bits.Len(uint(n*2+1))
	pt := &pairTable{keys: make([]uint64, size), vals: make([]uint64, size), mask: uint64(size - 1)}
	for i := range pt.keys {
		pt.keys[i] = emptyPair
	}
	return pt
}

func pairHash(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> 20 }

// put stores v for k unless k is present; it reports whether it stored.
func (pt *pairTable) put(k, v uint64) bool {
	for i := pairHash(k) & pt.mask; ; i = (i + 1) & pt.mask {
		switch pt.keys[i] {
		case emptyPair:
			pt.keys[i], pt.vals[i] = k, v
			return true
		case k:
			return false
		}
	}
}

func (pt *pairTable) get(k uint64) (uint64, bool) {
	for i := pairHash(k) & pt.mask; ; i = (i + 1) & pt.mask {
		switch pt.keys[i] {
		case k:
			return pt.vals[i], true
		case emptyPair:
			return 0, false
		}
	}
}
