package sim

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

func decNop(d *decoder, s *Instr, m *mods, in *inst) error {
	// prefetch{.space}.level [a], prefetchu.L1 [a], nanosleep.u32 t: nothing to simulate
	for _, p := range m.parts {
		_ = p
	}
	for i := range m.used {
		m.used[i] = true
	}
	return nil
}

func decFence(d *decoder, s *Instr, m *mods, in *inst) error {
	// membar.{cta,gl,sys}, fence{.sem}{.scope}, fence.proxy.*: the simulator
	// runs one thread's memory operations at a time, in order; nothing to do.
	if len(s.Args) != 0 {
		return d.errf("%s takes no operands", s.Parts[0])
	}
	for i := range m.used {
		m.used[i] = true
	}
	return nil
}

func decBra(d *decoder, s *Instr, m *mods, in *inst) error {
	in.ctl = ctlBra
	if m.has("uni") {
		in.ctl = ctlBraUni
	}
	if err := d.nargs(s, 1); err != nil {
		return err
	}
	if s.Args[0].Kind != oName {
		return d.errf("bra takes a label")
	}
	if _, ok := d.labels[s.Args[0].Name]; !ok {
		return d.errf("branch to undefined label %s", s.Args[0].Name)
	}
	d.branch(len(d.prog.code), s.Args[0].Name)
	return nil
}

func decExit(d *decoder, s *Instr, m *mods, in *inst) error {
	m.has("uni")
	if len(s.Args) != 0 {
		return d.errf("%s takes no operands here (device function calls are not simulated)", s.Parts[0])
	}
	in.ctl = ctlExit
	return nil
}

func decTrap(d *decoder, s *Instr, m *mods, in *inst) error {
	in.fn = func(w *warp, in *inst, m uint32) {
		w.fault(in, bits.TrailingZeros32(m), "trap executed (a device-side assert or __trap)")
	}
	return nil
}

func decBar(d *decoder, s *Instr, m *mods, in *inst) error {
	m.has("cta")
	kind := m.one("sync", "arrive", "red", "warp")
	switch kind {
	case "sync":
	case "warp":
		if !m.has("sync") {
			return d.errf("bar.warp needs .sync")
		}
		if err := d.nargs(s, 1); err != nil {
			return err
		}
		var err error
		if in.a, err = d.src(s.Args[0], b32t); err != nil {
			return err
		}
		in.fn = xWarpSync
		return nil
	case "":
		return d.errf("%s needs .sync", s.Parts[0])
	default:
		return d.errf("%s.%s (producer/consumer barriers) is not simulated", s.Parts[0], kind)
	}
	aligned := s.Parts[0] == "bar" || m.has("aligned")
	if err := d.nargs(s, 1, 2); err != nil {
		return err
	}
	var err error
	if in.a, err = d.src(s.Args[0], u32t); err != nil {
		return err
	}
	in.b = -1
	if len(s.Args) == 2 {
		if in.b, err = d.src(s.Args[1], u32t); err != nil {
			return err
		}
	}
	if aligned {
		in.imm2 = 1
	}
	in.ctl = ctlBar
	in.fn = xBar
	return nil
}

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
	case sp == spGlobal && nv == 1 && t.size == 4 && base >= 0 && in.vd[0] >= 0:
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

