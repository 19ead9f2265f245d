package sim

import (
	"math"
	"math/bits"
)

// The approximate instructions (ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh,
// div .approx/.full) return the exact result rounded to the format, moved by a
// pseudo-random amount within the error bound the PTX ISA states for the
// instruction (unless Config.ExactApprox). The amount is a hash of the device's
// seed and the input bits, so a run is repeatable and a kernel that is correct
// only when its approximations are exact fails. The bounds (PTX ISA 9.1):
//
//	ex2.approx.f32            2 ulp of the correctly rounded result
//	lg2.approx.f32            2^-22 absolute in (0.5, 2), 2^-22 relative elsewhere
//	rcp.approx.f32            1 ulp
//	rsqrt.approx.f32          2^-22.9 relative
//	sqrt.approx.f32           2^-23 relative
//	sin/cos.approx.f32        2^-20.5 absolute in [-2π, 2π], 2^-14.7 in [-100π, 100π]
//	tanh.approx.f32           2^-11 relative
//	div.approx/.full.f32      2 ulp
//	ex2.approx.f16 / .bf16    2^-9.9 / 2^-7 relative
//	tanh.approx.f16 / .bf16   2^-10.987 / 2^-8 absolute
//
// Relative and absolute bounds leave room for the final rounding (the
// perturbation is drawn within the bound less half an ulp), so results stay
// inside the stated bound. A result that is exactly representable (2^n of an
// integer n, the reciprocal of a power of two, sin 0, tanh 0) is returned
// exactly: the hardware's table-driven approximations are exact there, and
// kernels rely on exp(0) = 1.

// noise returns a number in [-1, 1) fixed by the device's seed, the input and
// salt: like the hardware's, an approximation is a function of its input.
func (w *warp) noise(x uint64, salt uint64) float64 {
	if w.l.dev.cfg.ExactApprox {
		return 0
	}
	z := w.l.dev.cfg.Seed ^ x*0x9e3779b97f4a7c15 ^ salt*0xbf58476d1ce4e5b9
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(int64(z)>>11) / (1 << 52)
}

// ulps32 moves a finite nonzero x by k ulps (toward +inf for k > 0), stopping
// at the largest finite value and at zero.
func ulps32(x float32, k int) float32 {
	b := int64(math.Float32bits(x) & 0x7fffffff)
	if x < 0 {
		k = -k
	}
	b = min(max(b+int64(k), 0), 0x7f7fffff)
	r := math.Float32frombits(uint32(b))
	if x < 0 {
		r = -r
	}
	return r
}

// ulpNoise turns noise into a whole number of ulps in [-n, n].
func ulpNoise(u float64, n int) int {
	k := int(math.Floor((u + 1) / 2 * float64(2*n+1)))
	return min(max(k-n, -n), n)
}

const (
	saltEx2 = iota + 1
	saltLg2
	saltRcp
	saltRsqrt
	saltSqrt
	saltSin
	saltCos
	saltTanh
	saltDiv
)

