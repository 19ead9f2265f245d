package sim

import (
	"fmt"
	"math"
	"math/bits"
)

// Helpers of the generated loops (ops_gen.go) and the less frequent
// register-to-register instructions, which run through lane loops over a
// function value.

func mulHiU64(a, b uint64) uint64 {
	hi, _ := bits.Mul64(a, b)
	return hi
}

func mulHiS64(a, b uint64) uint64 {
	hi, _ := bits.Mul64(a, b)
	// signed correction of the unsigned high word
	if int64(a) < 0 {
		hi -= b
	}
	if int64(b) < 0 {
		hi -= a
	}
	return hi
}

func absI64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// shl shifts by b (clamped: a shift of the width or more gives 0).
func shl(a, b uint64, width uint) uint64 {
	if uint32(b) >= uint32(width) {
		return 0
	}
	return a << uint32(b)
}

func shrU(a, b uint64, width uint) uint64 {
	if uint32(b) >= uint32(width) {
		return 0
	}
	return a >> uint32(b)
}

func shrS(a int64, b uint64, width uint) int64 {
	if uint32(b) >= uint32(width) {
		return a >> 63
	}
	return a >> uint32(b)
}

// prmt is the default (no mode) byte permute.
func prmt(a, b, c uint32) uint32 {
	src := uint64(b)<<32 | uint64(a)
	var d uint32
	for i := 0; i < 4; i++ {
		sel := c >> (4 * i) & 0xf
		byt := uint32(src >> (8 * (sel & 7)) & 0xff)
		if sel&8 != 0 {
			if byt&0x80 != 0 {
				byt = 0xff
			} else {
				byt = 0
			}
		}
		d |= byt << (8 * i)
	}
	return d
}

// prmtModes are the source bytes of d.b0..b3 for each mode and c[1:0].
var prmtModes = map[string][4][4]uint8{
	"f4e":  {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},
	"b4e":  {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},
	"rc8":  {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
	"ecl":  {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},
	"ecr":  {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},
	"rc16": {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},
}

func prmtMode(tab [4][4]uint8, a, b, c uint32) uint32 {
	src := uint64(b)<<32 | uint64(a)
	sel := tab[c&3]
	var d uint32
	for i := 0; i < 4; i++ {
		d |= uint32(src>>(8*sel[i])&0xff) << (8 * i)
	}
	return d
}

// min and max of PTX: a NaN operand gives the other one, -0 is below +0.
func fminOf[T float32 | float64](a, b T) T {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && a == 0 && math.Signbit(float64(b)):
		return b
	case a <= b:
		return a
	}
	return b
}

func fmaxOf[T float32 | float64](a, b T) T {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && a == 0 && math.Signbit(float64(a)):
		return b
	case a >= b:
		return a
	}
	return b
}

func fminF32(a, b float32) float32 { return fminOf(a, b) }
func fmaxF32(a, b float32) float32 { return fmaxOf(a, b) }
func fminF64(a, b float64) float64 { return fminOf(a, b) }
func fmaxF64(a, b float64) float64 { return fmaxOf(a, b) }

func nan32(a uint64) bool { return uint32(a)&0x7fffffff > 0x7f800000 }
func nan64(a uint64) bool { return a&^(1<<63) > 0x7ff0000000000000 }

// Predicate combination of setp: p = cmp OP c, q = !cmp OP c.
const (
	boolNone = iota
	boolAnd
	boolOr
	boolXor
)

// setPred writes a comparison's result res (a bit per lane) into the predicate
// d (and its complement into e when there is one), combined with predicate c
// when the instruction has a boolean operation.
func (w *warp) setPred(in *inst, m, res uint32) {
	p, q := res, ^res
	if in.c >= 0 && in.imm != boolNone {
		c := w.p[in.c]
		if in.imm2 != 0 {
			c = ^c
		}
		switch in.imm {
		case boolAnd:
			p, q = p&c, q&c
		case boolOr:
			p, q = p|c, q|c
		case boolXor:
			p, q = p^c, q^c
		}
	}
	w.p[in.d] = w.p[in.d]&^m | p&m
	if in.e >= 0 {
		w.p[in.e] = w.p[in.e]&^m | q&m
	}
}

// Lane loops over function values, for the rarer instructions.

