package cuda

import (
	"strings"
	"testing"

	"gptkit/kernels"
)

// TestNameSaysMatmulPrecision: the backend's name gives the precision its GEMMs run
// in. A model in bfloat16 on cuda-sim (float32 matmuls in fp32, to match the CPU) ran
// them in bf16 (16-bit operands take the tensor cores whatever the precision) and
// the name said "fp32 matmuls"; now it says what runs once 16-bit tensors are there.
func TestNameSaysMatmulPrecision(t *testing.T) {
	for _, tc := range []struct {
		prec  string
		alloc []kernels.DType
		want  string
	}{
		{FP32, nil, ", fp32 matmuls)"},
		{FP32, []kernels.DType{kernels.Float32}, ", fp32 matmuls)"},
		{FP32, []kernels.DType{kernels.Float32, kernels.BFloat16}, ", bf16 matmuls, float32 ones in fp32)"},
		{BF16, []kernels.DType{kernels.BFloat16}, ", bf16 matmuls)"},
		{BF16, []kernels.DType{kernels.Float16}, ", fp16 matmuls, float32 ones in bf16)"},
		{TF32, []kernels.DType{kernels.Float16, kernels.BFloat16}, ", bf16 and fp16 matmuls, float32 ones in tf32)"},
	} {
		b := openSim(t, tc.prec, SimOptions{Memory: 1 << 30})
		for _, dt := range tc.alloc {
			x, err := b.Alloc("x", dt, 8)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Free(x)
		}
		if name := b.Name(); !strings.HasSuffix(name, tc.want) {
			t.Errorf("%s with %v allocated: name %q, want it to end %q", tc.prec, tc.alloc, name, tc.want)
		}
	}
}

// TestNameForDType: NameFor gives the name a run in a dtype will have before its
// tensors exist. The trainer's memory pre-flight named the device with Name before
// allocating, so a bfloat16 run on cuda-sim was refused as "fp32 matmuls".
func TestNameForDType(t *testing.T) {
	for _, tc := range []struct {
		prec string
		dt   kernels.DType
		want string
	}{
		{FP32, kernels.Float32, ", fp32 matmuls)"},
		{FP32, kernels.BFloat16, ", bf16 matmuls, float32 ones in fp32)"},
		{FP32, kernels.Float16, ", fp16 matmuls, float32 ones in fp32)"},
		{BF16, kernels.BFloat16, ", bf16 matmuls)"},
		{BF16, kernels.Float32, ", bf16 matmuls)"},
	} {
		b := openSim(t, tc.prec, SimOptions{Memory: 1 << 30})
		if name := b.NameFor(tc.dt); !strings.HasSuffix(name, tc.want) {
			t.Errorf("%s, a run in %s: NameFor %q, want it to end %q", tc.prec, tc.dt, name, tc.want)
		}
		if name := b.Name(); !strings.HasSuffix(name, ", "+tc.prec+" matmuls)") {
			t.Errorf("%s: NameFor changed Name: %q", tc.prec, name)
		}
	}
}
