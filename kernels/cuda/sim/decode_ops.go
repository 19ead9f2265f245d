package sim

import (
	"fmt"
	"math/bits"
	"strings"
)

// The decoders of each PTX opcode: they check types, modifiers and operands and
// choose the function that executes the instruction. An opcode missing here,
// or a modifier a decoder does not consume, is an error naming the line.

type opDecoder func(d *decoder, s *Instr, m *mods, in *inst) error

var opDecoders map[string]opDecoder

func init() {
	opDecoders = map[string]opDecoder{
		"add": decAddSub, "sub": decAddSub, "mul": decMul, "mad": decMad, "fma": decFma,
		"div": decDiv, "rem": decRem, "abs": decUnaryArith, "neg": decUnaryArith,
		"min": decMinMax, "max": decMinMax,
		"and": decLogic, "or": decLogic, "xor": decLogic, "not": decLogic, "cnot": decLogic,
		"shl": decShift, "shr": decShift, "popc": decBitCount, "clz": decBitCount, "brev": decBitCount,
		"bfe": decBfe, "bfi": decBfi, "bfind": decBfind, "prmt": decPrmt, "lop3": decLop3, "shf": decShf,
		"sad": decSad, "copysign": decCopysign, "testp": decTestp,
		"ex2": decApprox, "lg2": decApprox, "sin": decApprox, "cos": decApprox, "tanh": decApprox,
		"rsqrt": decApprox, "rcp": decRcpSqrt, "sqrt": decRcpSqrt,
		"setp": decSetp, "selp": decSelp, "set": decSet,
		"mov": decMov, "cvt": decCvt, "cvta": decCvta, "isspacep": decIsspacep,
		"ld": decLd, "ldu": decLd, "st": decSt, "prefetch": decNop, "prefetchu": decNop,
		"atom": decAtom, "red": decAtom,
		"cp": decCp, "ldmatrix": decLdmatrix, "mma": decMma,
		"shfl": decShfl, "vote": decVote, "activemask": decActivemask, "redux": decRedux,
		"bar": decBar, "barrier": decBar, "membar": decFence, "fence": decFence,
		"bra": decBra, "ret": decExit, "exit": decExit, "trap": decTrap, "nanosleep": decNop,
	}
}

// instr decodes one instruction statement.
func (d *decoder) instr(s *Instr) (inst, error) {
	in := inst{guard: -1, d: d.sink, a: d.sink, b: d.sink, c: d.sink, e: -1}
	if s.Guard != "" {
		p, err := d.pred(Operand{Kind: oName, Name: s.Guard})
		if err != nil {
			return in, err
		}
		in.guard, in.gneg = p, s.GuardNeg
	}
	dec, ok := opDecoders[s.Parts[0]]
	if !ok {
		return in, d.errf("unknown instruction %q (not simulated; see the package doc for how to add one)", s.Parts[0])
	}
	ms := newMods(s.Parts[1:])
	if err := dec(d, s, ms, &in); err != nil {
		return in, err
	}
	return in, d.done(ms)
}

// operands helpers

// dsts decodes d, a, b[, c] with the same type t for all.
func (d *decoder) abc(s *Instr, in *inst, t ptype, n int) error {
	return d.ops(s, in, t, []ptype{t, t, t}[:n]...)
}

// ops decodes the operands d, a[, b, c, e]: the destination as dt, the
// sources as the types given, into in.d, in.a, in.b, in.c and in.e.
func (d *decoder) ops(s *Instr, in *inst, dt ptype, srcs ...ptype) error {
	if err := d.nargs(s, 1+len(srcs)); err != nil {
		return err
	}
	var err error
	if in.d, _, err = d.dst(s.Args[0], dt); err != nil {
		return err
	}
	slots := []*int32{&in.a, &in.b, &in.c, &in.e}
	for i, t := range srcs {
		if *slots[i], err = d.src(s.Args[1+i], t); err != nil {
			return err
		}
	}
	return nil
}

