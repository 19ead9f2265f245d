package cuda

import (
	"testing"

	"gptkit/kernels"
)

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

// TestPeakOfHalfModel: a model in bfloat16 or float16 has its MFU against the bf16
// peak whatever the precision of float32 matmuls (GPTKIT_CUDA_PRECISION=fp32): its
// GEMMs run on 16-bit operands; it was against the fp32 peak.
func TestPeakOfHalfModel(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.BFloat16, kernels.Float16} {
		b := openSim(t, FP32, SimOptions{Memory: 1 << 30})
		b.info.Name = "NVIDIA H200" // (the simulator is in no table)
		if got := b.PeakFLOPS(); got != 67e12 {
			t.Errorf("before any tensor: %g, want the fp32 peak", got)
		}
		x, err := b.Alloc("x", dt, 8)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free(x)
		if got := b.PeakFLOPS(); got != 989.4e12 {
			t.Errorf("with a %s tensor: %g, want the bf16 peak", dt, got)
		}
	}
}
