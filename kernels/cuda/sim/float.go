package sim

import (
	"math"
	"math/bits"
)

// Floating-point rounding done in software, exactly: results of add, mul, fma,
// div and sqrt with the directed rounding modes, and conversions to f16, bf16,
// tf32 and f32 with every mode. An exact value is carried as a float64 pair
// hi+lo with lo tiny against hi (an error-free transformation), so the rounding
// sees the sign of what float64 itself had to drop.

// rmode is a PTX rounding mode.
type rmode uint8

const (
	rn  rmode = iota // to nearest, ties to even
	rz               // toward zero
	rm               // toward -inf
	rp               // toward +inf
	rna              // to nearest, ties away from zero
)

var rmodeNames = map[string]rmode{"rn": rn, "rz": rz, "rm": rm, "rp": rp, "rna": rna}

// ffmt is a binary floating-point format: mant explicit fraction bits, exp
// exponent bits.
type ffmt struct {
	mant, exp uint
}

var (
	fmtF32  = ffmt{23, 8}
	fmtF16  = ffmt{10, 5}
	fmtBF16 = ffmt{7, 8}
	fmtTF32 = ffmt{10, 8} // stored as an f32 whose low 13 bits are zero
	fmtF64  = ffmt{52, 11}
)

func (f ffmt) bias() int       { return 1<<(f.exp-1) - 1 }
func (f ffmt) emin() int       { return 1 - f.bias() }
func (f ffmt) emax() int       { return f.bias() }
func (f ffmt) width() uint     { return 1 + f.exp + f.mant }
func (f ffmt) signBit() uint64 { return 1 << (f.exp + f.mant) }
func (f ffmt) inf() uint64     { return uint64(1<<f.exp-1) << f.mant }
func (f ffmt) maxFinite() uint64 {
	return uint64(1<<f.exp-2)<<f.mant | (1<<f.mant - 1)
}

// canonicalNaN is the NaN the GPU writes (all exponent and fraction bits set,
// sign clear): 0x7fffffff for f32, 0x7fff for f16 and bf16.
func (f ffmt) canonicalNaN() uint64 { return f.inf() | (1<<f.mant - 1) }

// round rounds the exact value hi+lo (|lo| below half an ulp of hi in float64)
// to format f with mode. satfinite clamps to the largest finite value instead
// of overflowing to infinity (NaN stays NaN). ftz flushes a subnormal result to
// a signed zero.
func round(hi, lo float64, f ffmt, mode rmode, satfinite, ftz bool) uint64 {
	switch {
	case math.IsNaN(hi):
		return f.canonicalNaN()
	case math.IsInf(hi, 0):
		if satfinite {
			return signOf(hi, f) | f.maxFinite()
		}
		return signOf(hi, f) | f.inf()
	case hi == 0:
		return signOf(hi, f) // lo is 0 too for an exact pair
	}
	neg := hi < 0
	mag, res := math.Abs(hi), lo
	if neg {
		res = -lo
	}
	_, e := math.Frexp(mag) // mag = fr·2^e, fr in [0.5, 1)
	E := e - 1
	q := max(E, f.emin()) - int(f.mant) // the exponent of one ulp
	scaled := math.Ldexp(mag, -q)       // exact: a power-of-two scaling
	n := math.Floor(scaled)
	frac := scaled - n
	r := math.Ldexp(res, -q) // the dropped residual, in ulps
	exact := frac == 0 && r == 0
	down := n // floor of the magnitude
	if frac == 0 && r < 0 {
		down = n - 1
	}
	up := down + 1
	if exact {
		up = down
	}
	var m float64
	switch mode {
	case rz:
		m = down
	case rm:
		m = down
		if neg {
			m = up
		}
	case rp:
		m = up
		if neg {
			m = down
		}
	case rn, rna:
		half := frac - 0.5 // the sign of (exact − (n + ½))
		switch {
		case exact:
			m = n
		case half > 0 || half == 0 && r > 0:
			m = n + 1
		case half < 0 || half == 0 && r < 0:
			m = n
			if frac == 0 && r < 0 {
				m = n // n − tiny rounds to n
			}
		default: // an exact tie
			m = n
			if mode == rna || math.Mod(n, 2) == 1 {
				m = n + 1
			}
		}
	}
	// m·2^q is the rounded magnitude; encode it.
	M := uint64(m)
	if M >= 1<<(f.mant+1) { // the rounding carried into a new binade
		M >>= 1
		q++
	}
	var out uint64
	if M < 1<<f.mant { // subnormal (or zero)
		if ftz && M != 0 {
			return signOf(hi, f)
		}
		out = M
	} else {
		E2 := q + int(f.mant)
		if E2 > f.emax() {
			return overflow(neg, f, mode, satfinite)
		}
		out = uint64(E2+f.bias())<<f.mant | (M & (1<<f.mant - 1))
	}
	if ftz && out < 1<<f.mant && out != 0 {
		out = 0
	}
	if neg {
		out |= f.signBit()
	}
	return out
}

