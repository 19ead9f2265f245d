package cpu

import "testing"

func TestPeakFLOPS(t *testing.T) {
	b := newBackend(1)
	p := b.PeakFLOPS()
	// Any CPU this runs on does more than 100 MFLOP/s and less than 100 TFLOP/s on one
	// thread; the second call is the cached value.
	if p < 1e8 || p > 1e14 || b.PeakFLOPS() != p {
		t.Errorf("PeakFLOPS = %g", p)
	}
}
