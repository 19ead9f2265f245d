package tokenize

import (
	"encoding/binary"
	"unsafe"

	"gptkit/internal/hugemem"
)

// pieceCache maps the key (pieceKey) of a pre-tokenized piece of at most 16 bytes that
// is not one token to its ids. It is a 2-way set-associative table of 32-byte slots
// that hold the key inline and up to five ids, so a hit costs one multiply, one cache
// line and a few compares, and no pointer is followed. Pieces of more than five tokens
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

// cacheSlot holds one piece. meta packs its number of ids (bits 0-2; 0 = in the arena),
// ids 0 and 1 (bits 8-27, 28-47) and bit 63, set in a used slot; more holds ids 2-4
// (20 bits each), or for the arena the offset (bits 0-31) and count (bits 32-63) of its
// ids there. Ids are below pairLimit = 2^20.
type cacheSlot struct {
	lo, hi     uint64
	meta, more uint64
}

const (
	cacheMaxLen = 16 // longest piece the cache holds (bytes)
	// pieceCacheMinLen is the shortest piece the piece cache holds: shorter ones (up to
	// four bytes) are merged again when the front cache has lost them (such a merge,
	// its first ranks from bytePairTable, costs less than a probe of the piece cache
	// that misses).
	pieceCacheMinLen = 5
	cacheSetBits     = 14
	cacheSets        = 1 << cacheSetBits // 32Ki pieces, 1 MiB
	cacheArenaIDs    = 1 << 16           // ids of pieces of more than 5 tokens, before a reset
	cacheInline      = 5                 // ids a slot holds
	slotUsed         = 1 << 63
	idBits           = 20
	idMask           = 1<<idBits - 1
)

// find returns the slot of the piece with key lo, hi, or nil.
func (c *pieceCache) find(lo, hi uint64) *cacheSlot {
	if c.sets == nil {
		return nil
	}
	set := &c.sets[(lo^hi*0xC2B2AE3D27D4EB4F)*0x9E3779B97F4A7C15>>(64-cacheSetBits)]
	if s := &set[0]; s.lo == lo && s.hi == hi && s.meta != 0 {
		return s
	}
	if s := &set[1]; s.lo == lo && s.hi == hi && s.meta != 0 {
		return s
	}
	return nil
}

// appendSlot appends the ids of a slot of c (found by find) to dst.
func appendSlot[T tokenID](c *pieceCache, s *cacheSlot, dst []T) []T {
	m := s.meta
	n := int(m & 7)
	if n == 0 {
		off, cnt := uint32(s.more), uint32(s.more>>32)
		for _, id := range c.arena[off : off+cnt] {
			dst = append(dst, T(id))
		}
		return dst
	}
	dst = append(dst, T(m>>8&idMask))
	if n > 1 {
		dst = append(dst, T(m>>28&idMask))
		for k := 2; k < n; k++ {
			dst = append(dst, T(s.more>>(idBits*(k-2))&idMask))
		}
	}
	return dst
}