func decMov(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	dst, src := s.Args[0], s.Args[1]
	if t.class == tcPred {
		if in.d, err = d.pred(dst); err != nil {
			return err
		}
		if src.Kind == oInt {
			v := uint32(0)
			if src.Int != 0 {
				v = fullMask
			}
			in.fn = func(w *warp, in *inst, m uint32) { w.p[in.d] = w.p[in.d]&^m | v&m }
			return nil
		}
		p, neg, err := d.predSrc(src)
		if err != nil {
			return err
		}
		in.a = p
		in.fn = func(w *warp, in *inst, m uint32) {
			v := w.p[in.a]
			if neg {
				v = ^v
			}
			w.p[in.d] = w.p[in.d]&^m | v&m
		}
		return nil
	}
	switch {
	case dst.Kind == oVec: // unpack: mov.b32 {lo, hi}, a
		n := len(dst.Elems)
		if t.class != tcBits || n < 2 || t.size%n != 0 {
			return d.errf("mov unpacking into %d parts of .%s", n, t.name)
		}
		part := t.bits() / uint(n)
		pt, _ := typeOf(fmt.Sprintf("b%d", part))
		if in.a, err = d.src(src, t); err != nil {
			return err
		}
		for _, o := range dst.Elems {
			slot, _, err := d.dst(o, pt)
			if err != nil {
				return err
			}
			in.vd = append(in.vd, slot)
		}
		in.fn = func(w *warp, in *inst, m uint32) {
			ra := &w.r[in.a]
			for mm := m; mm != 0; mm &= mm - 1 {
				l := bits.TrailingZeros32(mm) & 31
				v := ra[l]
				for i, slot := range in.vd {
					w.r[slot][l] = v >> (uint(i) * part) & mask(part)
				}
			}
		}
		return nil
	case src.Kind == oVec: // pack: mov.b32 d, {lo, hi}
		n := len(src.Elems)
		if t.class != tcBits || n < 2 || t.size%n != 0 {
			return d.errf("mov packing %d parts into .%s", n, t.name)
		}
		part := t.bits() / uint(n)
		pt, _ := typeOf(fmt.Sprintf("b%d", part))
		if in.d, _, err = d.dst(dst, t); err != nil {
			return err
		}
		for _, o := range src.Elems {
			slot, err := d.src(o, pt)
			if err != nil {
				return err
			}
			in.va = append(in.va, slot)
		}
		in.fn = func(w *warp, in *inst, m uint32) {
			dd := &w.r[in.d]
			for mm := m; mm != 0; mm &= mm - 1 {
				l := bits.TrailingZeros32(mm) & 31
				var v uint64
				for i, slot := range in.va {
					v |= (w.r[slot][l] & mask(part)) << (uint(i) * part)
				}
				dd[l] = v
			}
		}
		return nil
	}
	if err := d.abc(s, in, t, 1); err != nil {
		return err
	}
	switch t.size {
	case 2:
		in.fn = xZext16
	case 4:
		in.fn = xZext32
	default:
		in.fn = xMov
	}
	return nil
}

