package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// decodeError is an instruction, type or modifier the simulator does not
// implement (or a malformed one): it names the module, line, kernel and opcode.
type decodeError struct {
	module, kernel string
	line           int
	op             string
	msg            string
}

func (e *decodeError) Error() string {
	if e.op != "" {
		return fmt.Sprintf("sim: %s:%d: kernel %s: %s: %s", e.module, e.line, e.kernel, e.op, e.msg)
	}
	return fmt.Sprintf("sim: %s:%d: kernel %s: %s", e.module, e.line, e.kernel, e.msg)
}

// symbol is a module- or function-scope variable.
type symbol struct {
	space space
	addr  uint64 // global/const: device address; shared/local: offset
	decl  *VarDecl
}

// reg is a declared register.
type reg struct {
	slot int32 // register slot, or predicate index
	pred bool
	bits uint // width
	typ  string
}

// regRange is a %r<N> declaration.
type regRange struct {
	n    int
	pred bool
	bits uint
	typ  string
	regs map[int]reg // allocated on first use
}

type scope struct {
	regs   map[string]reg
	ranges map[string]*regRange
	syms   map[string]symbol
}

type decoder struct {
	mod      *Module
	fn       *Func
	globals  map[string]symbol
	prog     *program
	scopes   []*scope
	consts   map[uint64]int32
	sregs    map[special]int32
	labels   map[string]int32
	fixups   []fixup
	cur      *Instr
	sink     int32 // slot for _ destinations
	nextSlot int32
	nextPred int32
	dynSlots map[int32]bool // constants holding dynamic shared addresses
	line     int            // the line of the declaration being decoded
}

type fixup struct {
	inst  int
	label string
	line  int
}

func (d *decoder) errf(format string, args ...any) error {
	e := &decodeError{module: d.mod.Name, kernel: d.fn.Name, msg: fmt.Sprintf(format, args...)}
	if d.cur != nil {
		e.line, e.op = d.cur.Line, d.cur.Op
	} else {
		e.line = d.line
	}
	return e
}

// decodeKernel turns entry f of module m into a program. globals are the
// module-scope variables with their places on the device.
func decodeKernel(m *Module, f *Func, globals map[string]symbol, sharedBase int, sharedAl int) (*program, error) {
	d := &decoder{mod: m, fn: f, globals: globals, consts: map[uint64]int32{}, sregs: map[special]int32{}, labels: map[string]int32{}}
	d.prog = &program{name: f.Name, module: m.Name, shared: sharedBase, sharedAl: max(sharedAl, 1)}
	if f.MaxNTID != nil {
		n := 1
		for _, x := range f.MaxNTID {
			n *= max(x, 1)
		}
		d.prog.maxThreads = n
		if f.ReqNTID {
			d.prog.reqNTID = f.MaxNTID
		}
	}
	if f.Body == nil {
		return nil, d.errf("kernel has no body")
	}
	d.line = f.Line
	d.push()
	// parameters: laid out at their natural alignment, in order
	off := 0
	for _, p := range f.Params {
		t, ok := typeOf(p.Type)
		if !ok || t.class == tcPred {
			return nil, d.errf("parameter %s: type .%s", p.Name, p.Type)
		}
		size := t.size
		if p.Count > 0 {
			size *= p.Count
		}
		al := max(p.Align, t.size, 1)
		off = alignUp(off, al)
		if size > 8 {
			return nil, d.errf("parameter %s: %d bytes; the simulator passes scalars and pointers (at most 8 bytes)", p.Name, size)
		}
		d.prog.params = append(d.prog.params, param{name: p.Name, offset: off, size: size})
		d.top().syms[p.Name] = symbol{space: spParam, addr: uint64(off), decl: p}
		off += size
	}
	d.prog.paramSize = off
	d.sink = d.newSlot()
	// first pass: labels, so forward branches resolve
	n := 0
	for _, s := range f.Body {
		switch s.Kind {
		case sLabel:
			if _, dup := d.labels[s.Label]; dup {
				d.cur = nil
				return nil, &decodeError{module: m.Name, kernel: f.Name, line: s.Line, msg: "label " + s.Label + " defined twice"}
			}
			d.labels[s.Label] = int32(n)
		case sInstr:
			n++
		}
	}
	for _, s := range f.Body {
		switch s.Kind {
		case sOpen:
			d.push()
		case sClose:
			if len(d.scopes) <= 1 {
				return nil, &decodeError{module: m.Name, kernel: f.Name, line: s.Line, msg: "unbalanced }"}
			}
			d.scopes = d.scopes[:len(d.scopes)-1]
		case sDecl:
			d.cur, d.line = nil, s.Line
			if err := d.declare(s.Decl); err != nil {
				return nil, err
			}
		case sInstr:
			d.cur = s.Instr
			in, err := d.instr(s.Instr)
			if err != nil {
				return nil, err
			}
			in.line = int32(s.Instr.Line)
			in.op = s.Instr.Op
			if in.fn == nil && in.ctl == ctlNone {
				in.fn = func(*warp, *inst, uint32) {}
			}
			d.prog.code = append(d.prog.code, in)
		}
	}
	d.cur = nil
	// the end of the kernel is an implicit exit
	d.prog.code = append(d.prog.code, inst{ctl: ctlExit, guard: -1, line: int32(f.Line), op: "(end of kernel)"})
	for _, fx := range d.fixups {
		t, ok := d.labels[fx.label]
		if !ok {
			return nil, &decodeError{module: m.Name, kernel: f.Name, line: fx.line, msg: "branch to undefined label " + fx.label}
		}
		d.prog.code[fx.inst].target = t
	}
	// the dynamic shared area starts after the static variables
	dyn := uint64(alignUp(d.prog.shared, d.prog.sharedAl))
	for i := range d.prog.inits {
		if in := &d.prog.inits[i]; !in.isSR && d.dynSlots[in.slot] {
			in.val = in.val - dynamicMarker + dyn
		}
	}
	for i := range d.prog.code {
		if in := &d.prog.code[i]; in.imm >= dynamicMarker && in.imm < 2*dynamicMarker && (in.space == spShared || in.fn == nil) {
			in.imm = in.imm - dynamicMarker + int64(dyn)
		}
	}
	d.prog.nslots = int(d.nextSlot)
	d.prog.npreds = int(d.nextPred)
	return d.prog, nil
}

