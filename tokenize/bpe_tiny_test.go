package tokenize

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// checkTinyNotToken compares mergeTinyNotToken with mergeShort on p when encodePiece
// would call it: p is no token, or one its merges do not rebuild.
func checkTinyNotToken(t *testing.T, tok *Tokenizer, st *encodeState, p string) {
	t.Helper()
	lo, hi := pieceKey(p, 0, len(p))
	if val := tok.whole.find(lo, hi, len(p)); val != 0 && (tok.wholeBad == nil || !tok.wholeBad[val&idMask]) {
		return // found whole: encodePiece returns it
	}
	got := slices.Clone(tok.mergeTinyNotToken(st, p))
	if want := tok.mergeShort(st, p); !slices.Equal(got, want) {
		t.Fatalf("%s: piece %q: mergeTinyNotToken %v, mergeShort %v", tok.name, p, got, want)
	}
}

// TestMergeTinyNotToken: every piece of two and three printable ASCII bytes, and random
// pieces of four (printable, and any bytes), under GPT-2 and NeoX; and every piece of
// two to four bytes over the alphabet of a small vocabulary with a token its merges do
// not rebuild and bytes it lacks.
func TestMergeTinyNotToken(t *testing.T) {
	for _, name := range []string{"gpt2", "neox-20b"} {
		tok := sharedTokenizer(t, name)
		st := tok.getState()
		var b [4]byte
		for b[0] = ' '; b[0] <= '~'; b[0]++ {
			for b[1] = ' '; b[1] <= '~'; b[1]++ {
				checkTinyNotToken(t, tok, st, string(b[:2]))
				for b[2] = ' '; b[2] <= '~'; b[2]++ {
					checkTinyNotToken(t, tok, st, string(b[:3]))
				}
			}
		}
		rng := rand.New(rand.NewPCG(7, 8))
		for range 200_000 {
			for i := range b {
				b[i] = byte(' ' + rng.IntN(95))
			}
			checkTinyNotToken(t, tok, st, string(b[:]))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			checkTinyNotToken(t, tok, st, string(b[:]))
		}
		tok.putState(st)
	}

	// "abc" is a token no merge makes (wholeBad); "e" has no token.
	tiny, err := LoadHFJSON([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"d":3,"ab":4,"bc":5,"abc":6,"cd":7,"bcd":8,"aa":9},
"merges":[["b","c"],["a","b"],["c","d"],["bc","d"],["a","a"]]},"pre_tokenizer":{"type":"ByteLevel"}}`), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if tiny.wholeBad == nil {
		t.Fatal("the tiny vocabulary has no token its merges do not rebuild")
	}
	st := tiny.getState()
	defer tiny.putState(st)
	const alphabet = "abcde"
	var b [4]byte
	var walk func(n int)
	walk = func(n int) {
		if n >= 2 {
			checkTinyNotToken(t, tiny, st, string(b[:n]))
		}
		if n == len(b) {
			return
		}
		for i := range len(alphabet) {
			b[n] = alphabet[i]
			walk(n + 1)
		}
	}
	walk(0)
}
