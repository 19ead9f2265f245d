package sim

import (
	"fmt"
	"math/bits"
)

// Decoders of the integer and bit instructions: mul, mad, div, rem, abs, neg,
// min, max, the logic ops (on .bN and .pred), shifts, bit counts and fields,
// prmt, lop3, shf, sad.

func decMul(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	switch {
	case t.name == "f32" || t.name == "f64":
		if err := d.abc(s, in, t, 2); err != nil {
			return err
		}
		fmods(m, in, rn)
		switch {
		case t.name == "f32" && in.mode == rn && !in.ftz && !in.sat:
			in.fn = xMulF32
		case t.name == "f32":
			in.fn = f32mode("mul")
		case in.mode == rn:
			in.fn = xMulF64
		default:
			in.fn = f64mode("mul")
		}
		return nil
	case isHalf(t):
		if err := d.abc(s, in, t, 2); err != nil {
			return err
		}
		return d.halfOp("mul", t, m, in)
	}
	if err := d.intType(t); err != nil {
		return err
	}
	mode := m.one("lo", "hi", "wide")
	if mode == "" {
		return d.errf("integer mul needs .lo, .hi or .wide")
	}
	if mode == "wide" {
		if t.size == 8 {
			return d.errf("mul.wide of 64-bit operands")
		}
		wt, _ := typeOf(fmt.Sprintf("%c%d", t.name[0], 2*t.bits()))
		if err := d.ops(s, in, wt, t, t); err != nil {
			return err
		}
		switch {
		case t.size == 2 && t.signed():
			in.fn = xMulWideS16
		case t.size == 2:
			in.fn = xMulWideU16
		case t.signed():
			in.fn = xMulWideS32
		default:
			in.fn = xMulWideU32
		}
		return nil
	}
	if err := d.abc(s, in, t, 2); err != nil {
		return err
	}
	if mode == "lo" {
		in.fn = pick(t, xMulLo16, xMulLoU32, xMulLoU64)
		return nil
	}
	switch {
	case t.size == 4 && t.signed():
		in.fn = xMulHiS32
	case t.size == 4:
		in.fn = xMulHiU32
	case t.size == 8 && t.signed():
		in.fn = xMulHiS64
	case t.size == 8:
		in.fn = xMulHiU64
	default:
		signed := t.signed()
		in.fn = lanes2(func(a, b uint64) uint64 {
			if signed {
				return uint64(uint16((int32(int16(a)) * int32(int16(b))) >> 16))
			}
			return uint64(uint16(uint32(uint16(a)) * uint32(uint16(b)) >> 16))
		})
	}
	return nil
}

func decMad(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.isFloat() || isHalf(t) {
		return decFma(d, s, m, in) // mad.rnd.f32 is fma
	}
	if err := d.intType(t); err != nil {
		return err
	}
	if m.has("cc") {
		return d.errf("extended-precision arithmetic (.cc) is not simulated")
	}
	mode := m.one("lo", "hi", "wide")
	if mode == "" {
		return d.errf("integer mad needs .lo, .hi or .wide")
	}
	sat := m.has("sat")
	dt := t
	if mode == "wide" {
		if t.size != 4 {
			return d.errf("mad.wide is simulated for 32-bit operands")
		}
		dt, _ = typeOf(fmt.Sprintf("%c64", t.name[0]))
	}
	if err := d.ops(s, in, dt, t, t, dt); err != nil {
		return err
	}
	switch {
	case sat:
		if mode != "hi" || t.name != "s32" {
			return d.errf(".sat is for mad.hi.s32")
		}
		in.fn = lanes3(func(a, b, c uint64) uint64 {
			r := (int64(int32(a))*int64(int32(b)))>>32 + int64(int32(c))
			return uint64(uint32(int32(min(max(r, -1<<31), 1<<31-1))))
		})
	case mode == "lo":
		in.fn = pick(t, xMadLo16, xMadLoU32, xMadLoU64)
	case mode == "wide" && t.signed():
		in.fn = xMadWideS32
	case mode == "wide":
		in.fn = xMadWideU32
	case t.size == 4 && t.signed():
		in.fn = xMadHiS32
	case t.size == 4:
		in.fn = xMadHiU32
	case t.size == 8:
		signed := t.signed()
		in.fn = lanes3(func(a, b, c uint64) uint64 {
			if signed {
				return mulHiS64(a, b) + c
			}
			return mulHiU64(a, b) + c
		})
	default:
		return d.errf("mad.hi.%s is not simulated", t.name)
	}
	return nil
}

