//go:build !amd64 || noasm || !gc

package tokenize

import "unicode/utf8"

// classifyBlocks fills dst[i] from the 64 bytes src[64i:64i+64]; len(src) must be
// 64*len(dst).
func classifyBlocks(dst []classBlock, src []byte) { classifyBlocksGo(dst, src) }

// asciiPrefix returns the length of a prefix of s that is all ASCII bytes other than c
// (see asciiPrefixGo).
func asciiPrefix(s string, c byte) int { return asciiPrefixGo(s, c) }

// validRest is utf8.ValidString(s) (the twin of validRest in utf8valid_amd64.go).
func validRest(s string) bool { return utf8.ValidString(s) }