// fmods reads the floating-point modifiers: a rounding mode, .ftz, .sat.
func fmods(m *mods, in *inst, def rmode) (explicit bool) {
	r := m.one("rn", "rz", "rm", "rp")
	in.mode = def
	if r != "" {
		in.mode = rmodeNames[r]
		explicit = true
	}
	in.ftz = m.has("ftz")
	in.sat = m.has("sat")
	return explicit
}

func pick(t ptype, f16, f32, f64 execFn) execFn {
	switch t.size {
	case 2:
		return f16
	case 4:
		return f32
	case 8:
		return f64
	}
	return nil
}

func (d *decoder) intType(t ptype, ok ...tclass) error {
	if t.class == tcPred || t.class == tcFloat || t.class == tcPacked || t.size < 2 {
		return d.errf("type .%s not allowed", t.name)
	}
	if len(ok) > 0 {
		for _, c := range ok {
			if t.class == c {
				return nil
			}
		}
		return d.errf("type .%s not allowed", t.name)
	}
	return nil
}

// halfOp handles the .f16/.bf16 (x2) forms of an arithmetic op.
func (d *decoder) halfOp(op string, t ptype, m *mods, in *inst) error {
	f := fmtOf(t)
	r := m.one("rn")
	in.mode = rn
	_ = r
	in.ftz = m.has("ftz")
	in.sat = m.has("sat")
	if m.has("relu") {
		in.imm2 = 1
	}
	if (op == "min" || op == "max") && m.has("NaN") {
		in.imm = 1
	}
	in.fn = half(op, f, t.class == tcPacked)
	return nil
}

func isHalf(t ptype) bool {
	return t.name == "f16" || t.name == "bf16" || t.name == "f16x2" || t.name == "bf16x2"
}

func decAddSub(d *decoder, s *Instr, m *mods, in *inst) error {
	op := s.Parts[0]
	if m.has("cc") {
		return d.errf("extended-precision arithmetic (.cc) is not simulated")
	}
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 2); err != nil {
		return err
	}
	switch {
	case t.name == "f32":
		fmods(m, in, rn)
		if in.mode == rn && !in.ftz && !in.sat {
			in.fn = xAddF32
			if op == "sub" {
				in.fn = xSubF32
			}
		} else {
			in.fn = f32mode(op)
		}
	case t.name == "f64":
		fmods(m, in, rn)
		if in.ftz || in.sat {
			return d.errf(".ftz and .sat are for .f32")
		}
		if in.mode == rn {
			in.fn = xAddF64
			if op == "sub" {
				in.fn = xSubF64
			}
		} else {
			in.fn = f64mode(op)
		}
	case isHalf(t):
		return d.halfOp(op, t, m, in)
	default:
		if err := d.intType(t); err != nil {
			return err
		}
		if m.has("sat") {
			if t.name != "s32" {
				return d.errf(".sat is for .s32")
			}
			sub := op == "sub"
			in.fn = lanes2(func(a, b uint64) uint64 {
				x, y := int64(int32(a)), int64(int32(b))
				r := x + y
				if sub {
					r = x - y
				}
				return uint64(uint32(int32(min(max(r, -1<<31), 1<<31-1))))
			})
			return nil
		}
		if op == "add" {
			in.fn = pick(t, xAdd16, xAddU32, xAddU64)
		} else {
			in.fn = pick(t, xSub16, xSubU32, xSubU64)
		}
	}
	return nil
}

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

func decFma(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 3); err != nil {
		return err
	}
	switch {
	case t.name == "f32":
		explicit := fmods(m, in, rn)
		if !explicit && s.Parts[0] == "fma" {
			return d.errf("fma.f32 needs a rounding modifier (.rn, .rz, .rm, .rp)")
		}
		if in.mode == rn && !in.ftz && !in.sat {
			in.fn = xFmaF32
		} else {
			in.fn = f32mode("fma")
		}
	case t.name == "f64":
		fmods(m, in, rn)
		if in.mode == rn {
			in.fn = xFmaF64
		} else {
			in.fn = f64mode("fma")
		}
	case isHalf(t):
		return d.halfOp("fma", t, m, in)
	default:
		return d.errf("type .%s not allowed", t.name)
	}
	return nil
}