func lanes1(f func(a uint64) uint64) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra := &w.r[in.d], &w.r[in.a]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			d[l] = f(ra[l])
		}
	}
}

func lanes2(f func(a, b uint64) uint64) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb := &w.r[in.d], &w.r[in.a], &w.r[in.b]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			d[l] = f(ra[l], rb[l])
		}
	}
}

func lanes3(f func(a, b, c uint64) uint64) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb, rc := &w.r[in.d], &w.r[in.a], &w.r[in.b], &w.r[in.c]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			d[l] = f(ra[l], rb[l], rc[l])
		}
	}
}

// lanesPred computes a predicate from a per-lane test.
func lanesPred(f func(a, b uint64) bool) execFn {
	return func(w *warp, in *inst, m uint32) {
		ra, rb := &w.r[in.a], &w.r[in.b]
		var res uint32
		for l := range ra {
			if f(ra[l], rb[l]) {
				res |= 1 << l
			}
		}
		w.setPred(in, m, res)
	}
}

// Integer division and remainder fault on a zero divisor (the hardware gives an
// unspecified value; a kernel that divides by zero has a bug).
func divLanes(width uint, signed, rem bool) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb := &w.r[in.d], &w.r[in.a], &w.r[in.b]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			a, b := ra[l]&mask(width), rb[l]&mask(width)
			if b == 0 {
				w.fault(in, l, fmt.Sprintf("integer division by zero (%s)", in.op))
			}
			var r uint64
			if signed {
				x, y := int64(sext(a, width)), int64(sext(b, width))
				switch {
				case y == -1 && !rem:
					r = uint64(-x) // wraps for the minimum, as hardware does
				case y == -1:
					r = 0
				case rem:
					r = uint64(x % y)
				default:
					r = uint64(x / y)
				}
			} else if rem {
				r = a % b
			} else {
				r = a / b
			}
			d[l] = r & mask(width)
		}
	}
}

// bfe extracts a bit field (see the PTX ISA's semantics).
func bfe(a uint64, pos, ln uint32, width uint, signed bool) uint64 {
	pos &= 0xff
	ln &= 0xff
	msb := uint32(width - 1)
	var sbit uint64
	if signed && ln != 0 {
		sbit = a >> min(pos+ln-1, msb) & 1
	}
	var d uint64
	for i := uint32(0); i <= msb; i++ {
		var bit uint64
		if i < ln && pos+i <= msb {
			bit = a >> (pos + i) & 1
		} else {
			bit = sbit
		}
		d |= bit << i
	}
	return d
}

// bfi inserts the low len bits of a into b at pos.
func bfi(a, b uint64, pos, ln uint32, width uint) uint64 {
	pos &= 0xff
	ln &= 0xff
	d := b
	for i := uint32(0); i < ln && pos+i < uint32(width); i++ {
		bit := a >> i & 1
		d = d&^(1<<(pos+i)) | bit<<(pos+i)
	}
	return d & mask(width)
}

// bfind: the position of the most significant non-sign bit (0xffffffff when
// none); with shiftamt, the shift that would move it to the msb.
func bfind(a uint64, width uint, signed, shiftamt bool) uint64 {
	a &= mask(width)
	if signed && a>>(width-1)&1 == 1 {
		a = ^a & mask(width)
	}
	if a == 0 {
		return 0xffffffff
	}
	pos := uint64(63 - bits.LeadingZeros64(a))
	if shiftamt {
		return uint64(width-1) - pos
	}
	return pos
}

// lop3 evaluates the 8-bit truth table imm over a, b, c bitwise.
func lop3(a, b, c uint32, imm uint8) uint32 {
	var d uint32
	if imm&0x01 != 0 {
		d |= ^a & ^b & ^c
	}
	if imm&0x02 != 0 {
		d |= ^a & ^b & c
	}
	if imm&0x04 != 0 {
		d |= ^a & b & ^c
	}
	if imm&0x08 != 0 {
		d |= ^a & b & c
	}
	if imm&0x10 != 0 {
		d |= a & ^b & ^c
	}
	if imm&0x20 != 0 {
		d |= a & ^b & c
	}
	if imm&0x40 != 0 {
		d |= a & b & ^c
	}
	if imm&0x80 != 0 {
		d |= a & b & c
	}
	return d
}

