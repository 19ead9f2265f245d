package ref_test

import (
	"math"
	"testing"

	"gptkit/kernels"
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
	be.MatmulForward(kernels.Host(out), kernels.Host(inp), kernels.Host(w), kernels.Host([]float32{10, 20}), 2, 3, 2)
	want := []float32{1 - 3 + 10, 2 + 2 + 20, 4 - 6 + 10, 8 + 5 + 20}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("out = %v, want %v", out, want)
		}
	}
}

func TestClassifierByHand(t *testing.T) {
	be := ref.New()
	// One row, C = 1, inp 1: the logits are the weights 0, 0 and a padded 99.
	losses, dinp, dw := make([]float32, 1), make([]float32, 1), make([]float32, 3)
	sum := []float64{0}
	be.Classifier(kernels.Host(losses), kernels.HostFloat64(sum), kernels.Host(dinp), kernels.Host(dw), kernels.Host(make([]float32, 3)),
		kernels.Host([]float32{1}), kernels.Host([]float32{0, 0, 99}), kernels.HostInt32([]int32{1}), 1, 1, 1, 2, 3)
	if math.Abs(float64(losses[0])-math.Ln2) > 1e-7 || sum[0] != float64(losses[0]) {
		t.Fatalf("loss = %v (sum %v), want ln 2", losses[0], sum[0])
	}
	// dlogits = (0.5, -0.5, 0): dweight = dlogits·1, dinp = 0.5·0 - 0.5·0 = 0.
	if dw[0] != 0.5 || dw[1] != -0.5 || dw[2] != 0 || dinp[0] != 0 {
		t.Fatalf("dweight = %v, dinp = %v", dw, dinp)
	}
}

func TestConformance(t *testing.T) {
	kerneltest.Conformance(t, ref.New)
}
