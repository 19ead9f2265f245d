//go:build amd64 && !noasm && gc

package tokenize

import "unsafe"

// indexPairAVX2 returns the first position p < n (a multiple of 32) with p[i] == a
// and p[i+1] == b, or -1, 32 positions a step; it reads n+1 bytes.
//
//go:noescape
func indexPairAVX2(p *byte, n int, a, b byte) int

// indexPair returns the index of the first i with s[i] == a and s[i+1] == b, or -1:
// with AVX2, 32 positions a step (two compares and an AND), the last few one by one.
// The added-token matcher looks for a two-byte prefix so: NeoX's added tokens are
// runs of 2 to 24 spaces ("  ") and <|endoftext|>, <|padding|> ("<|"), which the
// standard library's Index looked for from each space or '<' on (4% of NeoX's
// time on English, 6.7% with the matcher on the mixed corpus). The bytes are
// broadcast from memory: a legacy-SSE MOVQ into X0 after the first VEX
// instruction made each call ~120 ns instead of ~3 (measured here). The readable
// twin is indexPairGo.
func indexPair(s string, a, b byte) int {
	if !hasAVX2 || len(s) < 33 {
		return indexPairGo(s, a, b)
	}
	n := (len(s) - 1) &^ 31 // the pair at n-1 is s[n-1:n+1]
	if i := indexPairAVX2(unsafe.StringData(s), n, a, b); i >= 0 {
		return i
	}
	if i := indexPairGo(s[n:], a, b); i >= 0 {
		return n + i
	}
	return -1
}
