package kernels

import (
	"fmt"
	"math"
)

// DType is the element type of a Tensor.
type DType uint8

// The element types. Float32, BFloat16 and Float16 hold weights, activations and
// their gradients; Int32 holds token ids; Float64 holds the few reductions that
// must not lose digits (the gradient norm's partial sums, the loss sum).
const (
	Float32 DType = 1 + iota
	BFloat16
	Float16
	Int32
	Float64
)

// Size is the bytes of one element.
func (d DType) Size() int {
	switch d {
	case BFloat16, Float16:
		return 2
	case Float32, Int32:
		return 4
	case Float64:
		return 8
	}
	panic(fmt.Sprintf("kernels: dtype %d has no size", d))
}

// String is the dtype's name as the dtype config key spells it (PyTorch's names).
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case BFloat16:
		return "bfloat16"
	case Float16:
		return "float16"
	case Int32:
		return "int32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Floating reports whether d is one of the dtypes ops compute on (Float32,
// BFloat16, Float16).
func (d DType) Floating() bool { return d == Float32 || d == BFloat16 || d == Float16 }

// ParseDType reads a training dtype: float32, bfloat16 or float16 (and the
// PyTorch aliases fp32, bf16, fp16).
func ParseDType(s string) (DType, error) {
	switch s {
	case "float32", "fp32":
		return Float32, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	case "float16", "fp16", "half":
		return Float16, nil
	}
	return 0, fmt.Errorf("dtype %q: want float32, bfloat16 or float16", s)
}

// Rounding to the 16-bit types is round-to-nearest-even, as the GPU's
// conversions (__float2bfloat16_rn, __float2half_rn, cvt.rn) and PyTorch do.
// NaN stays NaN (quiet); values beyond a type's range become ±Inf.

// BF16FromFloat32 rounds x to bfloat16 (its top 16 bits after rounding).
func BF16FromFloat32(x float32) uint16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // NaN: keep the sign, force quiet
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToFloat32 widens a bfloat16 exactly.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F16FromFloat32 rounds x to IEEE 754 binary16, subnormals included.
func F16FromFloat32(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp > 127+15: // beyond the largest finite half
		return sign | 0x7c00
	case exp >= 127-14: // normal half: 10 mantissa bits, drop 13
		h := uint32(exp-127+15)<<10 | man>>13
		rest := man & 0x1fff
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++ // may carry into the exponent, up to Inf: still right
		}
		return sign | uint16(h)
	case exp >= 127-25: // subnormal half (or rounds up to the smallest one)
		man |= 0x800000          // the implicit bit
		shift := uint(126 - exp) // value = man·2^(exp-150) = (man >> shift)·2⁻²⁴
		h := man >> shift
		rest := man & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	return sign // underflows to ±0
}

// F16ToFloat32 widens a binary16 exactly.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: normalize.
	e := uint32(127 - 15 + 1)
	for man&0x400 == 0 {
		man <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (man&0x3ff)<<13)
}

// Round returns x rounded to dtype d and widened back (x itself for Float32):
// what storing x in a tensor of dtype d keeps.
func Round(d DType, x float32) float32 {
	switch d {
	case BFloat16:
		return BF16ToFloat32(BF16FromFloat32(x))
	case Float16:
		return F16ToFloat32(F16FromFloat32(x))
	}
	return x
}
