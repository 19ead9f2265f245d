package tokenize

import "math/bits"

// vocabTable finds a vocabulary token of at most 16 bytes by its bytes, read from the
// text as two words with the length folded in (pieceKey): the first stop of every piece
// of up to 16 bytes that the front cache does not hold, since most pieces of real text
// are one token. Two open-addressing tables with linear probing, at most
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

// newVocabTable builds the table of the tokens vocab[id] ("" for ids that are not
// tokens) and returns it with a map of the tokens it cannot hold (longer than 16 bytes,
// or not keyable), so that the two find every token.
func newVocabTable(vocab []string) (*vocabTable, map[string]uint32) {
	var short, long []uint32
	rest := map[string]uint32{}
	for id, tok := range vocab {
		switch {
		case tok == "":
		case len(tok) > 16 || !keyable(tok):
			rest[tok] = uint32(id)
		case len(tok) <= 8:
			short = append(short, uint32(id))
		default:
			long = append(long, uint32(id))
		}
	}
	v := &vocabTable{
		short: make([]shortSlot, 1<<bits.Len(uint(2*len(short)))),
		long:  make([]longSlot, 1<<bits.Len(uint(2*len(long)))),
	}
	for i := range v.short {
		v.short[i].key = emptyKey
	}
	shortMask, longMask := uint64(len(v.short)-1), uint64(len(v.long)-1)
	keys := make([]uint64, len(short))
	for i, id := range short {
		keys[i], _ = pieceKey(vocab[id], 0, len(vocab[id]))
	}
	for _, k := range homeOrder(len(short), len(v.short), func(i int) uint64 { return shortIndex(keys[i], shortMask) }) {
		key := keys[k]
		i := shortIndex(key, shortMask)
		for v.short[i].key != emptyKey {
			i = (i + 1) & shortMask
		}
		v.short[i] = shortSlot{key, shortVal([]uint32{short[k]})}
	}
	for _, id := range long {
		lo, hi := pieceKey(vocab[id], 0, len(vocab[id]))
		i := longIndex(lo, hi, longMask)
		for v.long[i].val != 0 {
			i = (i + 1) & longMask
		}
		v.long[i] = longSlot{lo: lo, hi: hi, val: shortVal([]uint32{id})}
	}
	return v, rest
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