// approxF32 computes the .approx f32 functions for one value (a, and b for div).
func (w *warp) approxF32(fn string, a, b float32, ftz bool) float32 {
	if ftz {
		a, b = ftz32(a), ftz32(b)
	}
	x := float64(a)
	bitsA := uint64(math.Float32bits(a))
	var r float32
	switch fn {
	case "ex2":
		switch {
		case a != a:
			return float32(math.NaN())
		case math.IsInf(x, -1):
			return 0
		case math.IsInf(x, 1):
			return a
		}
		y := math.Exp2(x)
		r = float32(y)
		if r != 0 && !math.IsInf(float64(r), 0) && float64(r) != y {
			r = ulps32(r, ulpNoise(w.noise(bitsA, saltEx2), 2))
			if r < 0 {
				r = 0
			}
		}
	case "lg2":
		switch {
		case a != a || a < 0:
			return float32(math.NaN())
		case a == 0:
			return float32(math.Inf(-1))
		case math.IsInf(x, 1):
			return a
		}
		y := math.Log2(x)
		if float64(float32(y)) == y && math.Exp2(y) == x {
			return float32(y)
		}
		u := w.noise(bitsA, saltLg2)
		if x > 0.5 && x < 2 {
			y += u * (0x1p-22 - 0x1p-24)
		} else {
			y *= 1 + u*(0x1p-22-0x1p-24)
		}
		r = float32(y)
	case "rcp":
		switch {
		case a != a:
			return a
		case a == 0:
			return float32(math.Copysign(math.Inf(1), x))
		case math.IsInf(x, 0):
			return float32(math.Copysign(0, x))
		}
		r = 1 / a
		if r != 0 && !math.IsInf(float64(r), 0) && float64(r)*x != 1 {
			r = ulps32(r, ulpNoise(w.noise(bitsA, saltRcp), 1))
		}
	case "rsqrt":
		switch {
		case a != a || a < 0:
			return float32(math.NaN())
		case a == 0:
			return float32(math.Copysign(math.Inf(1), x))
		case math.IsInf(x, 1):
			return 0
		}
		y := 1 / math.Sqrt(x)
		if float64(float32(y)) == y && y*y*x == 1 {
			return float32(y)
		}
		r = float32(y * (1 + w.noise(bitsA, saltRsqrt)*(math.Exp2(-22.9)-0x1p-24)))
	case "sqrt":
		switch {
		case a != a || a < 0:
			return float32(math.NaN())
		case a == 0 || math.IsInf(x, 1):
			return a
		}
		y := math.Sqrt(x)
		if float64(float32(y)) == y && y*y == x {
			return float32(y)
		}
		r = float32(y * (1 + w.noise(bitsA, saltSqrt)*(0x1p-23-0x1p-24)))
	case "sin", "cos":
		if a != a || math.IsInf(x, 0) {
			return float32(math.NaN())
		}
		var y float64
		salt := uint64(saltSin)
		if fn == "sin" {
			y = math.Sin(x)
		} else {
			y, salt = math.Cos(x), saltCos
		}
		if a == 0 { // sin ±0 = ±0, cos 0 = 1
			return float32(y)
		}
		switch ax := math.Abs(x); {
		case ax <= 2*math.Pi:
			y += w.noise(bitsA, salt) * (math.Exp2(-20.5) - 0x1p-25)
		case ax <= 100*math.Pi:
			y += w.noise(bitsA, salt) * (math.Exp2(-14.7) - 0x1p-25)
		}
		r = float32(max(-1, min(1, y)))
	case "tanh":
		switch {
		case a != a:
			return a
		case a == 0:
			return a
		}
		y := math.Tanh(x) * (1 + w.noise(bitsA, saltTanh)*(0x1p-11-0x1p-24))
		r = float32(max(-1, min(1, y)))
	case "div":
		bitsB := uint64(math.Float32bits(b))
		r = a / b
		if r != 0 && !math.IsInf(float64(r), 0) && r == r && float64(r)*float64(b) != float64(a) {
			r = ulps32(r, ulpNoise(w.noise(bitsA^bitsB<<32, saltDiv), 2))
		}
	}
	if ftz {
		r = ftz32(r)
	}
	return r
}

// approxHalf computes ex2 and tanh .approx for f16 and bf16 values (bits).
func (w *warp) approxHalf(fn string, a uint64, f ffmt, ftz bool) uint64 {
	x := decodeFloat(a, f)
	if ftz {
		x = ftzIn(x, f)
	}
	if x != x {
		return f.canonicalNaN()
	}
	u := w.noise(a|uint64(f.mant)<<48, saltEx2+saltTanh)
	halfUlp := math.Ldexp(1, -int(f.mant)-1)
	var y float64
	switch fn {
	case "ex2":
		if math.IsInf(x, -1) {
			return 0
		}
		bound := math.Exp2(-9.9)
		if f == fmtBF16 {
			bound = 0x1p-7
		}
		y = math.Exp2(x) * (1 + u*max(bound-halfUlp, 0))
	case "tanh":
		if x == 0 {
			return a & mask(f.width())
		}
		bound := math.Exp2(-10.987)
		if f == fmtBF16 {
			bound = 0x1p-8
		}
		y = math.Tanh(x) + u*max(bound-halfUlp, 0)
		y = max(-1, min(1, y))
	}
	return round(y, 0, f, rn, false, ftz)
}

func approxLanes(fn string) execFn {
	if fn == "ex2" {
		return xEx2Approx
	}
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb := &w.r[in.d], &w.r[in.a], &w.r[in.b]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			d[l] = b32(w.approxF32(fn, f32(ra[l]), f32(rb[l]), in.ftz))
		}
	}
}

// xEx2Approx is ex2.approx.f32 (the hot one: every expf), approxF32's "ex2" inlined.
func xEx2Approx(w *warp, in *inst, m uint32) {
	d, ra := &w.r[in.d], &w.r[in.a]
	exact := w.l.dev.cfg.ExactApprox
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		a := f32(ra[l])
		if in.ftz {
			a = ftz32(a)
		}
		x := float64(a)
		var r float32
		switch {
		case a != a:
			r = float32(math.NaN())
		case math.IsInf(x, -1):
			r = 0
		case math.IsInf(x, 1):
			r = a
		default:
			y := math.Exp2(x)
			r = float32(y)
			if !exact && r != 0 && !math.IsInf(float64(r), 0) && float64(r) != y {
				r = ulps32(r, ulpNoise(w.noise(uint64(math.Float32bits(a)), saltEx2), 2))
			}
		}
		if in.ftz {
			r = ftz32(r)
		}
		d[l] = b32(r)
	}
}

func approxHalfLanes(fn string, f ffmt, pairs bool) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra := &w.r[in.d], &w.r[in.a]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			a := ra[l]
			lo := w.approxHalf(fn, a&0xffff, f, in.ftz)
			if pairs {
				d[l] = w.approxHalf(fn, a>>16&0xffff, f, in.ftz)<<16 | lo
			} else {
				d[l] = lo
			}
		}
	}
}