func signOf(x float64, f ffmt) uint64 {
	if math.Signbit(x) {
		return f.signBit()
	}
	return 0
}

// overflow is the result of a finite value too large for f.
func overflow(neg bool, f ffmt, mode rmode, satfinite bool) uint64 {
	s := uint64(0)
	if neg {
		s = f.signBit()
	}
	toMax := satfinite || mode == rz || mode == rm && !neg || mode == rp && neg
	if toMax {
		return s | f.maxFinite()
	}
	return s | f.inf()
}

// decode returns the value of bits in format f (exactly, as a float64).
func decodeFloat(b uint64, f ffmt) float64 {
	neg := b&f.signBit() != 0
	e := int(b >> f.mant & (1<<f.exp - 1))
	m := b & (1<<f.mant - 1)
	var v float64
	switch {
	case e == 1<<f.exp-1:
		if m != 0 {
			return math.NaN()
		}
		v = math.Inf(1)
	case e == 0:
		v = math.Ldexp(float64(m), f.emin()-int(f.mant))
	default:
		v = math.Ldexp(float64(m|1<<f.mant), e-f.bias()-int(f.mant))
	}
	if neg {
		v = -v
	}
	return v
}

// twoSum returns s, e with s = fl(a+b) and s+e = a+b exactly (Knuth).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	if math.IsInf(s, 0) || math.IsNaN(e) {
		e = 0
	}
	return s, e
}

// f32 helpers: registers hold an f32 as its bits in the low 32 bits.

func f32(x uint64) float32   { return math.Float32frombits(uint32(x)) }
func b32(x float32) uint64   { return uint64(math.Float32bits(x)) }
func f64(x uint64) float64   { return math.Float64frombits(x) }
func b64(x float64) uint64   { return math.Float64bits(x) }
func isSub32(x float32) bool { return x != 0 && math.Abs(float64(x)) < 0x1p-126 }

// ftz32 flushes a subnormal f32 to a sign-preserving zero.
func ftz32(x float32) float32 {
	if isSub32(x) {
		return float32(math.Copysign(0, float64(x)))
	}
	return x
}

// round32 rounds hi+lo to f32 with mode (rn takes the hardware path when the
// pair is exact; the directed modes adjust the nearest f32 by the sign of what
// it dropped, when that is a normal number).
func round32(hi, lo float64, mode rmode, ftz bool) float32 {
	if mode == rn && lo == 0 && !ftz {
		return float32(hi)
	}
	if mode == rz || mode == rm || mode == rp {
		r := float32(hi)
		if a := math.Abs(float64(r)); a >= 0x1p-126 && a <= math.MaxFloat32 {
			d := (hi - float64(r)) + lo // exact difference, then the residual: the sign is right
			switch {
			case d == 0:
				return r
			case mode == rm && d < 0, mode == rz && d < 0 && r > 0:
				return stepDown32(r)
			case mode == rp && d > 0, mode == rz && d > 0 && r < 0:
				return stepUp32(r)
			}
			return r
		}
	}
	return math.Float32frombits(uint32(round(hi, lo, fmtF32, mode, false, ftz)))
}