func (d *decoder) push() {
	d.scopes = append(d.scopes, &scope{regs: map[string]reg{}, ranges: map[string]*regRange{}, syms: map[string]symbol{}})
}

func (d *decoder) top() *scope { return d.scopes[len(d.scopes)-1] }

func (d *decoder) newSlot() int32 {
	s := d.nextSlot
	d.nextSlot++
	return s
}

func (d *decoder) newPred() int32 {
	p := d.nextPred
	d.nextPred++
	return p
}

// declare handles a function-scope declaration.
func (d *decoder) declare(v *VarDecl) error {
	t, ok := typeOf(v.Type)
	if !ok {
		return d.errf("declaration of %s: unknown type .%s", v.Name, v.Type)
	}
	sc := d.top()
	switch v.Space {
	case "reg":
		if v.Vec != 0 {
			return d.errf("vector registers (.v%d) are not simulated", v.Vec)
		}
		bits := uint(8 * t.size)
		if t.class == tcPred {
			bits = 1
		}
		if v.Range {
			sc.ranges[v.Name] = &regRange{n: v.Count, pred: t.class == tcPred, bits: bits, typ: v.Type, regs: map[int]reg{}}
			return nil
		}
		if v.Array {
			return d.errf("register arrays are not simulated (%s)", v.Name)
		}
		r := reg{pred: t.class == tcPred, bits: bits, typ: v.Type}
		if r.pred {
			r.slot = d.newPred()
		} else {
			r.slot = d.newSlot()
		}
		sc.regs[v.Name] = r
	case "shared":
		if v.Count < 0 {
			return d.errf("extern .shared arrays belong at module scope")
		}
		size := t.size * max(v.Count, 1)
		al := max(v.Align, t.size, 1)
		off := alignUp(d.prog.shared, al)
		d.prog.shared = off + size
		d.prog.sharedAl = max(d.prog.sharedAl, al)
		sc.syms[v.Name] = symbol{space: spShared, addr: uint64(off), decl: v}
	case "local":
		size := t.size * max(v.Count, 1)
		al := max(v.Align, t.size, 1)
		off := alignUp(d.prog.localSize, al)
		d.prog.localSize = alignUp(off+size, 8)
		sc.syms[v.Name] = symbol{space: spLocal, addr: uint64(off), decl: v}
	case "param":
		return d.errf("a .param declaration in a body (a function call sequence): calls are not simulated; mark the device function __forceinline__")
	default:
		return d.errf(".%s variables are declared at module scope", v.Space)
	}
	return nil
}

// lookupReg finds a register by name.
func (d *decoder) lookupReg(name string) (reg, bool) {
	for i := len(d.scopes) - 1; i >= 0; i-- {
		sc := d.scopes[i]
		if r, ok := sc.regs[name]; ok {
			return r, true
		}
		// %r123 from %r<N>
		j := len(name)
		for j > 0 && name[j-1] >= '0' && name[j-1] <= '9' {
			j--
		}
		if j == len(name) || j == 0 {
			continue
		}
		rr, ok := sc.ranges[name[:j]]
		if !ok {
			continue
		}
		idx, err := strconv.Atoi(name[j:])
		if err != nil || idx >= rr.n || (len(name)-j > 1 && name[j] == '0') {
			continue
		}
		r, ok := rr.regs[idx]
		if !ok {
			r = reg{pred: rr.pred, bits: rr.bits, typ: rr.typ}
			if r.pred {
				r.slot = d.newPred()
			} else {
				r.slot = d.newSlot()
			}
			rr.regs[idx] = r
		}
		return r, true
	}
	return reg{}, false
}