func decDiv(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 2); err != nil {
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
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 1); err != nil {
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
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 2); err != nil {
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

var u32t, _ = typeOf("u32")
var b32t, _ = typeOf("b32")
var predt, _ = typeOf("pred")

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

func decCopysign(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 2); err != nil {
		return err
	}
	switch t.name {
	case "f32":
		in.fn = lanes2(func(a, b uint64) uint64 { return b&0x7fffffff | a&0x80000000 })
	case "f64":
		in.fn = lanes2(func(a, b uint64) uint64 { return b&^(1<<63) | a&(1<<63) })
	default:
		return d.errf("copysign takes .f32 or .f64")
	}
	return nil
}

func decTestp(d *decoder, s *Instr, m *mods, in *inst) error {
	class := m.one("finite", "infinite", "number", "notanumber", "normal", "subnormal")
	if class == "" {
		return d.errf("testp needs a class (.finite, .infinite, .number, .notanumber, .normal, .subnormal)")
	}
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "f32" && t.name != "f64" {
		return d.errf("testp takes .f32 or .f64")
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	if in.d, err = d.pred(s.Args[0]); err != nil {
		return err
	}
	if in.a, err = d.src(s.Args[1], t); err != nil {
		return err
	}
	in.b, in.c = in.a, -1
	f := fmtOf(t)
	is64 := t.name == "f64"
	in.fn = lanesPred(func(a, _ uint64) bool {
		x := float64(f32(a))
		if is64 {
			x = f64(a)
		}
		return testp(class, x, f)
	})
	return nil
}

func decApprox(d *decoder, s *Instr, m *mods, in *inst) error {
	fn := s.Parts[0]
	if !m.has("approx") {
		return d.errf("%s needs .approx", fn)
	}
	in.ftz = m.has("ftz")
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 1); err != nil {
		return err
	}
	switch {
	case t.name == "f32":
		in.b = in.a
		in.fn = approxLanes(fn)
	case isHalf(t) && (fn == "ex2" || fn == "tanh"):
		if fn == "ex2" && strings.HasPrefix(t.name, "bf16") && !in.ftz {
			return d.errf("ex2.approx.%s needs .ftz", t.name)
		}
		in.fn = approxHalfLanes(fn, fmtOf(t), t.class == tcPacked)
	default:
		return d.errf("%s.approx.%s is not simulated", fn, t.name)
	}
	return nil
}

func decRcpSqrt(d *decoder, s *Instr, m *mods, in *inst) error {
	fn := s.Parts[0]
	approx := m.has("approx")
	explicit := fmods(m, in, rn)
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.abc(s, in, t, 1); err != nil {
		return err
	}
	in.b = in.a
	switch {
	case approx && t.name == "f32":
		if explicit {
			return d.errf("%s.approx takes no rounding modifier", fn)
		}
		in.fn = approxLanes(fn)
	case approx:
		return d.errf("%s.approx.%s is not simulated", fn, t.name)
	case !explicit:
		return d.errf("%s.%s needs .approx or a rounding modifier", fn, t.name)
	case t.name == "f32" && in.mode == rn && !in.ftz:
		in.fn = xRcpF32
		if fn == "sqrt" {
			in.fn = xSqrtF32
		}
	case t.name == "f32":
		in.fn = f32mode(fn)
	case t.name == "f64" && in.mode == rn:
		in.fn = xRcpF64
		if fn == "sqrt" {
			in.fn = xSqrtF64
		}
	case t.name == "f64":
		in.fn = f64mode(fn)
	default:
		return d.errf("type .%s not allowed", t.name)
	}
	return nil
}

