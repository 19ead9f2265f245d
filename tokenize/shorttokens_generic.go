//go:build !amd64 || noasm || !gc

package tokenize

// appendShortTokens is appendShortTokensGo (encode.go); amd64 has it in assembly.
func appendShortTokens[T tokenID](front *frontCache, text string, avail, prev int, ends []int, dst []T) ([]T, int) {
	return appendShortTokensGo(front, text, avail, prev, ends, dst)
}
