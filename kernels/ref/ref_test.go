package ref_test

import (
	"math"
	"testing"

	"gptkit/kernels/kerneltest"
	"gptkit/kernels/ref"
)

// Hand-computed cases; the full conformance suite is in kernels/kerneltest.
func TestMatmulByHand(t *testing.T) {
	be := ref.New()
	out := make([]float32, 4)
	// inp (2,3), weight (2,3), bias (2).
	inp := []float32{1, 2, 3, 4, 5, 6}
	w := []float32{1, 0, -1, 2, 1, 0}
	be.MatmulForward(out, inp, w, []float32{10, 20}, 2, 3, 2)
	want := []float32{1 - 3 + 10, 2 + 2 + 20, 4 - 6 + 10, 8 + 5 + 20}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("out = %v, want %v", out, want)
		}
	}
}

func TestCrossEntropyByHand(t *testing.T) {
	be := ref.New()
	logits := []float32{0, 0, 99}
	probs := make([]float32, 3)
	loss := make([]float32, 1)
	be.CrossEntropyForward(loss, probs, logits, []int32{1}, 1, 2, 3)
	if probs[0] != 0.5 || probs[1] != 0.5 || probs[2] != 0 {
		t.Fatalf("probs = %v", probs)
	}
	if math.Abs(float64(loss[0])-math.Ln2) > 1e-7 {
		t.Fatalf("loss = %v, want ln 2", loss[0])
	}
}

func TestConformance(t *testing.T) {
	kerneltest.Conformance(t, ref.New)
}
