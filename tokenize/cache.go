package tokenize

import (
	"encoding/binary"
	"unsafe"
)

// pieceCache maps the bytes of a pre-tokenized piece of at most 16 bytes to its ids. It
// is a 2-way set-associative table of 32-byte slots that hold the piece's bytes inline
// (two words, zero-padded) and up to five ids, so a hit costs one multiply, one cache
// line and three compares, and no pointer is followed. Pieces of more than five tokens
// keep their ids in arena.
//
// Each encodeState has its own (one per goroutine at a time: no locks). Memory is
// bounded: cacheSets sets, and once arena holds cacheArenaIDs ids the whole cache is
// emptied and starts over. The cache changes no id: a slot is only ever filled with
// what the merge loop gave for exactly those bytes.
type pieceCache struct {
	sets  []cacheSet
	arena []uint32
}

// cacheSet is two slots, one 64-byte cache line.
type cacheSet [2]cacheSlot

// cacheSlot holds one piece. meta packs the piece's length (bits 0-4; 0 = empty slot),
// its number of ids (bits 5-7; 0 = in the arena) and ids 0 and 1 (bits 8-27, 28-47);
// more holds ids 2-4 (20 bits each), or for the arena the offset (bits 0-31) and count
// (bits 32-63) of its ids there. Ids are below pairLimit = 2^20.
type cacheSlot struct {
	lo, hi     uint64
	meta, more uint64
}

const (
	cacheMaxLen   = 16 // longest piece the cache holds (bytes)
	cacheSetBits  = 15
	cacheSets     = 1 << cacheSetBits // 16Ki pieces, 512 KiB
	cacheArenaIDs = 1 << 16           // ids of pieces of more than 5 tokens, before a reset
	cacheInline   = 5                 // ids a slot holds
	idBits        = 20
	idMask        = 1<<idBits - 1
)

// The masks that keep the first n bytes of a piece's two words.
var loMask, hiMask = func() (lo, hi [32]uint64) {
	for n := range 17 {
		lo[n] = ^uint64(0) >> (64 - 8*min(n, 8))
		if n == 0 {
			lo[n] = 0
		}
		if n > 8 {
			hi[n] = ^uint64(0) >> (64 - 8*(n-8))
		}
	}
	return lo, hi
}()

// pieceWords returns the n ≤ 16 bytes of s from p as two little-endian words,
// zero-padded.
func pieceWords(s string, p, n int) (lo, hi uint64) {
	if p+16 <= len(s) {
		b := unsafe.Slice(unsafe.StringData(s[p:]), 16)
		return binary.LittleEndian.Uint64(b) & loMask[n&31], binary.LittleEndian.Uint64(b[8:]) & hiMask[n&31]
	}
	var buf [16]byte
	copy(buf[:], s[p:p+n])
	return binary.LittleEndian.Uint64(buf[:]), binary.LittleEndian.Uint64(buf[8:])
}

// set returns the set of the piece with words lo, hi.
func (c *pieceCache) set(lo, hi uint64) *cacheSet {
	h := (lo ^ hi*0xC2B2AE3D27D4EB4F) * 0x9E3779B97F4A7C15
	return &c.sets[h>>(64-cacheSetBits)]
}

// appendSlot appends the ids of a slot (found by a lookup) to dst.
func (c *pieceCache) appendSlot(s *cacheSlot, dst []int) []int {
	m := s.meta
	n := int(m >> 5 & 7)
	if n == 0 {
		off, cnt := uint32(s.more), uint32(s.more>>32)
		for _, id := range c.arena[off : off+cnt] {
			dst = append(dst, int(id))
		}
		return dst
	}
	dst = append(dst, int(m>>8&idMask))
	if n > 1 {
		dst = append(dst, int(m>>28&idMask))
		for k := 2; k < n; k++ {
			dst = append(dst, int(s.more>>(idBits*(k-2))&idMask))
		}
	}
	return dst
}

// put stores the ids of the piece with words lo, hi and length n (1 to 16).
func (c *pieceCache) put(lo, hi uint64, n int, ids []uint32) {
	if c.sets == nil {
		c.sets = make([]cacheSet, cacheSets)
	}
	sl := cacheSlot{lo: lo, hi: hi, meta: uint64(n)}
	if len(ids) <= cacheInline {
		sl.meta |= uint64(len(ids)) << 5
		for k, id := range ids {
			if k < 2 {
				sl.meta |= uint64(id) << (8 + idBits*k)
			} else {
				sl.more |= uint64(id) << (idBits * (k - 2))
			}
		}
	} else {
		if len(c.arena)+len(ids) > cacheArenaIDs {
			clear(c.sets)
			c.arena = c.arena[:0]
		}
		sl.more = uint64(len(c.arena)) | uint64(len(ids))<<32
		c.arena = append(c.arena, ids...)
	}
	set := c.set(lo, hi)
	switch {
	case set[0].meta == 0:
		set[0] = sl
	case set[1].meta == 0:
		set[1] = sl
	default: // the older entry goes
		set[1], set[0] = set[0], sl
	}
}
