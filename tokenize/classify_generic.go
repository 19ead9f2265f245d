//go:build !amd64 || noasm || !gc

package tokenize

// classifyBlocks fills dst[i] from the 64 bytes src[64i:64i+64]; len(src) must be
// 64*len(dst).
func classifyBlocks(dst []classBlock, src []byte) { classifyBlocksGo(dst, src) }

// asciiPrefix returns the length of a prefix of s that is all ASCII bytes other than c
// (see asciiPrefixGo).
func asciiPrefix(s string, c byte) int { return asciiPrefixGo(s, c) }
