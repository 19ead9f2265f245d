//go:build amd64 && !noasm && gc

package tokenize

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Stubs of classify_amd64.s: classifyBlocksGo (classify.go) on 64 bytes per AVX-512
// step or 32 per AVX2 step, chosen at run time, and asciiPrefixGo on 128 bytes a step.

var (
	hasAVX2   = cpu.X86.HasAVX2
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW
)

// classifyBlocksAVX2 fills dst[0:n] from the 64n bytes at src.
//
//go:noescape
func classifyBlocksAVX2(dst *classBlock, src *byte, n int)

// classifyBlocksAVX512 is classifyBlocksAVX2 on 64 bytes per step (AVX512F and BW).
//
//go:noescape
func classifyBlocksAVX512(dst *classBlock, src *byte, n int)

//go:noescape
func asciiPrefixAVX2(p *byte, n int, c uint64) int

// asciiPrefix returns the length of a prefix of s that is all ASCII bytes other than c
// (see asciiPrefixGo).
func asciiPrefix(s string, c byte) int {
	if !hasAVX2 || len(s) < 128 {
		return 0
	}
	return asciiPrefixAVX2(unsafe.StringData(s), len(s), uint64(c))
}

// classifyBlocks fills dst[i] from the 64 bytes src[64i:64i+64]; len(src) must be
// 64*len(dst).
func classifyBlocks(dst []classBlock, src []byte) {
	if !hasAVX2 || len(dst) == 0 {
		classifyBlocksGo(dst, src)
		return
	}
	_ = src[64*len(dst)-1]
	if hasAVX512 {
		classifyBlocksAVX512(&dst[0], &src[0], len(dst))
		return
	}
	classifyBlocksAVX2(&dst[0], &src[0], len(dst))
}
