package sim

import (
	"math/bits"
	"strings"
)

// Decoders of control flow, barriers, fences, the warp-wide instructions
// (shfl, vote, redux, activemask, ldmatrix, mma) and cp.async.

func decNop(d *decoder, s *Instr, m *mods, in *inst) error {
	// prefetch{.space}.level [a], prefetchu.L1 [a], nanosleep.u32 t: nothing to simulate
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