func (d *decoder) lookupSym(name string) (symbol, bool) {
	for i := len(d.scopes) - 1; i >= 0; i-- {
		if s, ok := d.scopes[i].syms[name]; ok {
			return s, true
		}
	}
	s, ok := d.globals[name]
	return s, ok
}

// constSlot returns the slot holding v in every lane.
func (d *decoder) constSlot(v uint64) int32 {
	if s, ok := d.consts[v]; ok {
		return s
	}
	s := d.newSlot()
	d.consts[v] = s
	d.prog.inits = append(d.prog.inits, slotInit{slot: s, val: v})
	return s
}

func (d *decoder) specialSlot(sr special) int32 {
	if s, ok := d.sregs[sr]; ok {
		return s
	}
	s := d.newSlot()
	d.sregs[sr] = s
	d.prog.inits = append(d.prog.inits, slotInit{slot: s, sr: sr, isSR: true})
	return s
}

// immBits converts a constant operand to the bits of type t.
func (d *decoder) immBits(o Operand, t ptype) (uint64, error) {
	switch o.Kind {
	case oInt:
		if t.class == tcFloat {
			return floatBits(float64(o.Int), t), nil
		}
		return uint64(o.Int) & mask(max(t.bits(), 1)), nil
	case oFloat:
		var v float64
		if o.F32 {
			if t.class != tcFloat || t.name == "f32" {
				return o.Bits & mask(max(t.bits(), 1)), nil // the bit pattern, as written
			}
			v = float64(math.Float32frombits(uint32(o.Bits)))
		} else {
			if t.class != tcFloat || t.name == "f64" {
				return o.Bits & mask(max(t.bits(), 1)), nil
			}
			v = math.Float64frombits(o.Bits)
		}
		return floatBits(v, t), nil
	}
	return 0, d.errf("not a constant")
}

func floatBits(v float64, t ptype) uint64 {
	switch t.name {
	case "f64":
		return math.Float64bits(v)
	case "f32", "tf32":
		return uint64(math.Float32bits(float32(v)))
	}
	return round(v, 0, fmtOf(t), rn, false, false)
}

// src returns the slot of a source operand read as type t.
func (d *decoder) src(o Operand, t ptype) (int32, error) {
	if o.Neg || o.Not {
		return 0, d.errf("a negated operand (-x or !p) is not allowed here")
	}
	switch o.Kind {
	case oInt, oFloat:
		v, err := d.immBits(o, t)
		if err != nil {
			return 0, err
		}
		return d.constSlot(v), nil
	case oName:
		if r, ok := d.lookupReg(o.Name); ok {
			if r.pred {
				return 0, d.errf("predicate %s used as a value", o.Name)
			}
			if o.Int != 0 {
				return 0, d.errf("%s+%d: only addresses take offsets", o.Name, o.Int)
			}
			return r.slot, nil
		}
		if sr, ok := specialNames[o.Name]; ok {
			return d.specialSlot(sr), nil
		}
		if s, ok := d.lookupSym(o.Name); ok {
			switch s.space {
			case spParam:
				return 0, d.errf("the address of parameter %s is taken: parameters are only read with ld.param", o.Name)
			}
			slot := d.constSlot(s.addr + uint64(o.Int))
			if s.addr == dynamicMarker {
				if d.dynSlots == nil {
					d.dynSlots = map[int32]bool{}
				}
				d.dynSlots[slot] = true
			}
			return slot, nil
		}
		if strings.HasPrefix(o.Name, "%") {
			return 0, d.errf("unknown register %s", o.Name)
		}
		if _, ok := d.labels[o.Name]; ok {
			return 0, d.errf("label %s used as a value", o.Name)
		}
		return 0, d.errf("unknown name %s", o.Name)
	case oSink:
		return 0, d.errf("_ is only a destination")
	}
	return 0, d.errf("expected a register or constant operand")
}

