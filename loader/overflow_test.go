package loader

import (
	"math"
	"strings"
	"testing"
)

// TestHugeCountsAreErrors: sample counts and cursors near 2^63 (a typo, a damaged
// checkpoint) end in an error, not a panic: the epoch count's rounding, the
// int32 doc_idx bound and the sampler's end of batch once wrapped around.
func TestHugeCountsAreErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		sizes []int32
		L     int
		n     int64
	}{
		{"n near 2^63, L 1", []int32{5, 7, 3}, 1, math.MaxInt64 - 1},
		{"n near 2^63/L", []int32{5, 7, 3}, 8, (math.MaxInt64 - 1) / 8},
		{"epochs × documents past int32", []int32{1, 0, 0, 0}, math.MaxInt32 - 2, 1<<31 + 2},
	} {
		for _, order := range []string{OrderNeoX, OrderDefault} {
			if _, err := BuildIndex(order, c.sizes, c.L, c.n, 1); err == nil {
				t.Errorf("%s, %s: no error", c.name, order)
			}
		}
	}
	s := testSamples(t)
	for _, consumed := range []int64{math.MaxInt64, math.MaxInt64 - 7, s.Len()} {
		sm := &Sampler{Samples: s, World: 1, Micro: 1, Cursor: Cursor{Consumed: consumed}}
		if _, err := sm.Next(nil); err == nil || !strings.Contains(err.Error(), "only") {
			t.Errorf("cursor %d: %v, want the error naming the sample count", consumed, err)
		}
	}
}

// TestCheckIndexSteps: a cached index whose sample_idx entries are each inside the
// documents but not SeqLen tokens apart is refused (AppendSpans would make spans of
// negative or excess length from it), and a built one passes.
func TestCheckIndexSteps(t *testing.T) {
	sizes := []int32{7, 0, 12, 5, 9, 1, 20}
	for _, order := range []string{OrderNeoX, OrderDefault} {
		x, err := BuildIndex(order, sizes, 4, 10, 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkIndex(x, sizes); err != nil {
			t.Fatalf("%s: a built index refused: %v", order, err)
		}
		bad := *x
		bad.SampleIdx = append([]int32(nil), x.SampleIdx...)
		for k := 0; k < len(bad.SampleIdx)/2; k++ {
			bad.SampleIdx[2*k], bad.SampleIdx[2*k+1] = 0, 0
			if k%2 == 0 {
				bad.SampleIdx[2*k+1] = sizes[bad.DocIdx[0]] - 1
			}
		}
		if err := checkIndex(&bad, sizes); err == nil || !strings.Contains(err.Error(), "tokens after the one before") {
			t.Errorf("%s: out-of-step sample_idx: %v", order, err)
		}
	}
}