func decDiv(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.typedOps(s, m, in, 2)
	if err != nil {
		return err
	}
	switch t.name {
	case "f32":
		kind := m.one("approx", "full")
		explicit := fmods(m, in, rn)
		switch {
		case kind != "":
			if explicit || in.sat {
				return d.errf("div.%s takes no rounding modifier", kind)
			}
			in.fn = approxLanes("div")
		case !explicit:
			return d.errf("div.f32 needs .approx, .full or a rounding modifier")
		case in.mode == rn && !in.ftz:
			in.fn = xDivF32
		default:
			in.fn = f32mode("div")
		}
	case "f64":
		fmods(m, in, rn)
		if in.mode == rn {
			in.fn = xDivF64
		} else {
			in.fn = f64mode("div")
		}
	default:
		if err := d.intType(t); err != nil {
			return err
		}
		in.fn = divLanes(t.bits(), t.signed(), false)
	}
	return nil
}

func decRem(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.intType(t); err != nil {
		return err
	}
	if err := d.abc(s, in, t, 2); err != nil {
		return err
	}
	in.fn = divLanes(t.bits(), t.signed(), true)
	return nil
}

func decUnaryArith(d *decoder, s *Instr, m *mods, in *inst) error {
	op := s.Parts[0]
	t, err := d.typedOps(s, m, in, 1)
	if err != nil {
		return err
	}
	switch {
	case t.name == "f32":
		in.ftz = m.has("ftz")
		if !in.ftz {
			in.fn = xAbsF32
			if op == "neg" {
				in.fn = xNegF32
			}
		} else {
			in.fn = f32mode(op)
		}
	case t.name == "f64":
		in.fn = xAbsF64
		if op == "neg" {
			in.fn = xNegF64
		}
	case isHalf(t):
		return d.halfOp(op, t, m, in)
	default:
		if err := d.intType(t, tcSint); err != nil {
			return err
		}
		if op == "abs" {
			in.fn = pick(t, xAbsS16, xAbsS32, xAbsS64)
		} else {
			in.fn = pick(t, xNeg16, xNegS32, xNegS64)
		}
	}
	return nil
}

func decMinMax(d *decoder, s *Instr, m *mods, in *inst) error {
	op := s.Parts[0]
	t, err := d.typedOps(s, m, in, 2)
	if err != nil {
		return err
	}
	switch {
	case t.name == "f32" || t.name == "f64":
		in.ftz = m.has("ftz")
		if m.has("NaN") {
			in.imm = 1
		}
		switch {
		case t.name == "f32" && !in.ftz && in.imm == 0 && op == "min":
			in.fn = xMinF32
		case t.name == "f32" && !in.ftz && in.imm == 0:
			in.fn = xMaxF32
		case t.name == "f32":
			in.fn = f32mode(op)
		case in.imm == 0 && op == "min":
			in.fn = xMinF64
		case in.imm == 0:
			in.fn = xMaxF64
		default:
			in.fn = f64mode(op)
		}
	case isHalf(t):
		return d.halfOp(op, t, m, in)
	default:
		if err := d.intType(t, tcSint, tcUint); err != nil {
			return err
		}
		type tab struct{ s16, u16, s32, u32, s64, u64 execFn }
		f := tab{xMinS16, xMinU16, xMinS32, xMinU32, xMinS64, xMinU64}
		if op == "max" {
			f = tab{xMaxS16, xMaxU16, xMaxS32, xMaxU32, xMaxS64, xMaxU64}
		}
		if t.signed() {
			in.fn = pick(t, f.s16, f.s32, f.s64)
		} else {
			in.fn = pick(t, f.u16, f.u32, f.u64)
		}
	}
	return nil
}

