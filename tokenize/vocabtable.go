package tokenize

import "math/bits"

// vocabTable finds a vocabulary token of at most 16 bytes by its bytes, read from the
// text as two words with the length folded in (pieceKey): the first stop of every piece
// of up to 16 bytes, since most pieces of real text are one token. It holds only tokens
// that a piece equal to them encodes to (all of them, unless the merges cannot rebuild
// some: Tokenizer.wholeBad). Two open-addressing tables with linear probing, at most
// half full: 16-byte slots for tokens of up to 8 bytes, 32-byte slots for 9 to 16. No
// pointers, so the garbage collector does not scan it. (Buckets of four slots compared
// without branches were slower: see docs/tokenizer-performance.md.)
type vocabTable struct {
	short []shortSlot // len a power of two
	long  []longSlot  // len a power of two
}

// shortSlot holds a piece of 1-8 bytes: key is its pieceKey's lo (emptyKey in an empty
// slot), val its one or two ids (see shortVal).
type shortSlot struct{ key, val uint64 }

// longSlot holds a token of 9-16 bytes: its pieceKey words and val as in shortSlot
// (val 0 in an empty slot).
type longSlot struct{ lo, hi, val, _ uint64 }

// emptyKey marks an empty shortSlot. No piece of valid UTF-8 has it as its key (its
// last byte would be 0xFF); tokens that do are left out of the tables (keyable).
const emptyKey = ^uint64(0)

// shortVal packs one or two ids: id0 in bits 0-19, id1 in bits 20-39, the count in
// bits 40-41.
func shortVal(ids []uint32) uint64 {
	v := uint64(len(ids))<<40 | uint64(ids[0])
	if len(ids) == 2 {
		v |= uint64(ids[1]) << idBits
	}
	return v
}

// shortIndex and longIndex hash a key to a slot of a table of mask+1 slots: the bits
// from 40 up of a multiplicative hash (a constant shift: a variable one ties up CX on
// amd64, and the hot loop runs short of registers).
func shortIndex(key, mask uint64) uint64 { return key * 0x9E3779B97F4A7C15 >> 40 & mask }
func longIndex(lo, hi, mask uint64) uint64 {
	return (lo ^ hi*0xC2B2AE3D27D4EB4F) * 0x9E3779B97F4A7C15 >> 40 & mask
}

// newVocabTable builds the table of the tokens vocab[id] for which keep(id) holds.
func newVocabTable(vocab []string, keep func(id int) bool) *vocabTable {
	var nShort, nLong int
	for id, tok := range vocab {
		if tok != "" && len(tok) <= 16 && keep(id) {
			if len(tok) <= 8 {
				nShort++
			} else {
				nLong++
			}
		}
	}
	v := &vocabTable{}
	v.short = make([]shortSlot, 1<<bits.Len(uint(2*nShort)))
	for i := range v.short {
		v.short[i].key = emptyKey
	}
	v.long = make([]longSlot, 1<<bits.Len(uint(2*nLong)))
	for id, tok := range vocab {
		if tok == "" || len(tok) > 16 || !keep(id) || !keyable(tok) {
			continue
		}
		lo, hi := pieceKey(tok, 0, len(tok))
		val := shortVal([]uint32{uint32(id)})
		if len(tok) <= 8 {
			mask := uint64(len(v.short) - 1)
			i := shortIndex(lo, mask)
			for v.short[i].key != emptyKey {
				i = (i + 1) & mask
			}
			v.short[i] = shortSlot{lo, val}
		} else {
			mask := uint64(len(v.long) - 1)
			i := longIndex(lo, hi, mask)
			for v.long[i].val != 0 {
				i = (i + 1) & mask
			}
			v.long[i] = longSlot{lo: lo, hi: hi, val: val}
		}
	}
	return v
}

// find returns the shortVal of the token of n bytes whose pieceKey is lo, hi, or 0.
func (v *vocabTable) find(lo, hi uint64, n int) uint64 {
	if n <= 8 {
		mask := uint64(len(v.short) - 1)
		for i := shortIndex(lo, mask); ; i = (i + 1) & mask {
			if s := &v.short[i]; s.key == lo || s.key == emptyKey {
				return s.val
			}
		}
	}
	mask := uint64(len(v.long) - 1)
	for i := longIndex(lo, hi, mask); ; i = (i + 1) & mask {
		if s := &v.long[i]; s.lo == lo && s.hi == hi || s.val == 0 {
			return s.val
		}
	}
}
