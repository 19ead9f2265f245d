//go:build amd64 && !noasm && gc

package tokenize

import "golang.org/x/sys/cpu"

// Stub of classify_amd64.s: classifyBlocksGo (classify.go) on 32 bytes per AVX2 step.

var hasAVX2 = cpu.X86.HasAVX2

// classifyBlocksAVX2 fills dst[0:n] from the 64n bytes at src.
//
//go:noescape
func classifyBlocksAVX2(dst *classBlock, src *byte, n int)

// classifyBlocks fills dst[i] from the 64 bytes src[64i:64i+64]; len(src) must be
// 64*len(dst).
func classifyBlocks(dst []classBlock, src []byte) {
	if !hasAVX2 || len(dst) == 0 {
		classifyBlocksGo(dst, src)
		return
	}
	_ = src[64*len(dst)-1]
	classifyBlocksAVX2(&dst[0], &src[0], len(dst))
}