func decLogic(d *decoder, s *Instr, m *mods, in *inst) error {
	op := s.Parts[0]
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	n := 2
	if op == "not" || op == "cnot" {
		n = 1
	}
	if t.class == tcPred {
		if op == "cnot" {
			return d.errf("cnot.pred")
		}
		if err := d.nargs(s, n+1); err != nil {
			return err
		}
		dp, err := d.pred(s.Args[0])
		if err != nil {
			return err
		}
		var srcs [2]int32
		var negs [2]bool
		for i := 0; i < n; i++ {
			if srcs[i], negs[i], err = d.predSrc(s.Args[1+i]); err != nil {
				return err
			}
		}
		in.d, in.a, in.b = dp, srcs[0], srcs[1]
		if n == 1 {
			in.b = srcs[0]
		}
		na, nb := negs[0], negs[1]
		in.fn = func(w *warp, in *inst, m uint32) {
			a, b := w.p[in.a], w.p[in.b]
			if na {
				a = ^a
			}
			if nb {
				b = ^b
			}
			var r uint32
			switch op {
			case "and":
				r = a & b
			case "or":
				r = a | b
			case "xor":
				r = a ^ b
			case "not":
				r = ^a
			}
			w.p[in.d] = w.p[in.d]&^m | r&m
		}
		return nil
	}
	if t.class != tcBits {
		return d.errf("type .%s not allowed (logic ops take .bN or .pred)", t.name)
	}
	if err := d.abc(s, in, t, n); err != nil {
		return err
	}
	switch op {
	case "and":
		in.fn = pick(t, xAnd16, xAnd32, xAnd64)
	case "or":
		in.fn = pick(t, xOr16, xOr32, xOr64)
	case "xor":
		in.fn = pick(t, xXor16, xXor32, xXor64)
	case "not":
		in.fn = pick(t, xNot16, xNot32, xNot64)
	case "cnot":
		in.fn = pick(t, xCnot16, xCnot32, xCnot64)
	}
	if in.fn == nil {
		return d.errf("type .%s not allowed", t.name)
	}
	return nil
}

func decShift(d *decoder, s *Instr, m *mods, in *inst) error {
	op := s.Parts[0]
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.intType(t); err != nil {
		return err
	}
	if op == "shl" && t.class != tcBits {
		return d.errf("shl takes .b16, .b32 or .b64")
	}
	if err := d.ops(s, in, t, t, u32t); err != nil {
		return err
	}
	switch {
	case op == "shl":
		in.fn = pick(t, xShl16, xShl32, xShl64)
	case t.signed():
		in.fn = pick(t, xShrS16, xShrS32, xShrS64)
	default:
		in.fn = pick(t, xShrU16, xShrU32, xShrU64)
	}
	return nil
}

func decBitCount(d *decoder, s *Instr, m *mods, in *inst) error {
	op := s.Parts[0]
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "b32" && t.name != "b64" {
		return d.errf("%s takes .b32 or .b64", op)
	}
	dt := u32t
	if op == "brev" {
		dt = t
	}
	if err := d.ops(s, in, dt, t); err != nil {
		return err
	}
	switch op {
	case "popc":
		in.fn = pick(t, nil, xPopc32, xPopc64)
	case "clz":
		in.fn = pick(t, nil, xClz32, xClz64)
	case "brev":
		in.fn = pick(t, nil, xBrev32, xBrev64)
	}
	return nil
}

func decBfe(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if (t.class != tcUint && t.class != tcSint) || t.size < 4 {
		return d.errf("bfe takes .u32, .s32, .u64 or .s64")
	}
	if err := d.ops(s, in, t, t, u32t, u32t); err != nil {
		return err
	}
	width, signed := t.bits(), t.signed()
	in.fn = lanes3(func(a, b, c uint64) uint64 { return bfe(a, uint32(b), uint32(c), width, signed) })
	return nil
}

