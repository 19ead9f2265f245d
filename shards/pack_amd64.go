//go:build amd64 && !noasm && gc

package shards

import "golang.org/x/sys/cpu"

// Stub of pack_amd64.s: int32 ids to uint16 shards, 16 ids per AVX2 step
// (encodeTokens's Go loop is its twin, and the only version under -tags noasm).

// packAVX2 says whether packUint16 runs the AVX2 loop (tests turn it off).
var packAVX2 = cpu.X86.HasAVX2

// packUint16AVX2 writes the n ids at src (n a multiple of 16) as little-endian uint16
// at dst and returns the OR of all of them: an id that does not fit sets a bit above
// the 16th.
//
//go:noescape
func packUint16AVX2(dst *byte, src *int32, n int) (or uint32)

// packUint16 writes the first len(ids) &^ 15 ids into dst as encodeTokens does for
// Uint16 and returns how many it wrote and the OR of them.
func packUint16(dst []byte, ids []int32) (int, uint) {
	n := len(ids) &^ 15
	if !packAVX2 || n == 0 {
		return 0, 0
	}
	_ = dst[2*n-1]
	return n, uint(packUint16AVX2(&dst[0], &ids[0], n))
}