// put stores the ids of the piece with key lo, hi.
func (c *pieceCache) put(lo, hi uint64, ids []uint32) {
	if c.sets == nil {
		c.sets = hugemem.Make[cacheSet](cacheSets)
	}
	sl := cacheSlot{lo: lo, hi: hi, meta: slotUsed}
	if len(ids) <= cacheInline {
		sl.meta |= uint64(len(ids))
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
	set := &c.sets[(lo^hi*0xC2B2AE3D27D4EB4F)*0x9E3779B97F4A7C15>>(64-cacheSetBits)]
	switch {
	case set[0].meta == 0:
		set[0] = sl
	case set[1].meta == 0:
		set[1] = sl
	default: // the older entry goes
		set[1], set[0] = set[0], sl
	}
}

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

// keyMasks is loMask, loMark, hiMask and hiMark in one array, for the assembly hot loop.
var keyMasks = [4][32]uint64{loMask, loMark, hiMask, hiMark}

// lenMark folds a piece's length into its words: the last byte of the word that
// holds the piece's end, when the piece does not fill that word, is 0xF8 | the number
// of bytes of the piece in that word. 0xF8-0xFF never occur in UTF-8, so that byte
// cannot be the last byte of a piece that fills its word, and two pieces of valid
// UTF-8 have the same key exactly when they are the same (see keyable).
var loMark, hiMark = func() (lo, hi [32]uint64) {
	for n := 1; n <= 16; n++ {
		switch {
		case n < 8:
			lo[n] = uint64(0xF8|n) << 56
		case n > 8 && n < 16:
			hi[n] = uint64(0xF8|(n-8)) << 56
		}
	}
	return lo, hi
}()

// pieceKey returns the key of the n (1 to 16) bytes of s from p: the bytes as two
// little-endian words, zero-padded, with the length folded in (lenMark).
func pieceKey(s string, p, n int) (lo, hi uint64) {
	n &= 31
	if p+16 <= len(s) {
		b := unsafe.Slice(unsafe.StringData(s[p:]), 16)
		return binary.LittleEndian.Uint64(b)&loMask[n] | loMark[n], binary.LittleEndian.Uint64(b[8:])&hiMask[n] | hiMark[n]
	}
	var buf [16]byte
	copy(buf[:], s[p:p+n])
	return binary.LittleEndian.Uint64(buf[:]) | loMark[n], binary.LittleEndian.Uint64(buf[8:]) | hiMark[n]
}

// keyable reports whether pieceKey tells piece apart from every other piece of at most
// 16 bytes, and its key is not ^0 (an empty shortSlot): it does and is not unless piece
// fills a word and that word's last byte is 0xF8 or more, which valid UTF-8 never has.
func keyable(piece string) bool {
	n := len(piece)
	return !(n == 8 || n == 16) || piece[n-1] < 0xF8
}

// frontCache is the first stop of every piece of at most 8 bytes: a direct-mapped
// table of shortSlots, one per encodeState, holding the one to three ids of the pieces
// seen lately (the vocabulary table and the merge loop fill it on a miss). It holds
// only the pieces that occur, so the hot ones are closer together than in the
// vocabulary table, and pieces of two or three tokens are found in one probe too
// (three: ~40% of the English pieces that the front cache did not hold with two).
//
// Pieces of 9 to 16 bytes (a word of 8 letters and its space) have a table of their own,
// long, of 32-byte slots.
//
// A value holds one to three ids (shortVal); the ids of a piece of four or more tokens
// are in more, after the piece's key, and its value has count 0 (bits 60-61), their
// offset in more in bits 0-31 and their number in bits 32-47 (pieces of four or more
// tokens were ~1.3% of English pieces, ~half of those that left the hot loop). When
// more is full it starts over (emptying the whole front cache instead cost the mixed
// corpus ~8%: its pieces of many tokens filled more every few MB).
type frontCache struct {
	slots []shortSlot
	long  []frontLong
	more  []uint32
	// args: the assembly hot loop's arguments (shorttokens_amd64.go), kept here so
	// that a call writes only those that change. It points into slots and long (at
	// the text, the ends and the ids only during a call).
	args shortArgs
}

// find returns the value of the piece of n bytes (1 to 16) with key lo, hi, if f
// holds it.
func (f *frontCache) find(lo, hi uint64, n int) (uint64, bool) {
	if n <= 8 {
		s := &f.slots[shortIndex(lo, 1<<frontBits-1)]
		return s.val, s.ikey == ^lo
	}
	s := &f.long[frontLongIndex(lo, hi)]
	return s.val, s.lo == lo && s.ihi == ^hi
}

// moreIDs returns the ids of the piece with key lo, hi that a front cache value of
// count 0 points to, if they are still there: more starts over when full, so each
// piece's ids follow its key there.
func (f *frontCache) moreIDs(val, lo, hi uint64) ([]uint32, bool) {
	off, n := uint32(val), uint32(val>>32)&0xFFFF
	if n == 0 || uint64(off)+4+uint64(n) > uint64(len(f.more)) { // (n 0: no value putIDs makes)
		return nil, false
	}
	m := f.more[off : off+4+n]
	if uint64(m[0])|uint64(m[1])<<32 != lo || uint64(m[2])|uint64(m[3])<<32 != hi {
		return nil, false
	}
	return m[4:], true
}

// frontMoreIDs bounds frontCache.more.
const frontMoreIDs = 1 << 16

// putIDs stores the ids of the piece of n bytes (1 to 16) with key lo, hi.
func putIDs[T tokenID](f *frontCache, lo, hi uint64, n int, ids []T) {
	var val uint64
	switch {
	case len(ids) == 0:
		return
	case len(ids) <= frontIDs:
		val = uint64(len(ids)) << 60
		for k, id := range ids {
			val |= uint64(id) << (idBits * k)
		}
	default:
		if len(f.more)+4+len(ids) > frontMoreIDs {
			f.more = f.more[:0] // values that point here now fail moreIDs's check
		}
		val = uint64(len(f.more)) | uint64(len(ids))<<32
		f.more = append(f.more, uint32(lo), uint32(lo>>32), uint32(hi), uint32(hi>>32))
		for _, id := range ids {
			f.more = append(f.more, uint32(id))
		}
	}
	if n <= 8 {
		f.put(lo, val)
	} else {
		f.putLong(lo, hi, val)
	}
}

// frontLong holds a piece of 9-16 bytes: its pieceKey words (hi inverted: an empty slot
// is zero, and no piece of valid UTF-8 has hi == ^0) and its shortVal.
type frontLong struct{ lo, ihi, val, _ uint64 }

const (
	frontBits     = 16 // 64Ki slots, 1 MiB
	frontLongBits = 14 // 16Ki slots, 512 KiB
)

func (f *frontCache) init() {
	f.slots = hugemem.Make[shortSlot](1 << frontBits)
	f.long = hugemem.Make[frontLong](1 << frontLongBits)
	f.args = shortArgs{table: unsafe.Pointer(&f.slots[0]), long: unsafe.Pointer(&f.long[0]), masks: unsafe.Pointer(&keyMasks)}
}

func (f *frontCache) put(key, val uint64) {
	f.slots[shortIndex(key, 1<<frontBits-1)] = shortSlot{^key, val}
}

// longIndex hashes the key of a 9-16 byte piece to a slot of the long table.
func frontLongIndex(lo, hi uint64) uint64 {
	return (lo ^ hi*0xC2B2AE3D27D4EB4F) * 0x9E3779B97F4A7C15 >> 40 & (1<<frontLongBits - 1)
}

func (f *frontCache) putLong(lo, hi, val uint64) {
	f.long[frontLongIndex(lo, hi)] = frontLong{lo: lo, ihi: ^hi, val: val}
}
