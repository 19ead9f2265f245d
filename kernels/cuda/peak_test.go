package cuda

import "testing"

func TestPeakFLOPS(t *testing.T) {
	for _, tc := range []struct {
		name, prec string
		want       float64
	}{
		{"NVIDIA H100 80GB HBM3", BF16, 989.4e12},
		{"NVIDIA H100 PCIe", TF32, 378e12},
		{"NVIDIA H200", BF16, 989.4e12},
		{"NVIDIA A100-SXM4-80GB", FP32, 19.5e12},
		{"NVIDIA L40S", BF16, 362e12},
		{"NVIDIA L4", BF16, 121e12},
		{"Tesla T4", BF16, 0},
	} {
		if got := peakFLOPS(tc.name, tc.prec); got != tc.want {
			t.Errorf("%s %s: %g, want %g", tc.name, tc.prec, got, tc.want)
		}
	}
}
