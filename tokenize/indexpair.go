package tokenize

import "strings"

// indexPairGo returns the index of the first i with s[i] == a and s[i+1] == b, or
// -1: each a that strings.IndexByte finds, then the byte after it. It is indexPair
// under noasm and on other architectures, and the readable twin that the tests and
// FuzzIndexPair compare the AVX2 version with.
func indexPairGo(s string, a, b byte) int {
	for i := 0; i+1 < len(s); i++ {
		j := strings.IndexByte(s[i:len(s)-1], a)
		if j < 0 {
			return -1
		}
		i += j
		if s[i+1] == b {
			return i
		}
	}
	return -1
}
