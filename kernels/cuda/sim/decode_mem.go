package sim

import ()

// memory instruction modifiers that change nothing in a sequential simulator
var memHints = []string{"weak", "volatile", "relaxed", "acquire", "release", "acq_rel", "mmio",
	"cta", "gpu", "sys", "cluster", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc",
	"L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last", "L1::no_allocate",
	"L2::evict_normal", "L2::evict_first", "L2::evict_last", "L2::64B", "L2::128B", "L2::256B"}

func takeHints(m *mods) {
	for _, h := range memHints {
		for m.has(h) {
		}
	}
}

func takeSpace(m *mods) space {
	switch m.one("global", "shared", "shared::cta", "local", "param", "param::entry", "const") {
	case "global":
		return spGlobal
	case "shared", "shared::cta":
		return spShared
	case "local":
		return spLocal
	case "param", "param::entry":
		return spParam
	case "const":
		return spConst
	}
	return spGeneric
}

func takeVec(m *mods) int {
	switch m.one("v2", "v4", "v8") {
	case "v2":
		return 2
	case "v4":
		return 4
	case "v8":
		return 8
	}
	return 1
}

// memType checks the element type of ld/st.
func (d *decoder) memType(m *mods) (ptype, error) {
	t, err := d.oneType(m)
	if err != nil {
		return t, err
	}
	if t.class == tcPred || t.size == 16 || t.name == "tf32" {
		return t, d.errf("ld/st of .%s", t.name)
	}
	return t, nil
}

func decLd(d *decoder, s *Instr, m *mods, in *inst) error {
	sp := takeSpace(m)
	nc := m.has("nc")
	takeHints(m)
	if s.Parts[0] == "ldu" && sp == spGeneric {
		sp = spGlobal
	}
	if nc && sp != spGlobal {
		return d.errf(".nc is for ld.global")
	}
	nv := takeVec(m)
	t, err := d.memType(m)
	if err != nil {
		return err
	}
	if nv*t.size > 16 {
		return d.errf("a %d-byte vector access (at most 16)", nv*t.size)
	}
	if err := d.nargs(s, 2, 3); err != nil { // a third operand: a cache policy
		return err
	}
	base, off, asp, err := d.addr(s.Args[1])
	if err != nil {
		return err
	}
	if asp != spGeneric {
		if sp != asp && !(sp == spGeneric && asp != spParam) {
			return d.errf("the address is in .%s, the instruction reads .%s", asp, sp)
		}
		if sp == spGeneric {
			// a named variable read through a generic ld: make the address generic
			sp = asp
		}
	}
	in.a, in.imm, in.space, in.size, in.nvec = base, off, sp, uint8(t.size), uint8(nv)
	spec := &ldSpec{signed: t.signed()}
	var dsts []Operand
	if nv == 1 {
		dsts = []Operand{s.Args[0]}
	} else {
		if s.Args[0].Kind != oVec || len(s.Args[0].Elems) != nv {
			return d.errf("ld.v%d needs {%d registers}", nv, nv)
		}
		dsts = s.Args[0].Elems
	}
	for _, o := range dsts {
		slot, rb, err := d.dst(o, t)
		if err != nil {
			return err
		}
		if o.Kind == oSink {
			slot = -1
		}
		in.vd = append(in.vd, slot)
		spec.regBits = append(spec.regBits, rb)
	}
	in.aux = spec
	switch {
	case sp == spParam:
		if base >= 0 {
			return d.errf("ld.param through a register address is not simulated")
		}
		in.fn = xLdParam
	case sp == spGlobal && nv == 1 && t.size == 4 && base >= 0 && in.vd[0] >= 0 && !(spec.signed && spec.regBits[0] > 32):
		// (the fast path zero-extends: a signed load into a wider register takes xLd)
		in.d = in.vd[0]
		in.fn = xLdGlobal32
	default:
		in.fn = xLd
	}
	return nil
}

func decSt(d *decoder, s *Instr, m *mods, in *inst) error {
	sp := takeSpace(m)
	takeHints(m)
	nv := takeVec(m)
	t, err := d.memType(m)
	if err != nil {
		return err
	}
	if nv*t.size > 16 {
		return d.errf("a %d-byte vector access (at most 16)", nv*t.size)
	}
	if err := d.nargs(s, 2, 3); err != nil {
		return err
	}
	base, off, asp, err := d.addr(s.Args[0])
	if err != nil {
		return err
	}
	if asp == spParam || sp == spParam {
		return d.errf("st.param (a device function call) is not simulated")
	}
	if asp != spGeneric {
		if sp != asp && sp != spGeneric {
			return d.errf("the address is in .%s, the instruction writes .%s", asp, sp)
		}
		sp = asp
	}
	in.a, in.imm, in.space, in.size, in.nvec = base, off, sp, uint8(t.size), uint8(nv)
	var vals []Operand
	if nv == 1 {
		vals = []Operand{s.Args[1]}
	} else {
		if s.Args[1].Kind != oVec || len(s.Args[1].Elems) != nv {
			return d.errf("st.v%d needs {%d values}", nv, nv)
		}
		vals = s.Args[1].Elems
	}
	for _, o := range vals {
		slot, err := d.src(o, t)
		if err != nil {
			return err
		}
		in.va = append(in.va, slot)
	}
	if sp == spGlobal && nv == 1 && t.size == 4 && base >= 0 {
		in.b = in.va[0]
		in.fn = xStGlobal32
	} else {
		in.fn = xSt
	}
	return nil
}

