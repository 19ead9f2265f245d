package loader

import (
	"strings"
	"testing"
)

// TestBlendWeightOverflow: weights whose sum overflows float64 are refused as such, not
// as "sum to 0" (issue 15, item 13).
func TestBlendWeightOverflow(t *testing.T) {
	spec, err := ParseData("1e308:a,1e308:b")
	if err != nil {
		t.Fatal(err)
	}
	w := []float64{spec.Train[0].Weight, spec.Train[1].Weight}
	if _, _, err := NeoXBlendWeights(w, 100); err == nil || !strings.Contains(err.Error(), "scale them down") {
		t.Errorf("NeoXBlendWeights = %v, want the overflow named", err)
	}
	if _, _, err := BlendNeoX(w, 100); err == nil || !strings.Contains(err.Error(), "scale them down") {
		t.Errorf("BlendNeoX = %v, want the overflow named", err)
	}
	if _, _, err := NeoXBlendWeights([]float64{1e307, 1e307}, 100); err != nil {
		t.Errorf("large but finite weights: %v", err)
	}
}
