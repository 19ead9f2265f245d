package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// roundTo rounds x to the nearest value of a binary format with mant explicit
// mantissa bits and exponents down to minExp (subnormals below), ties to even,
// overflowing to ±Inf past maxFinite: the definition, in float64.
func roundTo(x float64, mant, minExp int, maxFinite float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	_, e := math.Frexp(math.Abs(x)) // |x| = f·2^e, f in [0.5, 1)
	e--                             // |x| = g·2^e, g in [1, 2)
	e = max(e, minExp)
	ulp := math.Ldexp(1, e-mant)
	q := x / ulp
	r := math.RoundToEven(q) * ulp
	// Overflow: beyond the largest finite value plus half an ulp (a tie rounds to Inf).
	if math.Abs(r) > maxFinite {
		return math.Copysign(math.Inf(1), x)
	}
	return r
}

func TestF16Exhaustive(t *testing.T) {
	// Every half widens and narrows back to itself.
	for h := 0; h < 1<<16; h++ {
		f := F16ToFloat32(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := F16FromFloat32(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, g)
			}
			continue
		}
		if g := F16FromFloat32(f); g != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, g)
		}
	}
}

func TestRoundingAgainstDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(x float32) {
		want16 := roundTo(float64(x), 10, -14, 65504)
		if got := float64(F16ToFloat32(F16FromFloat32(x))); got != want16 && !(math.IsNaN(got) && math.IsNaN(want16)) {
			t.Fatalf("float16(%v [%#08x]) = %v, want %v", x, math.Float32bits(x), got, want16)
		}
		wantBF := roundTo(float64(x), 7, -126, math.MaxFloat32)
		if got := float64(Round(BFloat16, x)); got != wantBF && !(math.IsNaN(got) && math.IsNaN(wantBF)) {
			// bfloat16's largest finite is below MaxFloat32; compare the bits of the definition.
			if !(math.IsInf(got, 0) && math.Abs(wantBF) >= 3.3961775292e38) {
				t.Fatalf("bfloat16(%v [%#08x]) = %v, want %v", x, math.Float32bits(x), got, wantBF)
			}
		}
	}
	for range 2_000_000 {
		check(math.Float32frombits(r.Uint32()))
	}
	// Ties and edges.
	for _, x := range []float32{1 + 1.0/2048, 1 + 3.0/2048, 65504, 65519.99, 65520, 6e-8, 2.9802322e-08, 5.9604645e-08, 8.940697e-08,
		1 + 1.0/256, 1 + 3.0/256, -0.0, float32(math.Inf(1)), 3.3961775e38, 3.4e38} {
		check(x)
	}
}

func TestTensorViews(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5}
	v := Host(x).Slice(1, 4)
	if v.Len() != 3 || v.Float32s()[0] != 2 || v.Bytes() != 12 {
		t.Fatalf("slice: %v %v", v, v.Float32s())
	}
	v.Float32s()[2] = 9
	if x[3] != 9 {
		t.Fatal("a host view does not alias its memory")
	}
	if !v.Overlaps(Host(x).Slice(3, 5)) || !Host(x[3:]).Overlaps(v) {
		t.Fatal("overlap")
	}
	if v.Slice(0, 1).Overlaps(v.Slice(1, 3)) {
		t.Fatal("adjacent views overlap")
	}
	var none Tensor
	if !none.Nil() || none.Bytes() != 0 || none.Owner() != nil {
		t.Fatal("zero tensor")
	}
	h := []uint16{BF16FromFloat32(1.5)}
	if got := ReadFloat32(HostUint16(h, BFloat16)); got[0] != 1.5 {
		t.Fatalf("bf16 read %v", got)
	}
}
