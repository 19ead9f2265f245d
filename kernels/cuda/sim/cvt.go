package sim

import (
	"math"
	"math/bits"
)

// cvtSpec is one decoded cvt: the source and destination types and modifiers.
type cvtSpec struct {
	dst, src   ptype
	mode       rmode  // floating rounding (rn when none given)
	irnd       string // "rni", "rzi", "rmi", "rpi" or ""
	ftz, sat   bool
	relu       bool
	satfinite  bool
	dstRegBits uint // the destination register's width (sign extension)
	pack       bool // .f16x2/.bf16x2 from two f32
}

func fmtOf(t ptype) ffmt {
	switch t.name {
	case "f16", "f16x2":
		return fmtF16
	case "bf16", "bf16x2":
		return fmtBF16
	case "tf32":
		return fmtTF32
	case "f64":
		return fmtF64
	}
	return fmtF32
}

// value reads x as source type t: floats exactly as float64, integers as an
// int64/uint64 pair (isInt).
func cvtRead(x uint64, t ptype, ftz bool) (f float64, i uint64, isInt bool) {
	switch t.class {
	case tcFloat:
		switch t.name {
		case "f64":
			return f64(x), 0, false
		case "f32":
			v := f32(x)
			if ftz {
				v = ftz32(v)
			}
			return float64(v), 0, false
		case "tf32":
			return float64(f32(x)), 0, false
		default:
			return decodeFloat(x&0xffff, fmtOf(t)), 0, false
		}
	case tcSint:
		return 0, sext(x&mask(t.bits()), t.bits()), true
	}
	return 0, x & mask(t.bits()), true
}

// cvt converts one value (b is the second f32 of a packing conversion).
func (c *cvtSpec) convert(a, b uint64) uint64 {
	if c.pack {
		return c.toFloat(a)<<16 | c.toFloat(b)&0xffff
	}
	var r uint64
	if c.dst.class == tcFloat {
		r = c.toFloat(a)
	} else {
		r = c.toInt(a)
	}
	if c.dst.class == tcSint && c.dstRegBits > c.dst.bits() {
		r = sext(r, c.dst.bits()) & mask(c.dstRegBits)
	}
	return r
}

func (c *cvtSpec) toFloat(a uint64) uint64 {
	src := c.src
	f, iv, isInt := cvtRead(a, src, c.ftz)
	df := fmtOf(c.dst)
	var hi, lo float64
	if isInt {
		if src.class == tcSint {
			v := int64(iv)
			hi = float64(v)
			// the exact residual v − hi (|v| < 2^63, so hi ≤ 2^63 and the difference fits)
			if hi == 0x1p63 {
				lo = -float64(uint64(1<<63) - uint64(v))
			} else {
				lo = float64(v - int64(hi))
			}
		} else {
			hi = float64(iv)
			if hi == 0x1p64 {
				lo = -float64(-iv)
			} else {
				lo = float64(int64(iv - uint64(hi)))
			}
		}
	} else {
		hi = f
		if c.irnd != "" { // round to an integral value in the same format
			hi = roundInt(hi, c.irnd)
		}
	}
	if c.sat {
		hi, lo = sat01(hi), 0
	}
	if c.relu && (hi < 0 || hi == 0 && lo < 0) {
		hi, lo = 0, 0
	}
	if c.relu && hi != hi {
		return df.canonicalNaN()
	}
	switch {
	case c.dst.name == "f64":
		if hi != hi {
			return 0x7fffffffffffffff
		}
		return b64(round64(hi, lo, c.mode))
	case c.dst.name == "f32" && c.mode == rn && lo == 0 && !c.ftz:
		v := float32(hi)
		if v != v {
			return 0x7fffffff
		}
		return b32(v)
	case c.dst.name == "bf16" && c.mode == rn && lo == 0 && src.name == "f32" && !c.satfinite:
		return uint64(bf16FromF32(float32(hi)))
	}
	mode := c.mode
	r := round(hi, lo, df, mode, c.satfinite, c.ftz && c.dst.name == "f32")
	if c.dst.name == "tf32" {
		// tf32 keeps the f32 layout with the low 13 bits zero
		r = round(hi, lo, fmtTF32, mode, c.satfinite, false)
		s := r >> 18 & 1
		e := r >> 10 & 0xff
		frac := r & 0x3ff
		r = s<<31 | e<<23 | frac<<13
	}
	return r
}

func (c *cvtSpec) toInt(a uint64) uint64 {
	f, iv, isInt := cvtRead(a, c.src, c.ftz)
	db := c.dst.bits()
	signed := c.dst.class == tcSint
	if isInt {
		// integer to integer: truncate, or clamp with .sat
		if !c.sat {
			return iv & mask(db)
		}
		srcSigned := c.src.class == tcSint
		return clampInt(iv, srcSigned, db, signed)
	}
	if f != f {
		if c.src.name == "f64" && db == 64 || db == 64 {
			return 1 << 63
		}
		return 0
	}
	f = roundInt(f, c.irnd)
	// saturate to the destination range (the default for float to int)
	if signed {
		lo, hi := -math.Ldexp(1, int(db)-1), math.Ldexp(1, int(db)-1)
		switch {
		case f <= lo:
			return uint64(int64(-1)<<(db-1)) & mask(db)
		case f >= hi:
			return mask(db - 1)
		}
		return uint64(int64(f)) & mask(db)
	}
	switch {
	case f <= 0:
		return 0
	case f >= math.Ldexp(1, int(db)):
		return mask(db)
	}
	return uint64(f) & mask(db)
}

func roundInt(f float64, irnd string) float64 {
	switch irnd {
	case "rni":
		return math.RoundToEven(f)
	case "rzi":
		return math.Trunc(f)
	case "rmi":
		return math.Floor(f)
	case "rpi":
		return math.Ceil(f)
	}
	return f
}

// clampInt clamps an integer (sign-extended when srcSigned) to the range of a
// dst-bit integer.
func clampInt(v uint64, srcSigned bool, db uint, dstSigned bool) uint64 {
	if srcSigned {
		x := int64(v)
		var lo, hi int64
		if dstSigned {
			lo, hi = -1<<(db-1), 1<<(db-1)-1
			if db == 64 {
				lo, hi = math.MinInt64, math.MaxInt64
			}
		} else {
			lo, hi = 0, int64(mask(db))
			if db == 64 {
				hi = math.MaxInt64
				if x < 0 {
					return 0
				}
				return uint64(x)
			}
		}
		return uint64(min(max(x, lo), hi)) & mask(db)
	}
	var hi uint64 = mask(db)
	if dstSigned {
		hi = mask(db - 1)
	}
	return min(v, hi) & mask(db)
}

// xCvtSatF32 is cvt.sat.f32.f32 (clamp to [0, 1], NaN to 0), expf's range check.
func xCvtSatF32(w *warp, in *inst, m uint32) {
	d, ra := &w.r[in.d], &w.r[in.a]
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		x := f32(ra[l])
		switch {
		case !(x > 0): // NaN, zeros and negatives
			x = 0
		case x > 1:
			x = 1
		}
		d[l] = b32(x)
	}
}

func cvtLanes(c *cvtSpec) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb := &w.r[in.d], &w.r[in.a], &w.r[in.b]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			d[l] = c.convert(ra[l], rb[l])
		}
	}
}
