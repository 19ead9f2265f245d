package loader

import (
	"math/rand/v2"
	"testing"
)

func TestMT19937Reference(t *testing.T) {
	// First output of the reference mt19937ar.c init_genrand(5489).
	if got := NewMT19937(5489).Uint32(); got != 3499211612 {
		t.Fatalf("init_genrand(5489) first output = %d, want 3499211612", got)
	}
	r := NewMT19937(1)
	a := r.Uint32()
	r.Seed(1)
	if b := r.Uint32(); a != b {
		t.Fatalf("Seed does not reset: %d vs %d", a, b)
	}
	if v := r.Interval(0); v != 0 {
		t.Fatalf("Interval(0) = %d", v)
	}
}

// TestSamplesFollowTokenStream checks, independently of numpy, that packed
// sample j is tokens [j*L, j*L+L] of the doc_idx-ordered token stream.
func TestSamplesFollowTokenStream(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		sizes := make([]int32, 1+rnd.IntN(40))
		for i := range sizes {
			sizes[i] = int32(rnd.IntN(30)) // zeros included
		}
		sizes[rnd.IntN(len(sizes))] += 1 // at least one token
		L := 1 + rnd.IntN(40)
		var tpe int64
		for _, s := range sizes {
			tpe += int64(s)
		}
		ns := int64(rnd.IntN(int(3*tpe/int64(L)) + 1))
		x, err := BuildNeoXIndex(sizes, L, ns, rnd.Uint32())
		if err != nil {
			t.Fatal(err)
		}
		if (int64(x.Epochs)*tpe-1)/int64(L) < ns || (x.Epochs > 1 && (int64(x.Epochs-1)*tpe-1)/int64(L) >= ns) {
			t.Fatalf("epochs %d not minimal for %d samples, tpe %d, L %d", x.Epochs, ns, tpe, L)
		}
		// Token stream: (doc, offset) for every token in doc_idx order.
		type tok struct{ doc, off int32 }
		var stream []tok
		for _, d := range x.DocIdx {
			for o := int32(0); o < sizes[d]; o++ {
				stream = append(stream, tok{d, o})
			}
		}
		inv := make([]int64, len(x.ShuffleIdx))
		for i, j := range x.ShuffleIdx {
			inv[j] = int64(i)
		}
		var spans []Span
		for j := int64(0); j < x.NumPacked(); j++ {
			spans = x.AppendSpans(spans[:0], inv[j], sizes)
			k := j * int64(L)
			for _, s := range spans {
				for o := s.Off; o < s.Off+s.Len; o++ {
					if stream[k] != (tok{s.Doc, o}) {
						t.Fatalf("trial %d sample %d: token %d is %+v, stream has %+v", trial, j, k, tok{s.Doc, o}, stream[k])
					}
					k++
				}
			}
			if k != j*int64(L)+int64(L)+1 {
				t.Fatalf("trial %d sample %d: %d tokens", trial, j, k-j*int64(L))
			}
		}
		if x.Len() != max(x.NumPacked()-1, 0) {
			t.Fatalf("Len %d, N %d", x.Len(), x.NumPacked())
		}
	}
}

func TestBuildNeoXIndexErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		sizes []int32
		L     int
		n     int64
	}{
		{"no tokens", []int32{0, 0}, 8, 1},
		{"no documents", nil, 8, 1},
		{"zero L", []int32{5}, 0, 1},
		{"negative size", []int32{5, -1}, 4, 1},
		{"negative samples", []int32{5}, 4, -1},
	} {
		if _, err := BuildNeoXIndex(c.sizes, c.L, c.n, 1); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, _, err := BlendNeoX(nil, 3); err == nil {
		t.Error("BlendNeoX without weights: no error")
	}
	if _, _, err := BlendNeoX([]float64{0, 0}, 3); err == nil {
		t.Error("BlendNeoX with zero weights: no error")
	}
	if _, _, err := NeoXBlendWeights([]float64{-1, 1}, 3); err == nil {
		t.Error("NeoXBlendWeights with zero sum: no error")
	}
}