// shf: the funnel shift of the 64-bit {b:a} by c, left or right, wrap or clamp.
func shf(a, b, c uint32, left, wrap bool) uint32 {
	n := c
	if wrap {
		n &= 31
	} else {
		n = min(n, 32)
	}
	v := uint64(b)<<32 | uint64(a)
	if left {
		return uint32((v << n) >> 32)
	}
	return uint32(v >> n)
}

// sat01 clamps to [0, 1], NaN to +0 (.sat of floating-point instructions).
func sat01(x float64) float64 {
	switch {
	case x != x:
		return 0
	case x <= 0:
		return 0 * math.Copysign(0, 1)
	case x > 1:
		return 1
	}
	return x
}

// f32mode runs the f32 arithmetic with a rounding mode, .ftz and .sat (one
// closure per operation: no choice is made per lane).
func f32mode(op string) execFn {
	var f func(in *inst, a, b, c float32) float32
	switch op {
	case "add":
		f = func(in *inst, a, b, c float32) float32 { return addf32(a, b, in.mode, in.ftz) }
	case "sub":
		f = func(in *inst, a, b, c float32) float32 { return addf32(a, -b, in.mode, in.ftz) }
	case "mul":
		f = func(in *inst, a, b, c float32) float32 { return mulf32(a, b, in.mode, in.ftz) }
	case "fma":
		f = func(in *inst, a, b, c float32) float32 { return fmaf32(a, b, c, in.mode, in.ftz) }
	case "div":
		f = func(in *inst, a, b, c float32) float32 { return divf32(a, b, in.mode, in.ftz) }
	case "sqrt":
		f = func(in *inst, a, b, c float32) float32 { return sqrtf32(a, in.mode, in.ftz) }
	case "rcp":
		f = func(in *inst, a, b, c float32) float32 { return divf32(1, a, in.mode, in.ftz) }
	case "min", "max":
		isMin := op == "min"
		f = func(in *inst, a, b, c float32) float32 {
			if in.ftz {
				a, b = ftz32(a), ftz32(b)
			}
			switch {
			case in.imm != 0 && (a != a || b != b): // .NaN
				return math.Float32frombits(0x7fffffff)
			case isMin:
				return fminF32(a, b)
			}
			return fmaxF32(a, b)
		}
	case "abs":
		f = func(in *inst, a, b, c float32) float32 {
			if in.ftz {
				a = ftz32(a)
			}
			return float32(math.Abs(float64(a)))
		}
	case "neg":
		f = func(in *inst, a, b, c float32) float32 {
			if in.ftz {
				a = ftz32(a)
			}
			return -a
		}
	}
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb, rc := &w.r[in.d], &w.r[in.a], &w.r[in.b], &w.r[in.c]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			r := f(in, f32(ra[l]), f32(rb[l]), f32(rc[l]))
			if in.sat {
				r = float32(sat01(float64(r)))
			}
			if r != r {
				r = math.Float32frombits(0x7fffffff)
			}
			d[l] = b32(r)
		}
	}
}

// f64mode runs the f64 arithmetic with a rounding mode.
func f64mode(op string) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb, rc := &w.r[in.d], &w.r[in.a], &w.r[in.b], &w.r[in.c]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			a, b := f64(ra[l]), f64(rb[l])
			var r float64
			switch op {
			case "add":
				s, e := twoSum(a, b)
				r = round64(s, e, in.mode)
			case "sub":
				s, e := twoSum(a, -b)
				r = round64(s, e, in.mode)
			case "mul":
				p, e := twoProd(a, b)
				r = round64(p, e, in.mode)
			case "fma":
				c := f64(rc[l])
				r = math.FMA(a, b, c)
				if in.mode != rn && !math.IsInf(r, 0) && !math.IsNaN(r) {
					// the residual's sign: a·b + c − r, from an exact product split
					p, pe := twoProd(a, b)
					s, se := twoSum(p, c)
					res := (s - r) + se + pe
					r = round64(r, res, in.mode)
				}
			case "div":
				q := a / b
				if in.mode != rn && !math.IsInf(q, 0) && !math.IsNaN(q) && q != 0 {
					r = round64(q, residual(math.FMA(-q, b, a), b), in.mode)
				} else {
					r = q
				}
			case "sqrt":
				s := math.Sqrt(a)
				if in.mode != rn && s != 0 && !math.IsNaN(s) && !math.IsInf(s, 0) {
					r = round64(s, residual(math.FMA(-s, s, a), 1), in.mode)
				} else {
					r = s
				}
			case "rcp":
				q := 1 / a
				if in.mode != rn && !math.IsInf(q, 0) && !math.IsNaN(q) && q != 0 {
					r = round64(q, residual(math.FMA(-q, a, 1), a), in.mode)
				} else {
					r = q
				}
			case "min", "max":
				if in.imm != 0 && (a != a || b != b) {
					r = math.Float64frombits(0x7fffffffffffffff)
				} else if op == "min" {
					r = fminF64(a, b)
				} else {
					r = fmaxF64(a, b)
				}
			}
			if in.sat {
				r = sat01(r)
			}
			d[l] = b64(r)
		}
	}
}