func decCvta(d *decoder, s *Instr, m *mods, in *inst) error {
	to := m.has("to")
	sp := takeSpace(m)
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "u64" && t.name != "u32" {
		return d.errf("cvta takes .u32 or .u64")
	}
	if err := d.abc(s, in, t, 1); err != nil {
		return err
	}
	in.size = uint8(t.size)
	switch {
	case sp == spGlobal || sp == spConst:
		in.fn = xMov
	case sp == spShared && to:
		in.fn = cvtaTo(sharedWindow, sp)
	case sp == spShared:
		in.fn = cvtaFrom(sharedWindow)
	case sp == spLocal && to:
		in.fn = cvtaTo(localWindow, sp)
	case sp == spLocal:
		in.fn = cvtaFrom(localWindow)
	default:
		return d.errf("cvta of .%s is not simulated", sp)
	}
	return nil
}

func decIsspacep(d *decoder, s *Instr, m *mods, in *inst) error {
	sp := takeSpace(m)
	if sp == spGeneric || sp == spParam {
		return d.errf("isspacep needs .global, .shared or .local")
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	var err error
	if in.d, err = d.pred(s.Args[0]); err != nil {
		return err
	}
	u64t, _ := typeOf("u64")
	if in.a, err = d.src(s.Args[1], u64t); err != nil {
		return err
	}
	in.fn = isspacep(sp)
	return nil
}

var atomOps = []string{"add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"}

func decAtom(d *decoder, s *Instr, m *mods, in *inst) error {
	isRed := s.Parts[0] == "red"
	for m.one("relaxed", "acquire", "release", "acq_rel", "cta", "gpu", "sys", "noftz") != "" {
	}
	m.prefixed("L2::cache_hint")
	sp := takeSpace(m)
	if sp != spGlobal && sp != spShared && sp != spGeneric {
		return d.errf("%s on .%s", s.Parts[0], sp)
	}
	op := m.one(atomOps...)
	if op == "" {
		return d.errf("%s needs an operation (.add, .min, .max, .inc, .dec, .and, .or, .xor, .exch, .cas)", s.Parts[0])
	}
	if isRed && (op == "cas" || op == "exch") {
		return d.errf("red.%s", op)
	}
	if takeVec(m) != 1 {
		return d.errf("vector atomics are not simulated")
	}
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	ok := false
	switch op {
	case "add":
		ok = t.name == "u32" || t.name == "s32" || t.name == "u64" || t.name == "f32" || t.name == "f64" || isHalf(t)
	case "min", "max":
		ok = t.class == tcUint || t.class == tcSint || t.name == "f32" || t.name == "f64"
		ok = ok && t.size >= 4
	case "inc", "dec":
		ok = t.name == "u32"
	case "and", "or", "xor", "exch", "cas":
		ok = t.name == "b32" || t.name == "b64" || (op == "exch" || op == "cas") && t.name == "b16"
	}
	if !ok {
		return d.errf("%s.%s.%s is not a PTX atomic", s.Parts[0], op, t.name)
	}
	want := 3
	if isRed {
		want = 2
	}
	if op == "cas" {
		want = 4
	}
	if err := d.nargs(s, want, want+1); err != nil { // + a cache policy
		return err
	}
	args := s.Args
	if !isRed {
		if in.d, _, err = d.dst(args[0], t); err != nil {
			return err
		}
		args = args[1:]
	}
	base, off, asp, err := d.addr(args[0])
	if err != nil {
		return err
	}
	if asp != spGeneric {
		sp = asp
	}
	in.a, in.imm, in.space = base, off, sp
	if in.b, err = d.src(args[1], t); err != nil {
		return err
	}
	if op == "cas" {
		if in.c, err = d.src(args[2], t); err != nil {
			return err
		}
	}
	in.aux = &atomSpec{op: op, typ: t, result: !isRed}
	in.fn = xAtom
	d.prog.usesAtomic = true
	return nil
}