func decCvt(d *decoder, s *Instr, m *mods, in *inst) error {
	c := &cvtSpec{mode: rn}
	r := m.one("rn", "rz", "rm", "rp", "rna", "rni", "rzi", "rmi", "rpi")
	c.ftz = m.has("ftz")
	c.sat = m.has("sat")
	c.relu = m.has("relu")
	c.satfinite = m.has("satfinite")
	ts := m.types()
	if len(ts) != 2 {
		return d.errf("cvt needs a destination and a source type")
	}
	c.dst, c.src = ts[0], ts[1]
	dst, src := c.dst, c.src
	if dst.class == tcPred || src.class == tcPred || src.class == tcPacked || dst.name == "b8" || src.name == "b8" {
		return d.errf("cvt.%s.%s is not a conversion", dst.name, src.name)
	}
	if dst.class == tcBits || src.class == tcBits {
		return d.errf("cvt takes value types (.u/.s/.f), not .%s.%s", dst.name, src.name)
	}
	switch {
	case strings.HasPrefix(r, "r") && strings.HasSuffix(r, "i"):
		c.irnd = r
	case r != "":
		c.mode = rmodeNames[r]
	}
	dstF := dst.class == tcFloat || dst.class == tcPacked
	srcF := src.class == tcFloat
	// PTX's rules on rounding modifiers
	switch {
	case srcF && !dstF && c.irnd == "":
		return d.errf("float-to-integer cvt needs .rni, .rzi, .rmi or .rpi")
	case !srcF && dstF && (r == "" || c.irnd != ""):
		return d.errf("integer-to-float cvt needs .rn, .rz, .rm or .rp")
	case srcF && dstF && c.irnd != "" && dst.size != src.size:
		return d.errf("integer rounding in a float cvt needs types of one size")
	case srcF && dstF && dst.size < src.size && r == "":
		return d.errf("a narrowing float cvt needs a rounding modifier")
	case !srcF && !dstF && r != "":
		return d.errf("integer-to-integer cvt takes no rounding modifier")
	case dstF && dst.size > src.size && srcF && r != "" && c.irnd == "":
		return d.errf("a widening float cvt takes no rounding modifier")
	}
	if c.relu && !(dst.name == "f16" || dst.name == "bf16" || dst.class == tcPacked || dst.name == "tf32") {
		return d.errf(".relu is for .f16, .bf16 and packed destinations")
	}
	var err error
	if dst.class == tcPacked {
		if src.name != "f32" {
			return d.errf("cvt to .%s packs two .f32", dst.name)
		}
		if err := d.nargs(s, 3); err != nil {
			return err
		}
		c.pack = true
		if in.d, _, err = d.dst(s.Args[0], b32t); err != nil {
			return err
		}
		if in.a, err = d.src(s.Args[1], src); err != nil {
			return err
		}
		if in.b, err = d.src(s.Args[2], src); err != nil {
			return err
		}
		c.dst, _ = typeOf(strings.TrimSuffix(dst.name, "x2"))
		in.fn = cvtLanes(c)
		return nil
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	var rb uint
	if in.d, rb, err = d.dst(s.Args[0], dst); err != nil {
		return err
	}
	if in.a, err = d.src(s.Args[1], src); err != nil {
		return err
	}
	c.dstRegBits = rb
	in.fn = fastCvt(c)
	if in.fn == nil {
		in.fn = cvtLanes(c)
	}
	return nil
}

// fastCvt returns a generated loop for the common conversions, nil otherwise.
func fastCvt(c *cvtSpec) execFn {
	if c.sat && c.src.name == "f32" && c.dst.name == "f32" && c.irnd == "" && !c.ftz {
		return xCvtSatF32
	}
	if c.sat || c.relu || c.satfinite || c.ftz {
		return nil
	}
	src, dst := c.src, c.dst
	if src.class != tcFloat && dst.class != tcFloat && c.irnd == "" {
		sb, db := src.bits(), dst.bits()
		switch {
		case db <= sb || !src.signed(): // truncation or zero extension
			if dst.signed() && c.dstRegBits > db {
				break
			}
			switch db {
			case 8:
				return xZext8
			case 16:
				return xZext16
			case 32:
				return xZext32
			case 64:
				return xMov
			}
		case sb == 32 && db == 64 && src.signed():
			return xSext32to64
		case sb == 16 && db == 32:
			return xSext16to32
		case sb == 16 && db == 64:
			return xSext16to64
		case sb == 8 && db == 32:
			return xSext8to32
		case sb == 8 && db == 64:
			return xSext8to64
		}
		return nil
	}
	key := dst.name + "." + src.name
	if c.mode == rn && c.irnd == "" {
		switch key {
		case "f32.s32":
			return xCvtF32S32
		case "f32.u32":
			return xCvtF32U32
		case "f32.s64":
			return xCvtF32S64
		case "f32.u64":
			return xCvtF32U64
		case "f64.f32":
			return xCvtF64F32
		case "f32.f64":
			return xCvtF32F64
		case "f64.s32":
			return xCvtF64S32
		case "f64.u32":
			return xCvtF64U32
		case "f64.s64":
			return xCvtF64S64
		case "f64.u64":
			return xCvtF64U64
		case "f32.bf16":
			return xCvtF32BF16
		case "f32.f16":
			return xCvtF32F16
		case "bf16.f32":
			return xCvtBF16F32
		}
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

// cp.async family.
func decCp(d *decoder, s *Instr, m *mods, in *inst) error {
	if !m.has("async") {
		return d.errf("cp.%s is not simulated", strings.Join(m.parts, "."))
	}
	d.prog.usesAsync = true
	switch {
	case m.has("commit_group"):
		if len(s.Args) != 0 {
			return d.errf("cp.async.commit_group takes no operands")
		}
		in.fn = xCpAsyncCommit
		return nil
	case m.has("wait_group"):
		if err := d.nargs(s, 1); err != nil {
			return err
		}
		if s.Args[0].Kind != oInt || s.Args[0].Int < 0 {
			return d.errf("cp.async.wait_group takes a constant count")
		}
		in.imm = s.Args[0].Int
		in.fn = xCpAsyncWait
		return nil
	case m.has("wait_all"):
		if len(s.Args) != 0 {
			return d.errf("cp.async.wait_all takes no operands")
		}
		in.imm, in.imm2 = 0, 1
		in.fn = xCpAsyncWait
		return nil
	case m.has("mbarrier"):
		return d.errf("cp.async.mbarrier is not simulated")
	}
	cache := m.one("ca", "cg")
	if cache == "" {
		return d.errf("cp.async needs .ca or .cg")
	}
	dsp := m.one("shared", "shared::cta")
	if dsp == "" || !m.has("global") {
		return d.errf("cp.async copies .global to .shared")
	}
	m.prefixed("L2::cache_hint")
	m.one("L2::64B", "L2::128B", "L2::256B")
	if err := d.nargs(s, 3, 4, 5); err != nil {
		return err
	}
	dbase, doff, dsp2, err := d.addr(s.Args[0])
	if err != nil {
		return err
	}
	sbase, soff, _, err := d.addr(s.Args[1])
	if err != nil {
		return err
	}
	if dbase < 0 {
		dbase = d.constSlot(uint64(doff))
		doff = 0
	}
	if sbase < 0 {
		sbase = d.constSlot(uint64(soff))
		soff = 0
	}
	size := s.Args[2]
	if size.Kind != oInt || size.Int != 4 && size.Int != 8 && size.Int != 16 {
		return d.errf("cp.async size must be 4, 8 or 16")
	}
	if cache == "cg" && size.Int != 16 {
		return d.errf("cp.async.cg copies 16 bytes")
	}
	in.a, in.imm, in.b, in.imm2, in.size = dbase, doff, sbase, soff, uint8(size.Int)
	in.space = spShared
	_ = dsp2
	in.c = -1
	if len(s.Args) >= 4 {
		if in.c, err = d.src(s.Args[3], u32t); err != nil {
			return err
		}
	}
	in.fn = xCpAsync
	return nil
}

func decLdmatrix(d *decoder, s *Instr, m *mods, in *inst) error {
	if !m.has("sync") || !m.has("aligned") {
		return d.errf("ldmatrix needs .sync.aligned")
	}
	if !m.has("m8n8") {
		return d.errf("ldmatrix: only .m8n8 is simulated")
	}
	n := 0
	switch m.one("x1", "x2", "x4") {
	case "x1":
		n = 1
	case "x2":
		n = 2
	case "x4":
		n = 4
	default:
		return d.errf("ldmatrix needs .x1, .x2 or .x4")
	}
	if m.has("trans") {
		in.imm2 = 1
	}
	sp := m.one("shared", "shared::cta")
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "b16" {
		return d.errf("ldmatrix takes .b16")
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	if s.Args[0].Kind != oVec || len(s.Args[0].Elems) != n {
		return d.errf("ldmatrix.x%d needs {%d registers}", n, n)
	}
	for _, o := range s.Args[0].Elems {
		slot, _, err := d.dst(o, b32t)
		if err != nil {
			return err
		}
		in.vd = append(in.vd, slot)
	}
	base, off, asp, err := d.addr(s.Args[1])
	if err != nil {
		return err
	}
	if base < 0 {
		base = d.constSlot(uint64(off))
		off = 0
	}
	in.a, in.imm = base, off
	in.space = spGeneric
	if sp != "" || asp == spShared {
		in.space = spShared
	}
	in.fn = xLdmatrix
	return nil
}

func decMma(d *decoder, s *Instr, m *mods, in *inst) error {
	if !m.has("sync") || !m.has("aligned") {
		return d.errf("mma needs .sync.aligned")
	}
	spec := &mmaSpec{m: 16, n: 8}
	switch m.one("m16n8k16", "m16n8k8") {
	case "m16n8k16":
		spec.k = 16
	case "m16n8k8":
		spec.k = 8
	default:
		return d.errf("mma: only the m16n8k16 and m16n8k8 shapes are simulated")
	}
	if !m.has("row") || !m.has("col") {
		return d.errf("mma needs .row.col")
	}
	ts := m.types()
	if len(ts) != 4 {
		return d.errf("mma needs four types (.dtype.atype.btype.ctype)")
	}
	dt, at, bt, ct := ts[0], ts[1], ts[2], ts[3]
	if at.name != bt.name {
		return d.errf("mma with A .%s and B .%s", at.name, bt.name)
	}
	switch at.name {
	case "f16", "bf16":
		spec.ab = fmtOf(at)
	case "tf32":
		if spec.k != 8 {
			return d.errf("mma .tf32 is simulated for m16n8k8")
		}
		spec.ab = fmtTF32
	default:
		return d.errf("mma with .%s inputs is not simulated", at.name)
	}
	for _, x := range []ptype{dt, ct} {
		if x.name != "f32" && !(x.name == "f16" && at.name == "f16") {
			return d.errf("mma accumulator .%s with .%s inputs", x.name, at.name)
		}
	}
	spec.cF16, spec.dF16 = ct.name == "f16", dt.name == "f16"
	if err := d.nargs(s, 4); err != nil {
		return err
	}
	nd := 4
	if spec.dF16 {
		nd = 2
	}
	nc := 4
	if spec.cF16 {
		nc = 2
	}
	want := []int{nd, aRegs(spec), bRegs(spec), nc}
	for i, o := range s.Args {
		if o.Kind != oVec || len(o.Elems) != want[i] {
			return d.errf("operand %d of mma must be {%d registers}", i+1, want[i])
		}
	}
	for _, o := range s.Args[0].Elems {
		slot, _, err := d.dst(o, b32t)
		if err != nil {
			return err
		}
		in.vd = append(in.vd, slot)
	}
	for _, arg := range s.Args[1:] {
		for _, o := range arg.Elems {
			slot, err := d.src(o, b32t)
			if err != nil {
				return err
			}
			in.va = append(in.va, slot)
		}
	}
	in.aux = spec
	in.fn = xMma
	return nil
}

func decShfl(d *decoder, s *Instr, m *mods, in *inst) error {
	if !m.has("sync") {
		return d.errf("shfl without .sync is deprecated and not simulated")
	}
	switch m.one("up", "down", "bfly", "idx") {
	case "up":
		in.imm = shflUp
	case "down":
		in.imm = shflDown
	case "bfly":
		in.imm = shflBfly
	case "idx":
		in.imm = shflIdx
	default:
		return d.errf("shfl.sync needs .up, .down, .bfly or .idx")
	}
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "b32" {
		return d.errf("shfl.sync takes .b32")
	}
	if err := d.nargs(s, 5); err != nil {
		return err
	}
	in.imm2 = -1
	args := append([]Operand(nil), s.Args...)
	if args[0].Kind == oPair {
		p, err := d.pred(args[0].Elems[1])
		if err != nil {
			return err
		}
		in.imm2 = int64(p)
		args[0] = args[0].Elems[0]
	}
	if err := d.ops(&Instr{Args: args}, in, t, t, u32t, u32t, b32t); err != nil {
		return err
	}
	in.fn = xShfl
	return nil
}

func decVote(d *decoder, s *Instr, m *mods, in *inst) error {
	if !m.has("sync") {
		return d.errf("vote without .sync is deprecated and not simulated")
	}
	mode := m.one("all", "any", "uni", "ballot")
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	switch mode {
	case "all", "any", "uni":
		in.imm = map[string]int64{"all": voteAll, "any": voteAny, "uni": voteUni}[mode]
		if t.name != "pred" {
			return d.errf("vote.%s takes .pred", mode)
		}
	case "ballot":
		in.imm = voteBallot
		if t.name != "b32" {
			return d.errf("vote.ballot takes .b32")
		}
	default:
		return d.errf("vote.sync needs .all, .any, .uni or .ballot")
	}
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	if mode == "ballot" {
		if in.d, _, err = d.dst(s.Args[0], b32t); err != nil {
			return err
		}
	} else if in.d, err = d.pred(s.Args[0]); err != nil {
		return err
	}
	p, neg, err := d.predSrc(s.Args[1])
	if err != nil {
		return err
	}
	in.a = p
	if neg {
		in.b = 1
	} else {
		in.b = 0
	}
	if in.e, err = d.src(s.Args[2], b32t); err != nil {
		return err
	}
	in.fn = xVote
	return nil
}

func decActivemask(d *decoder, s *Instr, m *mods, in *inst) error {
	if _, err := d.oneType(m); err != nil {
		return err
	}
	if err := d.nargs(s, 1); err != nil {
		return err
	}
	var err error
	if in.d, _, err = d.dst(s.Args[0], b32t); err != nil {
		return err
	}
	in.fn = xActivemask
	return nil
}

func decRedux(d *decoder, s *Instr, m *mods, in *inst) error {
	if !m.has("sync") {
		return d.errf("redux needs .sync")
	}
	op := m.one("add", "min", "max", "and", "or", "xor")
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	switch op {
	case "add", "min", "max":
		if t.name != "u32" && t.name != "s32" {
			return d.errf("redux.sync.%s takes .u32 or .s32", op)
		}
	case "and", "or", "xor":
		if t.name != "b32" {
			return d.errf("redux.sync.%s takes .b32", op)
		}
	default:
		return d.errf("redux.sync needs an operation")
	}
	if err := d.nargs(s, 3); err != nil {
		return err
	}
	if err := d.ops(&Instr{Args: s.Args[:2]}, in, t, t); err != nil {
		return err
	}
	if in.e, err = d.src(s.Args[2], b32t); err != nil {
		return err
	}
	if t.signed() {
		in.imm = 1
	}
	in.aux = op
	in.fn = xRedux
	return nil
}

var _ = strconv.Itoa
