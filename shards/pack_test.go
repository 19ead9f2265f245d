package shards

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestPackUint16Twin: encodeTokens of int32 ids to uint16 writes the same bytes and
// finds the same first bad id with the AVX2 loop as with the Go loop alone, for every
// length up to a few steps and bad ids (too large, negative) anywhere.
func TestPackUint16Twin(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	defer func(saved bool) { packAVX2 = saved }(packAVX2)
	for n := range 100 {
		for trial := range 20 {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = int32(rng.IntN(1 << 16))
			}
			if n > 0 && trial%3 != 0 {
				bad := []int32{1 << 16, -1, 1 << 30, -1 << 31}[trial%4]
				ids[rng.IntN(n)] = bad
			}
			var got, want [2][]byte
			var gotBad, wantBad [2]int
			for k, avx2 := range []bool{true, false} {
				packAVX2 = avx2
				dst := make([]byte, 2*n)
				gotBad[k] = encodeTokens(dst, ids, Uint16)
				got[k] = dst
			}
			for k := range want {
				want[k] = make([]byte, 2*n)
				wantBad[k] = checkTokens(ids, Uint16)
				for i, id := range ids {
					want[k][2*i], want[k][2*i+1] = byte(id), byte(id>>8)
				}
			}
			if gotBad != wantBad {
				t.Fatalf("%d ids: bad at %v (AVX2, Go), want %d", n, gotBad, wantBad[0])
			}
			if wantBad[0] < 0 && (!bytes.Equal(got[0], want[0]) || !bytes.Equal(got[1], want[1])) {
				t.Fatalf("%d ids: bytes differ (AVX2 %v, Go %v)", n, !bytes.Equal(got[0], want[0]), !bytes.Equal(got[1], want[1]))
			}
		}
	}
}