// residual is a tiny number with the sign of rem·b (zero when rem is): the
// sign of what a quotient or root dropped.
func residual(rem, b float64) float64 {
	if rem == 0 {
		return 0
	}
	if (rem < 0) != (b < 0) {
		return -math.SmallestNonzeroFloat64
	}
	return math.SmallestNonzeroFloat64
}

// half is the arithmetic of .f16, .bf16 and their x2 forms: each element is
// widened exactly, the operation computed in float64 (exact for add, sub and mul
// of two halves; fma rounds once more at 53 bits, which cannot change a result
// of 11 bits of precision) and rounded once to the format with mode.
func half(op string, f ffmt, pairs bool) execFn {
	one := func(in *inst, a, b, c uint64) uint64 {
		x, y, z := decodeFloat(a, f), decodeFloat(b, f), decodeFloat(c, f)
		if in.ftz {
			x, y, z = ftzIn(x, f), ftzIn(y, f), ftzIn(z, f)
		}
		var r, lo float64
		switch op {
		case "add":
			r, lo = twoSum(x, y)
		case "sub":
			r, lo = twoSum(x, -y)
		case "mul":
			r = x * y
		case "fma":
			p := x * y // exact for 11- or 8-bit significands
			r, lo = twoSum(p, z)
		case "neg":
			return (a ^ f.signBit()) & mask(f.width())
		case "abs":
			return a &^ f.signBit() & mask(f.width())
		case "min", "max":
			if x != x && y != y || in.imm != 0 && (x != x || y != y) {
				return f.canonicalNaN()
			}
			if op == "min" {
				r = fminF64(x, y)
			} else {
				r = fmaxF64(x, y)
			}
		}
		if in.sat {
			r, lo = sat01(r), 0
		}
		if in.imm2 != 0 && (r < 0 || r == 0 && math.Signbit(r)) { // .relu
			r, lo = 0, 0
		}
		return round(r, lo, f, in.mode, false, in.ftz)
	}
	w16 := f.width()
	return func(w *warp, in *inst, m uint32) {
		d, ra, rb, rc := &w.r[in.d], &w.r[in.a], &w.r[in.b], &w.r[in.c]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			a, b, c := ra[l], rb[l], rc[l]
			lo := one(in, a&mask(w16), b&mask(w16), c&mask(w16))
			if pairs {
				hi := one(in, a>>16&mask(w16), b>>16&mask(w16), c>>16&mask(w16))
				d[l] = hi<<16 | lo
			} else {
				d[l] = lo
			}
		}
	}
}

// ftzIn flushes a subnormal of format f to a signed zero.
func ftzIn(x float64, f ffmt) float64 {
	if x != 0 && math.Abs(x) < math.Ldexp(1, f.emin()) {
		return math.Copysign(0, x)
	}
	return x
}

// testp classes: finite, infinite, number, notanumber, normal, subnormal.
func testp(class string, x float64, f ffmt) bool {
	switch class {
	case "finite":
		return !math.IsInf(x, 0) && !math.IsNaN(x)
	case "infinite":
		return math.IsInf(x, 0)
	case "number":
		return !math.IsNaN(x)
	case "notanumber":
		return math.IsNaN(x)
	case "normal":
		return x != 0 && !math.IsInf(x, 0) && !math.IsNaN(x) && math.Abs(x) >= math.Ldexp(1, f.emin())
	case "subnormal":
		return x != 0 && math.Abs(x) < math.Ldexp(1, f.emin())
	}
	return false
}
