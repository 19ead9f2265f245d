package tokenize

import "testing"

// TestBytePairs checks the byte pair table against the lookups the merge loops would
// make for each pair of bytes (pairRank of their tokens; rankOf of the two bytes).
func TestBytePairs(t *testing.T) {
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		tok := sharedTokenizer(t, name)
		bp := tok.bytePairs()
		for i := range bp {
			b0, b1 := byte(i), byte(i>>8)
			want := uint32(noRank)
			switch {
			case tok.mergeSemantics == "ranks":
				want = tok.rankOf(string([]byte{b0, b1}), 0, 2)
			case tok.byteIDs[b0] >= 0 && tok.byteIDs[b1] >= 0:
				want, _ = tok.pairRank(uint32(tok.byteIDs[b0]), uint32(tok.byteIDs[b1]))
			}
			if got := bp.rank(b0, b1); got != want {
				t.Fatalf("%s: rank of bytes %#x %#x: %d, want %d", name, b0, b1, got, want)
			}
		}
	}
}
