package loader

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"gptkit/shards"
)

// TestBlendReadsNeoXLastPacked: GPT-NeoX's BlendableDataset reads a dataset's samples
// through GPT2Dataset.__getitem__, which serves shuffle_idx[N-1] although __len__ is
// N-1. A dataset whose index holds exactly its ceil(w*N*1.005) samples is read that
// far: here B, of 40 tokens at L=6 (N=6, its count for 47 blended samples at 1/8),
// so the blend serves all 47 samples (it stopped at 41, where B's sample 5 is first
// read, and a run needing 47 failed to open).
func TestBlendReadsNeoXLastPacked(t *testing.T) {
	base := t.TempDir()
	tok := 1
	docs := func(n, size int) [][]int {
		var out [][]int
		for range n {
			d := make([]int, size)
			for k := range d {
				d[k], tok = tok, tok+1
			}
			out = append(out, d)
		}
		return out
	}
	sets := [][][]int{docs(50, 20), docs(4, 10)}
	a := writeDataset(t, filepath.Join(base, "a"), sets[0], 2, shards.Uint16, nil, "fp")
	b := writeDataset(t, filepath.Join(base, "b"), sets[1], 1, shards.Uint16, nil, "fp")
	const L, n = 6, 47
	d := openData(t, Options{Data: fmt.Sprintf("7:%s,1:%s", a, b), SeqLen: L, Seed: 3, Order: OrderNeoX, Split: "1,0,0", NumSamples: [3]int64{n, 0, 0}})
	bl := d.Train.(*Blend)
	if got := bl.Sources[1].(*Samples).Index.NumPacked(); got != 6 {
		t.Fatalf("B's index holds %d packed samples, want 6 (the test's premise)", got)
	}
	if bl.Len() < n {
		t.Fatalf("the blend serves %d samples, %d asked for", bl.Len(), n)
	}
	reached := false
	var got []int
	var got32 []int32
	for k := range int64(n) {
		src, j := bl.Locate(k)
		s := bl.Sources[src].(*Samples)
		reached = reached || j == s.Len()
		// GPT2Dataset.__getitem__(j): packed sample shuffle_idx[j] of the doc_idx stream.
		var stream []int
		for _, doc := range s.Index.DocIdx {
			stream = append(stream, sets[src][doc]...)
		}
		p := int64(s.Index.ShuffleIdx[j]) * L
		want := stream[p : p+L+1]
		if got = bl.Sample(k, got[:0]); !slices.Equal(got, want) {
			t.Fatalf("blended sample %d (dataset %d sample %d) = %v, want %v", k, src, j, got, want)
		}
		got32 = bl.SampleInt32(k, got32[:0])
		for i := range got32 {
			if int(got32[i]) != want[i] {
				t.Fatalf("SampleInt32(%d) = %v, want %v", k, got32, want)
			}
		}
	}
	if !reached {
		t.Fatal("no blended sample reads a dataset's last packed sample: the test does not exercise it")
	}
}

// TestBlendProportions: blended sample k comes from the dataset furthest behind
// its share, so after k samples every dataset has served its share w_d*k within
// two samples, and within the ceil(w_d*N*1.005) samples its index is built for
// (NeoXBlendWeights) over the first N: the 0.5% margin covers the rounding.
func TestBlendProportions(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		w := make([]float64, 1+rnd.IntN(6))
		for i := range w {
			w[i] = rnd.Float64()*10 + 0.001
			if rnd.IntN(4) == 0 {
				w[i] = float64(1 + rnd.IntN(3)) // ties
			}
		}
		n := int64(1 + rnd.IntN(2000))
		norm, counts, err := NeoXBlendWeights(w, n)
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		for _, c := range counts {
			size += c
		}
		di, si, err := BlendNeoX(norm, size)
		if err != nil {
			t.Fatal(err)
		}
		used := make([]int64, len(w))
		for k := range n {
			d := di[k]
			if si[k] != used[d] {
				t.Fatalf("weights %v: blended sample %d reads sample %d of dataset %d, want %d", w, k, si[k], d, used[d])
			}
			used[d]++
			for e, u := range used {
				if share := norm[e] * float64(k+1); math.Abs(float64(u)-share) > 2 {
					t.Fatalf("weights %v: after %d samples dataset %d served %d, its share is %.3f", norm, k+1, e, u, share)
				}
			}
		}
		for d, u := range used {
			if u > counts[d] {
				t.Fatalf("weights %v, %d samples: dataset %d served %d, its index holds %d", norm, n, d, u, counts[d])
			}
		}
	}
}
