package tokenize

import "math/bits"

// prefixTable finds the longest token a text starts with at a position, for the
// backtracking encoder (bpe_backtrack.go): every prefix of up to 16 bytes of the tokens
// it holds, by its pieceKey (two words, the length folded in), in two open-addressing
// tables as vocabTable has; prefixes of the longer tokens in a map.
//
// Performance note: a trie walked node by node (an edge table keyed by node and byte)
// makes each step's load wait for the one before, a cache miss each on a 1 MB run of
// letters (98,000 edges in a 2 MB table for GPT-2). Keyed by the prefix itself, the
// loads of a walk depend only on the text, so the processor issues the next lengths'
// loads before the first returns.
type prefixTable struct {
	// one[b]: the token of byte b or -1; two[b0 | b1<<8]: the prefix of two bytes
	// (twoPrefix | its token's id, or twoNoToken; 0: not a prefix). Both stay in cache.
	one   [256]int32
	two   []uint32
	short []prefixSlot     // prefixes of 3-8 bytes
	long  []prefixLongSlot // 9-16 bytes
	// Prefixes of more than 16 bytes (tokens of runs of one character, mostly), by
	// bytes: the same values.
	more      map[string]uint64
	shortMask uint64
	longMask  uint64
}

type prefixSlot struct{ ikey, val uint64 } // ikey: ^key (0: empty)
type prefixLongSlot struct{ lo, hi, val uint64 }

// A prefix's value: prefixHit | the id of the token it is, or of none (prefixNoToken);
// prefixLonger on a prefix of 16 bytes that longer tokens start with. 0: not a prefix.
const (
	twoPrefix     = 1 << 31
	twoNoToken    = 1<<24 - 1
	prefixHit     = 1 << 40
	prefixLonger  = 1 << 41
	prefixNoToken = 0xFFFFFFFF
)

func prefixHashShort(key uint64) uint64   { return key * 0x9E3779B97F4A7C15 }
func prefixHashLong(lo, hi uint64) uint64 { return (lo ^ hi*0xC2B2AE3D27D4EB4F) * 0x9E3779B97F4A7C15 }

// newPrefixTable builds the table of the prefixes of tokens (ids into vocab). A prefix
// without a pieceKey (8 or 16 bytes ending in 0xF8-0xFF, see keyable) is left out:
// longest gives up on a text that holds one.
func newPrefixTable(vocab []string, ids []int) *prefixTable {
	// The prefixes' values gathered by key (pieceKey for 3-16 bytes) rather than in
	// one map keyed by the prefix string: hashing ~200,000 strings made building the
	// table ~4.5% of `tokenize run`'s CPU on 100 MB.
	var one [256]uint64
	two := make([]uint64, 1<<16)
	short := map[uint64]uint64{}
	long := map[[2]uint64]uint64{}
	unkeyed := map[string]bool{} // of 3-16 bytes, counted for the tables' sizes
	pt := &prefixTable{more: map[string]uint64{}, two: make([]uint32, 1<<16)}
	for _, id := range ids {
		tok := vocab[id]
		for n := 1; n <= len(tok); n++ {
			pre := tok[:n]
			switch {
			case n == 1:
				one[pre[0]] = prefixValue(one[pre[0]], n, id, len(tok))
			case n == 2:
				i := uint32(pre[0]) | uint32(pre[1])<<8
				two[i] = prefixValue(two[i], n, id, len(tok))
			case n > 16:
				pt.more[pre] = prefixValue(pt.more[pre], n, id, len(tok))
			case !keyable(pre):
				unkeyed[pre] = true
			case n <= 8:
				key, _ := pieceKey(pre, 0, n)
				short[key] = prefixValue(short[key], n, id, len(tok))
			default:
				var k [2]uint64
				k[0], k[1] = pieceKey(pre, 0, n)
				long[k] = prefixValue(long[k], n, id, len(tok))
			}
		}
	}
	nShort, nLong := len(short), len(long)
	for pre := range unkeyed {
		if len(pre) <= 8 {
			nShort++
		} else {
			nLong++
		}
	}
	for b := range pt.one {
		pt.one[b] = -1
		if v := one[b]; v != 0 && uint32(v) != prefixNoToken {
			pt.one[b] = int32(uint32(v))
		}
	}
	for i, v := range two {
		if v != 0 {
			id := uint32(v) & twoNoToken // ids are below 1<<24 - 1 (newBacktrack)
			pt.two[i] = twoPrefix | id
		}
	}
	shortSize := 1 << bits.Len(uint(2*nShort))
	longSize := 1 << bits.Len(uint(2*nLong))
	pt.short, pt.shortMask = make([]prefixSlot, shortSize), uint64(shortSize-1)
	pt.long, pt.longMask = make([]prefixLongSlot, longSize), uint64(longSize-1)
	for key, v := range short {
		i := prefixHashShort(key) >> 40 & pt.shortMask
		for pt.short[i].ikey != 0 {
			i = (i + 1) & pt.shortMask
		}
		pt.short[i] = prefixSlot{^key, v}
	}
	for k, v := range long {
		lo, hi := k[0], k[1]
		i := prefixHashLong(lo, hi) >> 40 & pt.longMask
		for pt.long[i].val != 0 {
			i = (i + 1) & pt.longMask
		}
		pt.long[i] = prefixLongSlot{lo, hi, v}
	}
	return pt
}

