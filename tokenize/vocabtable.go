package tokenize

import "gptkit/internal/hugemem"

// vocabTable finds a vocabulary token of at most 16 bytes by its bytes, read from the
// text as two words with the length folded in (pieceKey): the first stop of every piece
// of up to 16 bytes that the front cache does not hold, since most pieces of real text
// are one token. Two open-addressing tables with linear probing, at most
// half full: 16-byte slots for tokens of up to 8 bytes, 32-byte slots for 9 to 16. No
// pointers, so the garbage collector does not scan it. (Buckets of four slots compared
// without branches were slower: see docs/tokenizer-performance.md.) A bit set with a bit
// per hash of each token's key (vocabFilterBits, 128 KB, one hash) answers most keys that
// are no token (pieces of several tokens, tiktoken's pairs that do not merge) without a
// probe of the tables, which miss the core's cache on random text.
type vocabTable struct {
	short  []shortSlot
	long   []longSlot
	filter []uint64
}

// vocabFilterBits: the filter's bit of a key is the top bits of the hash that also
// places it in its table, so the filter is written in the tables' (slot) order at load
// (o200k's 200,000 tokens in random order cost ~2 ms of cache misses) and find hashes once.
const vocabFilterBits = 20

func (v *vocabTable) addFilter(hash uint64) {
	f := hash >> (64 - vocabFilterBits)
	v.filter[f>>6] |= 1 << (f & 63)
}

// inFilter reports whether a key of this hash may be in the tables.
func (v *vocabTable) inFilter(hash uint64) bool {
	f := hash >> (64 - vocabFilterBits)
	return v.filter[f>>6]&(1<<(f&63)) != 0
}

// shortSlot holds a piece of 1-8 bytes: ikey is its pieceKey's lo inverted (^key), so
// that a zero slot, as make gives it, is an empty one (no piece of valid UTF-8 has key
// ^0: its last byte would be 0xFF; tokens that do are left out of the tables, see
// keyable); val its ids (shortVal).
type shortSlot struct{ ikey, val uint64 }

// longSlot holds a token of 9-16 bytes: its pieceKey words and val as in shortSlot
// (val 0 in an empty slot).
type longSlot struct{ lo, hi, val, _ uint64 }

// shortVal packs one to three ids (frontIDs): id0 in bits 0-19, id1 in bits 20-39, id2
// in bits 40-59, the count in bits 60-61.
func shortVal(ids []uint32) uint64 {
	v := uint64(len(ids))<<60 | uint64(ids[0])
	for k := 1; k < len(ids); k++ {
		v |= uint64(ids[k]) << (idBits * k)
	}
	return v
}

// frontIDs is the most ids a front cache slot holds (shortVal).
const frontIDs = 3

// shortIndex hashes a key to a slot of a table of mask+1 slots (the front cache): the
// bits from 40 up of a multiplicative hash (a constant shift: a variable one ties up CX
// on amd64, and the hot loop runs short of registers).
func shortIndex(key, mask uint64) uint64 { return key * 0x9E3779B97F4A7C15 >> 40 & mask }

func hashShort(key uint64) uint64   { return key * 0x9E3779B97F4A7C15 }
func hashLong(lo, hi uint64) uint64 { return (lo ^ hi*0xC2B2AE3D27D4EB4F) * 0x9E3779B97F4A7C15 }

// newVocabTable builds the table of the tokens vocab[id] ("" for ids that are not
// tokens) and returns it with a map of the tokens it cannot hold (longer than 16 bytes,
// or not keyable), so that the two find every token. Each table has two slots per
// token.
func newVocabTable(vocab *tokenStrings) (*vocabTable, map[string]uint32) {
	short, long := make([]uint32, 0, vocab.len()), make([]uint32, 0, vocab.len()/2)
	var restIDs []uint32
	for id := range vocab.len() {
		tok := vocab.at(id)
		switch {
		case tok == "":
		case len(tok) > 16 || !keyable(tok):
			restIDs = append(restIDs, uint32(id))
		case len(tok) <= 8:
			short = append(short, uint32(id))
		default:
			long = append(long, uint32(id))
		}
	}
	rest := make(map[string]uint32, len(restIDs))
	for _, id := range restIDs {
		rest[vocab.at(int(id))] = id
	}
	v := &vocabTable{short: hugemem.Make[shortSlot](2*len(short) + 1), long: hugemem.Make[longSlot](2*len(long) + 1),
		filter: hugemem.Make[uint64](1 << vocabFilterBits / 64)}
	// Both tables are filled in home order (sortedByHome), reading the tokens' keys in
	// that order too: in id order each insert was a cache miss (o200k_base's load took a
	// third longer).
	type shortItem struct {
		key uint64
		id  uint32
	}
	shortAt := func(i int) shortItem {
		tok := vocab.at(int(short[i]))
		key, _ := pieceKey(tok, 0, len(tok))
		return shortItem{key, short[i]}
	}
	size := uint64(len(v.short))
	for _, it := range sortedByHome(len(short), len(v.short), shortAt, func(it *shortItem) uint64 { return slotOf(hashShort(it.key), len(v.short)) }) {
		i := slotOf(hashShort(it.key), len(v.short))
		for v.short[i].ikey != 0 {
			if i++; i == size {
				i = 0
			}
		}
		v.short[i] = shortSlot{^it.key, shortVal([]uint32{it.id})}
		v.addFilter(hashShort(it.key))
	}
	type longItem struct {
		lo, hi uint64
		id     uint32
	}
	longAt := func(i int) longItem {
		tok := vocab.at(int(long[i]))
		lo, hi := pieceKey(tok, 0, len(tok))
		return longItem{lo, hi, long[i]}
	}
	size = uint64(len(v.long))
	for _, it := range sortedByHome(len(long), len(v.long), longAt, func(it *longItem) uint64 { return slotOf(hashLong(it.lo, it.hi), len(v.long)) }) {
		i := slotOf(hashLong(it.lo, it.hi), len(v.long))
		for v.long[i].val != 0 {
			if i++; i == size {
				i = 0
			}
		}
		v.long[i] = longSlot{lo: it.lo, hi: it.hi, val: shortVal([]uint32{it.id})}
		v.addFilter(hashLong(it.lo, it.hi))
	}
	return v, rest
}

// find returns the shortVal of the token of n bytes whose pieceKey is lo, hi, or 0.
func (v *vocabTable) find(lo, hi uint64, n int) uint64 {
	if n <= 8 {
		h := hashShort(lo)
		if !v.inFilter(h) {
			return 0
		}
		size := uint64(len(v.short))
		for i := slotOf(h, len(v.short)); ; {
			if s := &v.short[i]; s.ikey == ^lo || s.ikey == 0 {
				return s.val
			}
			if i++; i == size {
				i = 0
			}
		}
	}
	h := hashLong(lo, hi)
	if !v.inFilter(h) {
		return 0
	}
	size := uint64(len(v.long))
	for i := slotOf(h, len(v.long)); ; {
		if s := &v.long[i]; s.lo == lo && s.hi == hi || s.val == 0 {
			return s.val
		}
		if i++; i == size {
			i = 0
		}
	}
}
