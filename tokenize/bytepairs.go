package tokenize

// bytePairTable is what the short merge loops (mergeShort, mergeRanksShort) look up the
// first ranks of a piece in, by two bytes b0, b1 (index b0 | b1<<8). Under pair-rank
// semantics (HF merges): the rank of merging the two bytes' tokens, or noRank if they
// do not merge or the vocabulary lacks one of the bytes. Under tiktoken's: the rank of
// the two bytes' token, as rankOf gives it, or noRank. 256 KB, of which text touches the
// entries of the byte pairs it holds (8,836 of printable ASCII: ~35 KB), so they stay in
// the core's cache, where the pair table (0.8 MB for GPT-2) does not. Built on a
// tokenizer's first short merge (0.6-1.2 ms; for HF files that is at load, where
// findUnreachableTokens merges every token; the compiled named tokenizers have that
// list built in), through pairRank and rankOf; TestBytePairs checks every entry against
// the lookup it replaces.
//
// Performance note: random printable ASCII (BenchmarkEncodeAdversarial's
// no-whitespace-mixed) is short pieces that no cache holds, a merge each; their first
// ranks were a pair-table probe each, most of them cache misses. With this table, and
// pieces of up to four bytes merged instead of looked up in the piece cache
// (pieceCacheMinLen), it encodes ~35% faster (GPT-2, 47 → 64 MB per CPU-second,
// interleaved rounds, 2026-11-26, Intel(R) Xeon(R) Processor, shared).
type bytePairTable [1 << 16]uint32

// bytePairs returns t's byte pair table, built on the first call.
func (t *Tokenizer) bytePairs() *bytePairTable {
	t.bytePairsOnce.Do(func() {
		bp := new(bytePairTable)
		for i := range bp {
			bp[i] = noRank
		}
		if t.mergeSemantics == "ranks" {
			// The rank of two bytes is their token's: look up the tokens of two bytes.
			for id := range t.vocab.len() {
				tok := t.vocab.at(id)
				if len(tok) == 2 {
					bp[uint16(tok[0])|uint16(tok[1])<<8] = t.rankOf(tok, 0, 2)
				}
			}
		} else {
			for b0, id0 := range t.byteIDs {
				for b1, id1 := range t.byteIDs {
					if id0 >= 0 && id1 >= 0 {
						bp[b0|b1<<8], _ = t.pairRank(uint32(id0), uint32(id1))
					}
				}
			}
		}
		t.bytePairTab = bp
	})
	return t.bytePairTab
}

// rank returns the rank of merging the tokens of bytes b0, b1 (noRank if none).
func (bp *bytePairTable) rank(b0, b1 byte) uint32 {
	return bp[uint16(b0)|uint16(b1)<<8]
}
