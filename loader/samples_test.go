package loader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gptkit/shards"
	"gptkit/storage"
)

func TestParseSplit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want [3]float64
	}{
		{"969,30,1", [3]float64{969, 30, 1}},
		{"98/2", [3]float64{98, 2, 0}},
		{"1", [3]float64{1, 0, 0}},
		{"1,2,3,4", [3]float64{1, 2, 3}},
	} {
		got, err := ParseSplit(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSplit(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "a,b", "0,0,0", "-1,2,0", "NaN"} {
		if _, err := ParseSplit(bad); err == nil {
			t.Errorf("ParseSplit(%q): no error", bad)
		}
	}
}

func TestSplitRanges(t *testing.T) {
	for _, c := range []struct {
		n    int
		w    [3]float64
		want [3][2]int
	}{
		{1000, [3]float64{969, 30, 1}, [3][2]int{{0, 969}, {969, 999}, {999, 1000}}},
		// 10 docs: 9.69->10, 0.30->0, 0.01->0: sum 10, no adjustment.
		{10, [3]float64{969, 30, 1}, [3][2]int{{0, 10}, {10, 10}, {10, 10}}},
		// 7 docs, 1/3 each: 2.333->2 three times = 6, diff -1: [0,3,5,7].
		{7, [3]float64{1, 1, 1}, [3][2]int{{0, 3}, {3, 5}, {5, 7}}},
		// 10 docs: 0.6->1, 4.7->5, 4.7->5 = 11, diff 1: [0,0,5,10].
		{10, [3]float64{6, 47, 47}, [3][2]int{{0, 0}, {0, 5}, {5, 10}}},
		// Halves round to even: 2.5->2, 2.5->2 (+0) = 4, diff -1: [0,3,5,5].
		{5, [3]float64{1, 1, 0}, [3][2]int{{0, 3}, {3, 5}, {5, 5}}},
		{0, [3]float64{969, 30, 1}, [3][2]int{{0, 0}, {0, 0}, {0, 0}}},
	} {
		if got := SplitRanges(c.n, c.w); got != c.want {
			t.Errorf("SplitRanges(%d, %v) = %v, want %v", c.n, c.w, got, c.want)
		}
	}
}

// makeDataset writes docs as a dataset of shardCount shards (uint16 or int32) in a
// temporary directory and opens it.
func makeDataset(t *testing.T, docs [][]int, shardCount int, dtype shards.DType) *shards.Dataset {
	t.Helper()
	dir := writeDataset(t, t.TempDir(), docs, shardCount, dtype, nil, "test")
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := shards.OpenDataset(context.Background(), st, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// writeDataset writes docs into dir as a dataset of shardCount shards, labeling
// shard s labels[s] (nil: unlabeled), with a tokenizer of the given fingerprint,
// and returns dir.
func writeDataset(t testing.TB, dir string, docs [][]int, shardCount int, dtype shards.DType, labels []string, fingerprint string) string {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vocab := 1 << 16
	if dtype == shards.Int32 {
		vocab = 1 << 30
	}
	m := shards.NewManifest(shards.TokenizerInfo{Name: "test", Fingerprint: fingerprint, VocabSize: vocab, EODID: -1}, dtype, nil)
	per := (len(docs) + shardCount - 1) / shardCount
	for s := 0; s < shardCount; s++ {
		w, err := shards.NewWriter(ctx, st, fmt.Sprintf("data_%02d_text_document", s), dtype)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs[min(s*per, len(docs)):min((s+1)*per, len(docs))] {
			if err := w.AddDocument(d); err != nil {
				t.Fatal(err)
			}
		}
		info, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if labels != nil {
			info.Split = labels[s]
		}
		if err := m.Add("", info); err != nil {
			t.Fatal(err)
		}
	}
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func randomDocs(rnd *rand.Rand, n int) [][]int {
	docs := make([][]int, n)
	for i := range docs {
		docs[i] = make([]int, rnd.IntN(25)) // empty documents included
		for k := range docs[i] {
			docs[i][k] = rnd.IntN(60000)
		}
	}
	return docs
}

// TestSamplesNaive checks every sample against a naive reconstruction: packed
// sample j is tokens [j*L, j*L+L] of the concatenation of the split's documents
// in DocIdx order, and sample i is packed sample ShuffleIdx[i].
func TestSamplesNaive(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 12; trial++ {
		docs := randomDocs(rnd, 5+rnd.IntN(60))
		docs[rnd.IntN(len(docs))] = append(docs[0][:0:0], 7, 8, 9) // some tokens
		dtype := shards.Uint16
		if trial%3 == 2 {
			dtype = shards.Int32
		}
		d := makeDataset(t, docs, 1+rnd.IntN(4), dtype)
		rng := SplitRanges(len(docs), [3]float64{8, 1, 1})[0]
		r := [2]int64{int64(rng[0]), int64(rng[1])}
		if trial%2 == 1 {
			r = [2]int64{int64(rnd.IntN(3)), int64(len(docs))} // a range that does not start at 0
		}
		var tpe int
		for _, doc := range docs[r[0]:r[1]] {
			tpe += len(doc)
		}
		if tpe == 0 {
			continue
		}
		L := 1 + rnd.IntN(20)
		ns := int64(rnd.IntN(3*tpe/L + 2))
		order := []string{OrderNeoX, OrderDefault}[trial%2]
		s, err := NewSamples(d, r, L, ns, rnd.Uint32(), order)
		if err != nil {
			t.Fatal(err)
		}
		if s.Index.NumPacked() < ns || s.Len() < ns-1 || (order == OrderDefault && s.Len() < ns) {
			t.Fatalf("trial %d: Len %d < %d samples asked for", trial, s.Len(), ns)
		}
		var stream []int
		for _, k := range s.Index.DocIdx {
			stream = append(stream, docs[r[0]+int64(k)]...)
		}
		var got []int
		for i := int64(0); i < s.Len(); i++ {
			j := int64(s.Index.ShuffleIdx[i])
			want := stream[j*int64(L) : j*int64(L)+int64(L)+1]
			if got = s.Sample(i, got[:0]); !slices.Equal(got, want) {
				t.Fatalf("trial %d sample %d: got %v, want %v", trial, i, got, want)
			}
		}
	}
}

func TestNewSamplesErrors(t *testing.T) {
	d := makeDataset(t, [][]int{{1, 2, 3}, {4, 5}}, 1, shards.Uint16)
	for _, c := range []struct {
		r     [2]int64
		order string
	}{
		{[2]int64{0, 3}, OrderNeoX},
		{[2]int64{1, 1}, OrderNeoX},
		{[2]int64{0, 2}, "random"},
	} {
		if _, err := NewSamples(d, c.r, 2, 4, 1, c.order); err == nil {
			t.Errorf("NewSamples(%v, %q): no error", c.r, c.order)
		}
	}
}
