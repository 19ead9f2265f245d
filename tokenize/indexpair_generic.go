//go:build !amd64 || noasm || !gc

package tokenize

// indexPair returns the index of the first i with s[i] == a and s[i+1] == b, or -1
// (the twin of indexPair in indexpair_amd64.go).
func indexPair(s string, a, b byte) int { return indexPairGo(s, a, b) }