// stepUp32 and stepDown32 are the next f32 toward +inf and -inf of a finite
// nonzero x.
func stepUp32(x float32) float32 {
	b := math.Float32bits(x)
	if x > 0 {
		return math.Float32frombits(b + 1)
	}
	return math.Float32frombits(b - 1)
}

func stepDown32(x float32) float32 {
	b := math.Float32bits(x)
	if x > 0 {
		return math.Float32frombits(b - 1)
	}
	return math.Float32frombits(b + 1)
}

// fmaRN32 is fma.rn.f32. The product of two f32 is exact in float64, so the
// float64 FMA is a·b+c rounded once to 53 bits; rounding that to 24 bits is
// the single rounding to f32 unless it sits exactly on an f32 tie (or in the
// subnormal range), when the exact path decides.
func fmaRN32(a, b, c float32) float32 {
	r := math.FMA(float64(a), float64(b), float64(c))
	if u := math.Float64bits(r); u&(1<<29-1) != 1<<28 && (math.Abs(r) >= 0x1p-126 || r == 0) {
		return float32(r)
	}
	return fmaf32(a, b, c, rn, false)
}

// fmaf32 is fma.rnd.f32: a·b+c rounded once.
func fmaf32(a, b, c float32, mode rmode, ftz bool) float32 {
	if ftz {
		a, b, c = ftz32(a), ftz32(b), ftz32(c)
	}
	p := float64(a) * float64(b) // exact: 24+24 bits
	if math.IsInf(p, 0) || math.IsNaN(p) || math.IsInf(float64(c), 0) || math.IsNaN(float64(c)) {
		return round32(p+float64(c), 0, mode, ftz)
	}
	s, e := twoSum(p, float64(c))
	if mode == rn && !ftz {
		// float32(s) is right unless s sits exactly on a tie of f32 or is small
		// enough for f32 subnormals (double rounding); then take the slow path.
		sb := math.Float64bits(s)
		if sb&(1<<29-1) != 1<<28 && math.Abs(s) >= 0x1p-126 {
			return float32(s)
		}
	}
	return round32(s, e, mode, ftz)
}

// addf32 is add.rnd.f32.
func addf32(a, b float32, mode rmode, ftz bool) float32 {
	if ftz {
		a, b = ftz32(a), ftz32(b)
	}
	if mode == rn && !ftz {
		return a + b
	}
	s, e := twoSum(float64(a), float64(b))
	return round32(s, e, mode, ftz)
}

// mulf32 is mul.rnd.f32.
func mulf32(a, b float32, mode rmode, ftz bool) float32 {
	if ftz {
		a, b = ftz32(a), ftz32(b)
	}
	if mode == rn && !ftz {
		return a * b
	}
	return round32(float64(a)*float64(b), 0, mode, ftz)
}

// divf32 is div.rnd.f32 (IEEE division).
func divf32(a, b float32, mode rmode, ftz bool) float32 {
	if ftz {
		a, b = ftz32(a), ftz32(b)
	}
	if mode == rn && !ftz {
		return a / b
	}
	q := float64(a) / float64(b)
	if math.IsInf(q, 0) || math.IsNaN(q) || q == 0 {
		return round32(q, 0, mode, ftz)
	}
	// the remainder a − q·b is exact in float64 (fma); its sign against b's is
	// the sign of what the quotient dropped.
	rem := math.FMA(-q, float64(b), float64(a))
	lo := 0.0
	if rem != 0 {
		lo = math.Copysign(math.SmallestNonzeroFloat64, rem*float64(b))
	}
	return round32(q, lo, mode, ftz)
}