func decBfi(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "b32" && t.name != "b64" {
		return d.errf("bfi takes .b32 or .b64")
	}
	if err := d.ops(s, in, t, t, t, u32t, u32t); err != nil {
		return err
	}
	width := t.bits()
	in.fn = func(w *warp, in *inst, m uint32) {
		dd, ra, rb, rc, re := &w.r[in.d], &w.r[in.a], &w.r[in.b], &w.r[in.c], &w.r[in.e]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			dd[l] = bfi(ra[l], rb[l], uint32(rc[l]), uint32(re[l]), width)
		}
	}
	return nil
}

func decBfind(d *decoder, s *Instr, m *mods, in *inst) error {
	shiftamt := m.has("shiftamt")
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if (t.class != tcUint && t.class != tcSint) || t.size < 4 {
		return d.errf("bfind takes .u32, .s32, .u64 or .s64")
	}
	if err := d.ops(s, in, u32t, t); err != nil {
		return err
	}
	width, signed := t.bits(), t.signed()
	in.fn = lanes1(func(a uint64) uint64 { return bfind(a, width, signed, shiftamt) })
	return nil
}

func decPrmt(d *decoder, s *Instr, m *mods, in *inst) error {
	mode := m.one("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "b32" {
		return d.errf("prmt takes .b32")
	}
	if err := d.abc(s, in, t, 3); err != nil {
		return err
	}
	if mode == "" {
		in.fn = xPrmt
		return nil
	}
	tab := prmtModes[mode]
	in.fn = lanes3(func(a, b, c uint64) uint64 { return uint64(prmtMode(tab, uint32(a), uint32(b), uint32(c))) })
	return nil
}

func decLop3(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "b32" {
		return d.errf("lop3 takes .b32")
	}
	if err := d.nargs(s, 5); err != nil {
		return err
	}
	if in.d, _, err = d.dst(s.Args[0], t); err != nil {
		return err
	}
	for i, p := range []*int32{&in.a, &in.b, &in.c} {
		if *p, err = d.src(s.Args[1+i], t); err != nil {
			return err
		}
	}
	lut := s.Args[4]
	if lut.Kind != oInt || lut.Int < 0 || lut.Int > 255 {
		return d.errf("lop3's truth table must be a constant 0..255")
	}
	imm := uint8(lut.Int)
	in.fn = lanes3(func(a, b, c uint64) uint64 { return uint64(lop3(uint32(a), uint32(b), uint32(c), imm)) })
	return nil
}

func decShf(d *decoder, s *Instr, m *mods, in *inst) error {
	dir := m.one("l", "r")
	mode := m.one("wrap", "clamp")
	if dir == "" || mode == "" {
		return d.errf("shf needs .l or .r and .wrap or .clamp")
	}
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "b32" {
		return d.errf("shf takes .b32")
	}
	if err := d.ops(s, in, t, t, t, u32t); err != nil {
		return err
	}
	left, wrap := dir == "l", mode == "wrap"
	in.fn = lanes3(func(a, b, c uint64) uint64 { return uint64(shf(uint32(a), uint32(b), uint32(c), left, wrap)) })
	return nil
}

func decSad(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.intType(t, tcSint, tcUint); err != nil {
		return err
	}
	if err := d.abc(s, in, t, 3); err != nil {
		return err
	}
	width, signed := t.bits(), t.signed()
	in.fn = lanes3(func(a, b, c uint64) uint64 {
		var diff uint64
		if signed {
			x, y := int64(sext(a, width)), int64(sext(b, width))
			diff = uint64(absI64(x - y))
		} else {
			x, y := a&mask(width), b&mask(width)
			if x > y {
				diff = x - y
			} else {
				diff = y - x
			}
		}
		return (c + diff) & mask(width)
	})
	return nil
}