// comparison functions by operator and type
var intCmps = map[string][6]execFn{ // s16 u16 s32 u32 s64 u64
	"eq": {xEqI, xEqI, xEqI, xEqI, xEqI, xEqI},
	"ne": {xNeI, xNeI, xNeI, xNeI, xNeI, xNeI},
	"lt": {xLtS16, xLtU16, xLtS32, xLtU32, xLtS64, xLtU64},
	"le": {xLeS16, xLeU16, xLeS32, xLeU32, xLeS64, xLeU64},
	"gt": {xGtS16, xGtU16, xGtS32, xGtU32, xGtS64, xGtU64},
	"ge": {xGeS16, xGeU16, xGeS32, xGeU32, xGeS64, xGeU64},
	"lo": {xLtU16, xLtU16, xLtU32, xLtU32, xLtU64, xLtU64},
	"ls": {xLeU16, xLeU16, xLeU32, xLeU32, xLeU64, xLeU64},
	"hi": {xGtU16, xGtU16, xGtU32, xGtU32, xGtU64, xGtU64},
	"hs": {xGeU16, xGeU16, xGeU32, xGeU32, xGeU64, xGeU64},
}

var floatCmps = map[string][2]execFn{ // f32 f64
	"eq": {xEqF32, xEqF64}, "ne": {xNeF32, xNeF64}, "lt": {xLtF32, xLtF64}, "le": {xLeF32, xLeF64},
	"gt": {xGtF32, xGtF64}, "ge": {xGeF32, xGeF64}, "equ": {xEquF32, xEquF64}, "neu": {xNeuF32, xNeuF64},
	"ltu": {xLtuF32, xLtuF64}, "leu": {xLeuF32, xLeuF64}, "gtu": {xGtuF32, xGtuF64}, "geu": {xGeuF32, xGeuF64},
	"num": {xNumF32, xNumF64}, "nan": {xNanF32, xNanF64},
}

// cmpFn returns the comparison of op on t as a predicate-writing function.
func (d *decoder) cmpFn(op string, t ptype) (execFn, error) {
	switch {
	case t.name == "f32" || t.name == "f64":
		f, ok := floatCmps[op]
		if !ok {
			return nil, d.errf("comparison .%s on .%s", op, t.name)
		}
		if t.name == "f32" {
			return f[0], nil
		}
		return f[1], nil
	case t.name == "f16" || t.name == "bf16":
		f := fmtOf(t)
		cmp, ok := floatCmps[op]
		if !ok {
			return nil, d.errf("comparison .%s on .%s", op, t.name)
		}
		_ = cmp
		return func(w *warp, in *inst, m uint32) {
			ra, rb := &w.r[in.a], &w.r[in.b]
			var res uint32
			for l := range ra {
				x, y := decodeFloat(ra[l]&0xffff, f), decodeFloat(rb[l]&0xffff, f)
				if floatCompare(op, x, y) {
					res |= 1 << l
				}
			}
			w.setPred(in, m, res)
		}, nil
	case t.class == tcPred || t.class == tcPacked || t.size < 2:
		return nil, d.errf("comparison on .%s is not simulated", t.name)
	}
	f, ok := intCmps[op]
	if !ok {
		return nil, d.errf("comparison .%s on .%s", op, t.name)
	}
	if (op == "lo" || op == "ls" || op == "hi" || op == "hs") && t.class == tcSint {
		return nil, d.errf("comparison .%s is for unsigned types", op)
	}
	idx := map[int]int{2: 0, 4: 2, 8: 4}[t.size]
	if t.class != tcSint {
		idx++
	}
	if op == "eq" || op == "ne" { // the low bits of the type only
		eqs := [3]execFn{xEq16, xEq32, xEqI}
		if op == "ne" {
			eqs = [3]execFn{xNe16, xNe32, xNeI}
		}
		return eqs[idx/2], nil
	}
	return f[idx], nil
}

func floatCompare(op string, x, y float64) bool {
	nan := x != x || y != y
	switch op {
	case "eq":
		return x == y
	case "ne":
		return x != y && !nan
	case "lt":
		return x < y
	case "le":
		return x <= y
	case "gt":
		return x > y
	case "ge":
		return x >= y
	case "equ":
		return x == y || nan
	case "neu":
		return x != y
	case "ltu":
		return x < y || nan
	case "leu":
		return x <= y || nan
	case "gtu":
		return x > y || nan
	case "geu":
		return x >= y || nan
	case "num":
		return !nan
	case "nan":
		return nan
	}
	return false
}