// sqrtf32 is sqrt.rnd.f32.
func sqrtf32(a float32, mode rmode, ftz bool) float32 {
	if ftz {
		a = ftz32(a)
	}
	s := math.Sqrt(float64(a))
	if mode == rn && !ftz || math.IsNaN(s) || math.IsInf(s, 0) || s == 0 {
		return round32(s, 0, rn, ftz)
	}
	rem := math.FMA(-s, s, float64(a))
	lo := 0.0
	if rem != 0 {
		lo = math.Copysign(math.SmallestNonzeroFloat64, rem)
	}
	return round32(s, lo, mode, ftz)
}

// f64 arithmetic with a directed rounding mode: hi+lo pairs where float64
// cannot tell, big.Float would; PTX kernels use .rn on f64 (the only mode the
// fast paths here take), so the others round the float64 result's neighbours by
// the sign of the error-free residual.
func round64(hi, lo float64, mode rmode) float64 {
	if mode == rn || lo == 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return hi
	}
	switch mode {
	case rz:
		if (hi > 0) != (lo > 0) {
			return math.Nextafter(hi, 0)
		}
	case rm:
		if lo < 0 {
			return math.Nextafter(hi, math.Inf(-1))
		}
	case rp:
		if lo > 0 {
			return math.Nextafter(hi, math.Inf(1))
		}
	case rna:
		return hi // ties cannot occur with lo ≠ 0
	}
	return hi
}

// twoProd returns p, e with p = fl(a·b) and p+e = a·b exactly.
func twoProd(a, b float64) (p, e float64) {
	p = a * b
	if math.IsInf(p, 0) || math.IsNaN(p) {
		return p, 0
	}
	return p, math.FMA(a, b, -p)
}

// bf16 and f16 conversions, the hot ones by bit manipulation.

// bf16FromF32 rounds an f32 to bf16 bits (nearest even; NaN to canonical).
func bf16FromF32(x float32) uint16 {
	u := math.Float32bits(x)
	if u&0x7fffffff > 0x7f800000 {
		return 0x7fff
	}
	u += 0x7fff + (u >> 16 & 1)
	return uint16(u >> 16)
}

// bf16ToF32 widens bf16 bits exactly.
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// f16ToF32 widens f16 bits exactly.
func f16ToF32(h uint16) float32 { return float32(decodeFloat(uint64(h), fmtF16)) }

// f16FromF32 rounds an f32 to f16 bits with mode.
func f16FromF32(x float32, mode rmode) uint16 {
	return uint16(round(float64(x), 0, fmtF16, mode, false, false))
}

// clz64 helper for bfind and friends.
func clz64(x uint64) int { return bits.LeadingZeros64(x) }

// Conversions the simulated cuBLAS shares with the instructions.

// ToBF16 rounds x to bfloat16 (to nearest, ties to even; NaN to the canonical
// NaN) and returns its bits.
func ToBF16(x float32) uint16 { return bf16FromF32(x) }

// FromBF16 widens bfloat16 bits exactly.
func FromBF16(h uint16) float32 { return bf16ToF32(h) }

// ToF16 rounds x to IEEE half precision (to nearest even) and returns its bits.
func ToF16(x float32) uint16 { return f16FromF32(x, rn) }

// FromF16 widens half-precision bits exactly.
func FromF16(h uint16) float32 { return f16ToF32(h) }

// RoundTF32 rounds x to TF32 (10 fraction bits) to nearest, ties away from
// zero, as cvt.rna.tf32.f32 does; the result is an f32 with the low 13 bits zero.
func RoundTF32(x float32) float32 {
	r := round(float64(x), 0, fmtTF32, rna, false, false)
	s := r >> 18 & 1
	e := r >> 10 & 0xff
	frac := r & 0x3ff
	return math.Float32frombits(uint32(s<<31 | e<<23 | frac<<13))
}
