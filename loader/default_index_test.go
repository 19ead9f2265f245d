package loader

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDefaultIndexProperties checks OrderDefault's promises on random splits: each
// epoch's block of doc_idx is a permutation of the documents; shuffle_idx is a
// permutation of [0,N) that keeps every sample within its epoch's block; reading
// the samples in order covers each epoch's tokens exactly once before the next
// epoch's (the first L tokens of each sample tile the stream); it is deterministic
// and depends on the seed.
func TestDefaultIndexProperties(t *testing.T) {
	rnd := rand.New(rand.NewPCG(31, 32))
	for trial := range 60 {
		sizes := make([]int32, 1+rnd.IntN(50))
		for i := range sizes {
			sizes[i] = int32(rnd.IntN(40))
		}
		sizes[rnd.IntN(len(sizes))]++
		L := 1 + rnd.IntN(30)
		var tpe int64
		for _, s := range sizes {
			tpe += int64(s)
		}
		ns := int64(rnd.IntN(int(4*tpe/int64(L)) + 2))
		seed := rnd.Uint32()
		x, err := BuildDefaultIndex(sizes, L, ns, seed)
		if err != nil {
			t.Fatal(err)
		}
		y, _ := BuildDefaultIndex(sizes, L, ns, seed)
		if !slices.Equal(x.DocIdx, y.DocIdx) || !slices.Equal(x.ShuffleIdx, y.ShuffleIdx) || !slices.Equal(x.SampleIdx, y.SampleIdx) {
			t.Fatal("not deterministic")
		}
		nx, _ := BuildNeoXIndex(sizes, L, ns, seed)
		if x.Epochs != nx.Epochs || x.NumPacked() != nx.NumPacked() || x.Len() != x.NumPacked() || x.Len() < ns {
			t.Fatalf("trial %d: epochs %d/%d, N %d/%d, Len %d, asked %d", trial, x.Epochs, nx.Epochs, x.NumPacked(), nx.NumPacked(), x.Len(), ns)
		}
		D := len(sizes)
		for e := 0; e < x.Epochs; e++ {
			block := slices.Clone(x.DocIdx[e*D : (e+1)*D])
			slices.Sort(block)
			for k, v := range block {
				if v != int32(k) {
					t.Fatalf("trial %d: epoch %d of doc_idx is not a permutation", trial, e)
				}
			}
		}
		n := x.NumPacked()
		seen := make([]bool, n)
		for i, j := range x.ShuffleIdx {
			if seen[j] {
				t.Fatalf("trial %d: shuffle_idx repeats %d", trial, j)
			}
			seen[j] = true
			// Sample i reads packed sample j; both lie in the same epoch block.
			epochOf := func(k int64) int64 { return k * int64(L) / tpe }
			if epochOf(int64(i)) != epochOf(int64(j)) {
				t.Fatalf("trial %d: sample %d reads packed sample %d of another epoch", trial, i, j)
			}
		}
		// Coverage: the first L tokens of the samples of epoch e's block are stream
		// positions [lo*L, hi*L), which hold every token of epoch e once (up to N).
		for e := int64(0); e < int64(x.Epochs); e++ {
			lo, hi := min((e*tpe+int64(L)-1)/int64(L), n), min(((e+1)*tpe+int64(L)-1)/int64(L), n)
			var starts []int64
			for i := lo; i < hi; i++ {
				starts = append(starts, int64(x.ShuffleIdx[i])*int64(L))
			}
			slices.Sort(starts)
			for k, s := range starts {
				if s != (lo+int64(k))*int64(L) {
					t.Fatalf("trial %d: epoch %d block does not tile the stream", trial, e)
				}
			}
			if hi < n && (hi*int64(L) < (e+1)*tpe || lo*int64(L) > e*tpe+int64(L)-1) {
				t.Fatalf("trial %d: epoch %d block [%d,%d) does not cover its tokens", trial, e, lo, hi)
			}
		}
		if z, _ := BuildDefaultIndex(sizes, L, ns, seed+1); D > 3 && n > 3 && slices.Equal(z.DocIdx, x.DocIdx) && slices.Equal(z.ShuffleIdx, x.ShuffleIdx) {
			t.Errorf("trial %d: seed does not change the order", trial)
		}
	}
}

// TestDefaultIndexPinned pins OrderDefault's arrays for one input, so that a change
// of the generator or the shuffle (which would reorder every run's data) is seen.
func TestDefaultIndexPinned(t *testing.T) {
	x, err := BuildDefaultIndex([]int32{5, 3, 8, 1, 6}, 4, 10, 1234)
	if err != nil {
		t.Fatal(err)
	}
	wantDoc := []int32{4, 2, 1, 0, 3, 4, 2, 3, 1, 0}
	wantShuf := []uint32{3, 5, 4, 2, 0, 1, 9, 10, 8, 7, 6}
	if !slices.Equal(x.DocIdx, wantDoc) || !slices.Equal(x.ShuffleIdx, wantShuf) {
		t.Fatalf("doc_idx %v shuffle_idx %v changed", x.DocIdx, x.ShuffleIdx)
	}
}