// dst returns the slot of a destination register (a sink for _), and its width.
func (d *decoder) dst(o Operand, t ptype) (int32, uint, error) {
	switch o.Kind {
	case oSink:
		return d.sink, 64, nil
	case oName:
		r, ok := d.lookupReg(o.Name)
		if !ok {
			return 0, 0, d.errf("destination %s is not a declared register", o.Name)
		}
		if r.pred {
			return 0, 0, d.errf("predicate %s as a value destination", o.Name)
		}
		if t.class != tcPred && t.size > 0 && r.bits < t.bits() {
			return 0, 0, d.errf("destination %s (.%s) is narrower than .%s", o.Name, r.typ, t.name)
		}
		return r.slot, r.bits, nil
	}
	return 0, 0, d.errf("destination must be a register")
}

// pred returns the index of a predicate register operand.
func (d *decoder) pred(o Operand) (int32, error) {
	if o.Kind == oSink {
		return d.newPred(), nil
	}
	if o.Kind != oName {
		return 0, d.errf("expected a predicate register")
	}
	r, ok := d.lookupReg(o.Name)
	if !ok || !r.pred {
		return 0, d.errf("%s is not a predicate register", o.Name)
	}
	return r.slot, nil
}

// predSrc returns a predicate source, possibly negated (!p) or a constant.
func (d *decoder) predSrc(o Operand) (int32, bool, error) {
	neg := o.Not
	o.Not = false
	if o.Kind == oInt {
		// a constant predicate: a fresh predicate set at every warp start is not
		// worth it; constant guards are rare, so give it a slot through setp.
		return 0, false, d.errf("constant predicate operands are not simulated")
	}
	p, err := d.pred(o)
	return p, neg, err
}

// addr decodes an address operand: the base slot (-1 when absolute) and the offset.
func (d *decoder) addr(o Operand) (int32, int64, space, error) {
	if o.Kind != oAddr {
		return 0, 0, 0, d.errf("expected an address [...]")
	}
	if o.Base == nil {
		return -1, o.Int, spGeneric, nil
	}
	name := o.Base.Name
	if r, ok := d.lookupReg(name); ok {
		if r.pred {
			return 0, 0, 0, d.errf("predicate %s as an address", name)
		}
		return r.slot, o.Int, spGeneric, nil
	}
	if s, ok := d.lookupSym(name); ok {
		return -1, int64(s.addr) + o.Int, s.space, nil
	}
	if sr, ok := specialNames[name]; ok {
		return d.specialSlot(sr), o.Int, spGeneric, nil
	}
	return 0, 0, 0, d.errf("unknown address base %s", name)
}

func (d *decoder) branch(idx int, label string) {
	d.fixups = append(d.fixups, fixup{inst: idx, label: label, line: d.cur.Line})
}

// mods is an opcode's modifiers, consumed by the decoders; what is left
// unconsumed is an error.
type mods struct {
	parts []string
	used  []bool
}

func newMods(parts []string) *mods { return &mods{parts: parts, used: make([]bool, len(parts))} }

// has consumes modifier name if present.
func (m *mods) has(name string) bool {
	for i, p := range m.parts {
		if !m.used[i] && p == name {
			m.used[i] = true
			return true
		}
	}
	return false
}

// one consumes the first present of names ("" if none).
func (m *mods) one(names ...string) string {
	for i, p := range m.parts {
		if m.used[i] {
			continue
		}
		for _, n := range names {
			if p == n {
				m.used[i] = true
				return n
			}
		}
	}
	return ""
}

// prefixed consumes a modifier starting with prefix (L2::cache_hint, ...).
func (m *mods) prefixed(prefix string) string {
	for i, p := range m.parts {
		if !m.used[i] && strings.HasPrefix(p, prefix) {
			m.used[i] = true
			return p
		}
	}
	return ""
}

// types consumes the type modifiers, in order.
func (m *mods) types() []ptype {
	var ts []ptype
	for i, p := range m.parts {
		if m.used[i] {
			continue
		}
		if t, ok := typeOf(p); ok {
			m.used[i] = true
			ts = append(ts, t)
		}
	}
	return ts
}

func (m *mods) left() []string {
	var out []string
	for i, p := range m.parts {
		if !m.used[i] {
			out = append(out, "."+p)
		}
	}
	return out
}

// done reports unconsumed modifiers.
func (d *decoder) done(m *mods) error {
	if l := m.left(); len(l) > 0 {
		return d.errf("unsupported modifier %s", strings.Join(l, ""))
	}
	return nil
}

// oneType consumes exactly one type modifier.
func (d *decoder) oneType(m *mods) (ptype, error) {
	ts := m.types()
	if len(ts) != 1 {
		return ptype{}, d.errf("expected one type modifier, found %d", len(ts))
	}
	return ts[0], nil
}

// nargs checks the operand count.
func (d *decoder) nargs(in *Instr, n ...int) error {
	for _, k := range n {
		if len(in.Args) == k {
			return nil
		}
	}
	return d.errf("%d operands, want %v", len(in.Args), n)
}