var cmpOps = []string{"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"}

func decSetp(d *decoder, s *Instr, m *mods, in *inst) error {
	op := m.one(cmpOps...)
	if op == "" {
		return d.errf("setp needs a comparison")
	}
	boolop := m.one("and", "or", "xor")
	ftz := m.has("ftz")
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	_ = ftz // comparisons of subnormals: flushing cannot change an ordering but ±0
	if boolop != "" {
		err = d.nargs(s, 4)
	} else {
		err = d.nargs(s, 3)
	}
	if err != nil {
		return err
	}
	dst := s.Args[0]
	if dst.Kind == oPair {
		if in.d, err = d.pred(dst.Elems[0]); err != nil {
			return err
		}
		if in.e, err = d.pred(dst.Elems[1]); err != nil {
			return err
		}
	} else if in.d, err = d.pred(dst); err != nil {
		return err
	}
	if in.a, err = d.src(s.Args[1], t); err != nil {
		return err
	}
	if in.b, err = d.src(s.Args[2], t); err != nil {
		return err
	}
	in.c = -1
	if boolop != "" {
		c, neg, err := d.predSrc(s.Args[3])
		if err != nil {
			return err
		}
		in.c = c
		if neg {
			in.imm2 = 1
		}
		in.imm = map[string]int64{"and": boolAnd, "or": boolOr, "xor": boolXor}[boolop]
	}
	if ftz && t.name == "f32" {
		f, err := d.cmpFn(op, t)
		if err != nil {
			return err
		}
		_ = f
		in.fn = func(w *warp, in *inst, m uint32) {
			ra, rb := &w.r[in.a], &w.r[in.b]
			var res uint32
			for l := range ra {
				if floatCompare(op, float64(ftz32(f32(ra[l]))), float64(ftz32(f32(rb[l])))) {
					res |= 1 << l
				}
			}
			w.setPred(in, m, res)
		}
		return nil
	}
	in.fn, err = d.cmpFn(op, t)
	return err
}

func decSelp(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.nargs(s, 4); err != nil {
		return err
	}
	if err := d.ops(&Instr{Args: s.Args[:3]}, in, t, t, t); err != nil {
		return err
	}
	c, neg, err := d.predSrc(s.Args[3])
	if err != nil {
		return err
	}
	in.c = c
	if neg {
		in.imm2 = 1
	}
	in.fn = xSelp
	return nil
}

// set.CmpOp[.BoolOp].dtype.stype d, a, b[, {!}c]: d is all ones (integer) or
// 1.0 (f32) when the comparison holds.
func decSet(d *decoder, s *Instr, m *mods, in *inst) error {
	op := m.one(cmpOps...)
	if op == "" {
		return d.errf("set needs a comparison")
	}
	if m.one("and", "or", "xor") != "" {
		return d.errf("set with a boolean operation is not simulated")
	}
	m.has("ftz")
	ts := m.types()
	if len(ts) != 2 {
		return d.errf("set needs a destination and a source type")
	}
	dt, st := ts[0], ts[1]
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	var err error
	if in.d, _, err = d.dst(s.Args[0], dt); err != nil {
		return err
	}
	if in.a, err = d.src(s.Args[1], st); err != nil {
		return err
	}
	if in.b, err = d.src(s.Args[2], st); err != nil {
		return err
	}
	cmp, err := d.cmpFn(op, st)
	if err != nil {
		return err
	}
	tmp := d.newPred()
	isF32 := dt.name == "f32"
	in.fn = func(w *warp, in *inst, m uint32) {
		in2 := *in
		in2.d, in2.e, in2.c, in2.imm = tmp, -1, -1, 0
		cmp(w, &in2, m)
		p := w.p[tmp]
		dd := &w.r[in.d]
		for mm := m; mm != 0; mm &= mm - 1 {
			l := bits.TrailingZeros32(mm) & 31
			switch {
			case p>>l&1 == 0:
				dd[l] = 0
			case isF32:
				dd[l] = 0x3f800000
			default:
				dd[l] = 0xffffffff
			}
		}
	}
	return nil
}
