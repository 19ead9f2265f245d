package loader

import (
	"slices"
	"testing"
)

// SameOrderFor is true exactly when the index built for another count holds the
// same samples in the same order: the same number of epochs (a count landing on
// an epoch's boundary included), and false for a blend.
func TestSameOrderFor(t *testing.T) {
	sizes := []int32{4, 3, 3}
	for _, order := range []string{OrderDefault, OrderNeoX} {
		built, err := BuildIndex(order, sizes, 3, 5, 1)
		if err != nil {
			t.Fatal(err)
		}
		s := &Samples{Index: built, sizes: sizes}
		for was := int64(1); was <= 12; was++ {
			other, err := BuildIndex(order, sizes, 3, was, 1)
			if err != nil {
				t.Fatal(err)
			}
			same := other.Epochs == built.Epochs && slices.Equal(other.ShuffleIdx, built.ShuffleIdx) && slices.Equal(other.SampleIdx, built.SampleIdx)
			if got := SameOrderFor(s, was); got != same {
				t.Errorf("%s: built for 5, was %d: SameOrderFor = %v, the indexes are the same: %v", order, was, got, same)
			}
		}
	}
	if SameOrderFor(&Blend{}, 5) {
		t.Error("a blend: true")
	}
}
