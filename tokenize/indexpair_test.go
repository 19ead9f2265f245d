package tokenize

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIndexPair: indexPair agrees with indexPairGo and strings.Index on texts of
// every length to 200 around the 32-byte steps, the pair at every position, at
// the end, split over a step's edge, overlapping ("aaa" for "aa") and absent.
func TestIndexPair(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 200; n++ {
		for _, alpha := range []string{"ab ", "xyz", " "} {
			for range 20 {
				b := make([]byte, n)
				for i := range b {
					b[i] = alpha[r.IntN(len(alpha))]
				}
				s := string(b)
				for _, pair := range []string{"  ", "ab", "ba", "a ", "zz"} {
					want := strings.Index(s, pair)
					if got := indexPair(s, pair[0], pair[1]); got != want {
						t.Fatalf("indexPair(%q, %q) = %d, want %d", s, pair, got, want)
					}
					if got := indexPairGo(s, pair[0], pair[1]); got != want {
						t.Fatalf("indexPairGo(%q, %q) = %d, want %d", s, pair, got, want)
					}
				}
			}
		}
		// One pair at each position in a text without one.
		for p := 0; p+1 < n; p++ {
			b := []byte(strings.Repeat("x", n))
			b[p], b[p+1] = ' ', ' '
			if got := indexPair(string(b), ' ', ' '); got != p {
				t.Fatalf("len %d, pair at %d: got %d", n, p, got)
			}
		}
	}
}

// FuzzIndexPair compares indexPair with strings.Index.
func FuzzIndexPair(f *testing.F) {
	f.Add(strings.Repeat("a b ", 20)+"  ", byte(' '), byte(' '))
	f.Add(strings.Repeat("x", 64)+"<|", byte('<'), byte('|'))
	f.Fuzz(func(t *testing.T, s string, a, b byte) {
		want := strings.Index(s, string([]byte{a, b}))
		if got := indexPair(s, a, b); got != want {
			t.Fatalf("indexPair(%q, %q, %q) = %d, want %d", s, a, b, got, want)
		}
	})
}