// prefixValue is the value v of a prefix of n bytes (0: none yet) updated for a token
// id of size bytes that it begins.
func prefixValue(v uint64, n, id, size int) uint64 {
	if v == 0 {
		v = prefixHit | prefixNoToken
	}
	if n == size {
		v = v&^0xFFFFFFFF | uint64(id)
	}
	if n == 16 && size > 16 {
		v |= prefixLonger
	}
	return v
}

func (pt *prefixTable) findShort(key uint64) uint64 {
	for i := prefixHashShort(key) >> 40 & pt.shortMask; ; i = (i + 1) & pt.shortMask {
		if s := &pt.short[i]; s.ikey == ^key || s.ikey == 0 {
			return s.val
		}
	}
}

func (pt *prefixTable) findLong(lo, hi uint64) uint64 {
	for i := prefixHashLong(lo, hi) >> 40 & pt.longMask; ; i = (i + 1) & pt.longMask {
		if s := &pt.long[i]; s.lo == lo && s.hi == hi || s.val == 0 {
			return s.val
		}
	}
}

// longest returns the longest token p[pos:] starts with (-1 if none), or -2 if p holds
// a byte there that no pieceKey tells apart (0xF8-0xFF, never in UTF-8).
func (pt *prefixTable) longest(p string, pos int) int32 {
	var w0, w1 uint64
	if pos+16 <= len(p) {
		w0, w1 = pieceKey(p, pos, 16)
	} else {
		w0, w1 = pieceKey(p, pos, len(p)-pos) // the key of the rest: only its bytes are used
	}
	lim := min(len(p)-pos, 16)
	best := pt.one[p[pos]]
	if lim < 2 {
		return best
	}
	v2 := pt.two[uint16(w0)]
	if v2 == 0 {
		return best
	}
	if v2&twoNoToken != twoNoToken {
		best = int32(v2 & twoNoToken)
	}
	for n := 3; n <= lim; n++ {
		var v uint64
		if n <= 8 {
			if n == 8 && w0>>56 >= 0xF8 {
				return -2
			}
			v = pt.findShort(w0&loMask[n] | loMark[n])
		} else {
			if n == 16 && w1>>56 >= 0xF8 {
				return -2
			}
			v = pt.findLong(w0, w1&hiMask[n]|hiMark[n])
		}
		if v == 0 {
			return best
		}
		if uint32(v) != prefixNoToken {
			best = int32(uint32(v))
		}
		if n == 16 && v&prefixLonger != 0 {
			return pt.longestMore(p, pos, best)
		}
	}
	return best
}

// longestMore continues longest past 16 bytes, through the map.
func (pt *prefixTable) longestMore(p string, pos int, best int32) int32 {
	for end := pos + 17; end <= len(p); end++ {
		v, ok := pt.more[p[pos:end]]
		if !ok {
			break
		}
		if uint32(v) != prefixNoToken {
			best = int32(uint32(v))
		}
	}
	return best
}
