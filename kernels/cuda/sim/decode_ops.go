package sim

import ()

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

// typedOps consumes the one type modifier and decodes d and n sources of it.
func (d *decoder) typedOps(s *Instr, m *mods, in *inst, n int) (ptype, error) {
	t, err := d.oneType(m)
	if err != nil {
		return t, err
	}
	return t, d.abc(s, in, t, n)
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
	t, err := d.typedOps(s, m, in, 2)
	if err != nil {
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

var u32t, _ = typeOf("u32")
var b32t, _ = typeOf("b32")
var predt, _ = typeOf("pred")
