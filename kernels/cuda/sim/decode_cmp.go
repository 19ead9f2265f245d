package sim

import (
	"math/bits"
)

// Decoders of the comparisons: setp, selp, set.

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
