package sim

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Memory instructions: ld, st, atom, red, cp.async. Every access is checked:
// the address must be aligned to the access size and lie inside one live
// allocation (global), inside the block's shared memory, or inside the thread's
// local memory; a shared read must find bytes some thread of the block wrote
// since the launch began.

// access kinds
const (
	accRead = iota
	accWrite
	accRMW
)

var accNames = [...]string{"read", "write", "read-modify-write"}

// global returns the n bytes at addr for lane, checked.
func (w *warp) global(in *inst, lane int, addr uint64, n int, acc int) []byte {
	if addr%uint64(n) != 0 {
		w.faultAddr(in, lane, addr, fmt.Sprintf("misaligned %d-byte %s of global memory (the address must be a multiple of %d)", n, accNames[acc], n))
	}
	a := w.alloc
	if a == nil || addr-a.Base >= uint64(len(a.Buf)) || addr-a.Base+uint64(n) > uint64(len(a.Buf)) {
		a = w.l.mem.find(addr)
		if a == nil || addr-a.Base+uint64(n) > uint64(len(a.Buf)) {
			w.faultAddr(in, lane, addr, fmt.Sprintf("out-of-bounds %d-byte %s of global memory: %s", n, accNames[acc], w.l.mem.describe(addr, n)))
		}
		w.alloc = a
	}
	off := addr - a.Base
	return a.Buf[off : off+uint64(n)]
}

// shared returns the n bytes at shared offset off for lane, checked, and keeps
// the record of initialized bytes.
func (w *warp) shared(in *inst, lane int, off uint64, n int, acc int) []byte {
	b := &w.l.blk
	if off%uint64(n) != 0 {
		w.faultAddr(in, lane, off, fmt.Sprintf("misaligned %d-byte %s of shared memory", n, accNames[acc]))
	}
	if off+uint64(n) > uint64(len(b.shared)) || off+uint64(n) < off {
		w.faultAddr(in, lane, off, fmt.Sprintf("out-of-bounds %d-byte %s of shared memory: the block has %d bytes (%d static + %d dynamic)",
			n, accNames[acc], len(b.shared), w.prog.shared, w.l.dynSmem))
	}
	init := b.shinit[off : off+uint64(n)]
	for _, s := range init {
		if s == 2 {
			w.faultAddr(in, lane, off, fmt.Sprintf("%s of shared memory that a cp.async is still writing: wait for it first (cp.async.wait_group or wait_all)", accNames[acc]))
		}
		if s == 0 && acc != accWrite {
			w.faultAddr(in, lane, off, fmt.Sprintf("read of uninitialized shared memory: no thread of the block wrote these %d bytes since the launch began (a missing bar.sync, or a read past what was stored)", n))
		}
	}
	if acc != accRead {
		for i := range init {
			init[i] = 1
		}
	}
	return b.shared[off : off+uint64(n)]
}

// local returns the n bytes at local offset off of lane.
func (w *warp) localMem(in *inst, lane int, off uint64, n int, acc int) []byte {
	ls := uint64(w.prog.localSize)
	if off%uint64(n) != 0 {
		w.faultAddr(in, lane, off, fmt.Sprintf("misaligned %d-byte %s of local memory", n, accNames[acc]))
	}
	if off+uint64(n) > ls || off+uint64(n) < off {
		w.faultAddr(in, lane, off, fmt.Sprintf("out-of-bounds %d-byte %s of local memory: the thread has %d bytes", n, accNames[acc], ls))
	}
	base := uint64(lane) * ls
	return w.local[base+off : base+off+uint64(n)]
}

// mem returns the bytes an access of space sp touches, resolving generic addresses.
func (w *warp) mem(in *inst, sp space, lane int, addr uint64, n int, acc int) []byte {
	switch sp {
	case spGlobal, spConst:
		if acc != accRead && sp == spConst {
			w.faultAddr(in, lane, addr, "write to constant memory")
		}
		return w.global(in, lane, addr, n, acc)
	case spShared:
		return w.shared(in, lane, addr, n, acc)
	case spLocal:
		return w.localMem(in, lane, addr, n, acc)
	case spParam:
		off := addr
		if off+uint64(n) > uint64(len(w.l.params)) {
			w.faultAddr(in, lane, addr, fmt.Sprintf("parameter access past the %d bytes of parameters", len(w.l.params)))
		}
		if acc != accRead {
			w.faultAddr(in, lane, addr, "write to kernel parameters")
		}
		return w.l.params[off : off+uint64(n)]
	}
	switch {
	case addr-sharedWindow < windowSize:
		return w.shared(in, lane, addr-sharedWindow, n, acc)
	case addr-localWindow < windowSize:
		return w.localMem(in, lane, addr-localWindow, n, acc)
	}
	return w.global(in, lane, addr, n, acc)
}

func getN(b []byte, n int) uint64 {
	switch n {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func putN(b []byte, n int, v uint64) {
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// inAlloc reports whether the 4-byte accesses at ra[l]+off of the lanes of m
// are all aligned and inside the allocation the warp's last access hit: then
// the loops below skip the per-lane checks.
func (w *warp) inAlloc(ra *[32]uint64, off uint64, m uint32) *Alloc {
	a := w.alloc
	if a == nil || len(a.Buf) < 4 {
		return nil
	}
	span := uint64(len(a.Buf) - 4)
	for ; m != 0; m &= m - 1 {
		p := ra[bits.TrailingZeros32(m)&31] + off - a.Base
		if p > span || p&3 != 0 {
			return nil
		}
	}
	return a
}

// xLdGlobal32 is the common ld.global of one 32-bit value.
func xLdGlobal32(w *warp, in *inst, m uint32) {
	d, ra := &w.r[in.d], &w.r[in.a]
	off := uint64(in.imm)
	if a := w.inAlloc(ra, off, m); a != nil {
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			d[l] = uint64(binary.LittleEndian.Uint32(a.Buf[ra[l]+off-a.Base:]))
		}
		return
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		d[l] = uint64(binary.LittleEndian.Uint32(w.global(in, l, ra[l]+off, 4, accRead)))
	}
}

func xStGlobal32(w *warp, in *inst, m uint32) {
	ra, rb := &w.r[in.a], &w.r[in.b]
	off := uint64(in.imm)
	if a := w.inAlloc(ra, off, m); a != nil {
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			binary.LittleEndian.PutUint32(a.Buf[ra[l]+off-a.Base:], uint32(rb[l]))
		}
		return
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		binary.LittleEndian.PutUint32(w.global(in, l, ra[l]+off, 4, accWrite), uint32(rb[l]))
	}
}

// ldSpec is the per-instruction data of a general ld: the extension of each
// element into its destination register.
type ldSpec struct {
	signed  bool
	regBits []uint // per destination
}

// xLd is ld of any space, size and vector width: in.a holds the address (slot;
// -1 for an absolute one), in.vd the destinations.
func xLd(w *warp, in *inst, m uint32) {
	spec := in.aux.(*ldSpec)
	n, nv := int(in.size), int(in.nvec)
	var base *[32]uint64
	if in.a >= 0 {
		base = &w.r[in.a]
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		addr := uint64(in.imm)
		if base != nil {
			addr += base[l]
		}
		b := w.mem(in, in.space, l, addr, n*nv, accRead)
		for i, slot := range in.vd {
			if slot < 0 {
				continue
			}
			v := getN(b[i*n:], n)
			if spec.signed {
				v = sext(v, uint(8*n)) & mask(spec.regBits[i])
			}
			w.r[slot][l] = v
		}
	}
}

// xSt is st of any space, size and vector width: in.a the address, in.va the values.
func xSt(w *warp, in *inst, m uint32) {
	n, nv := int(in.size), int(in.nvec)
	var base *[32]uint64
	if in.a >= 0 {
		base = &w.r[in.a]
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		addr := uint64(in.imm)
		if base != nil {
			addr += base[l]
		}
		b := w.mem(in, in.space, l, addr, n*nv, accWrite)
		for i, slot := range in.va {
			putN(b[i*n:], n, w.r[slot][l])
		}
	}
}

// xLdParam reads a kernel parameter (the same for every lane).
func xLdParam(w *warp, in *inst, m uint32) {
	spec := in.aux.(*ldSpec)
	n := int(in.size)
	if int(in.imm)+n*int(in.nvec) > len(w.l.params) || in.imm < 0 {
		w.fault(in, -1, fmt.Sprintf("parameter access at byte %d past the %d bytes of parameters", in.imm, len(w.l.params)))
	}
	for i, slot := range in.vd {
		if slot < 0 {
			continue
		}
		v := getN(w.l.params[int(in.imm)+i*n:], n)
		if spec.signed {
			v = sext(v, uint(8*n)) & mask(spec.regBits[i])
		}
		d := &w.r[slot]
		for mm := m; mm != 0; mm &= mm - 1 {
			d[bits.TrailingZeros32(mm)&31] = v
		}
	}
}

// cvta between generic addresses and the shared or local window's offsets.
func cvtaTo(window uint64, sp space) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra := &w.r[in.d], &w.r[in.a]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			a := ra[l]
			if a-window >= windowSize {
				w.faultAddr(in, l, a, "cvta.to."+sp.String()+" of a generic address outside the "+sp.String()+" window")
			}
			d[l] = (a - window) & mask(uint(in.size)*8)
		}
	}
}

func cvtaFrom(window uint64) execFn {
	return func(w *warp, in *inst, m uint32) {
		d, ra := &w.r[in.d], &w.r[in.a]
		for ; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m) & 31
			d[l] = ra[l] + window
		}
	}
}

// isspacep tests which space a generic address is in.
func isspacep(sp space) execFn {
	return func(w *warp, in *inst, m uint32) {
		ra := &w.r[in.a]
		var res uint32
		for l := range ra {
			a := ra[l]
			var in2 bool
			switch sp {
			case spShared:
				in2 = a-sharedWindow < windowSize
			case spLocal:
				in2 = a-localWindow < windowSize
			default:
				in2 = a-sharedWindow >= windowSize && a-localWindow >= windowSize
			}
			if in2 {
				res |= 1 << l
			}
		}
		w.p[in.d] = w.p[in.d]&^m | res&m
	}
}

// atomSpec is an atom or red: its operation and type.
type atomSpec struct {
	op     string // add, min, max, inc, dec, and, or, xor, exch, cas
	typ    ptype
	result bool // atom (writes d), not red
}

// xAtom performs an atom/red for each lane, the lanes in a seeded random order
// (the hardware's order is unspecified). in.a: address, in.b: operand, in.c:
// cas's new value, in.d: the old value (atom).
func xAtom(w *warp, in *inst, m uint32) {
	spec := in.aux.(*atomSpec)
	n := spec.typ.size
	var base *[32]uint64
	if in.a >= 0 {
		base = &w.r[in.a]
	}
	for _, l := range w.shuffledLanes(m) {
		addr := uint64(in.imm)
		if base != nil {
			addr += base[l]
		}
		b := w.mem(in, in.space, l, addr, n, accRMW)
		old := getN(b, n)
		putN(b, n, atomOp(spec, old, w.r[in.b][l], w.r[in.c][l]))
		if spec.result {
			if spec.typ.signed() && n < 8 {
				old = sext(old, uint(8*n)) & mask(uint(8*n))
			}
			w.r[in.d][l] = old
		}
	}
}

func atomOp(s *atomSpec, old, b, c uint64) uint64 {
	t := s.typ
	w := t.bits()
	switch s.op {
	case "exch":
		return b & mask(w)
	case "cas":
		if old == b&mask(w) {
			return c & mask(w)
		}
		return old
	case "and":
		return old & b & mask(w)
	case "or":
		return (old | b) & mask(w)
	case "xor":
		return (old ^ b) & mask(w)
	case "inc":
		if uint32(old) >= uint32(b) {
			return 0
		}
		return uint64(uint32(old) + 1)
	case "dec":
		if uint32(old) == 0 || uint32(old) > uint32(b) {
			return uint64(uint32(b))
		}
		return uint64(uint32(old) - 1)
	}
	switch t.name {
	case "f32":
		x, y := float64(f32(old)), float64(f32(b))
		switch s.op {
		case "add":
			return b32(float32(x) + float32(y))
		case "min":
			return b32(fminF32(float32(x), float32(y)))
		case "max":
			return b32(fmaxF32(float32(x), float32(y)))
		}
	case "f64":
		x, y := f64(old), f64(b)
		switch s.op {
		case "add":
			return b64(x + y)
		case "min":
			return b64(fminF64(x, y))
		case "max":
			return b64(fmaxF64(x, y))
		}
	case "f16", "bf16":
		f := fmtOf(t)
		return round(decodeFloat(old, f)+decodeFloat(b&0xffff, f), 0, f, rn, false, false)
	case "f16x2", "bf16x2":
		f := fmtOf(t)
		lo := round(decodeFloat(old&0xffff, f)+decodeFloat(b&0xffff, f), 0, f, rn, false, false)
		hi := round(decodeFloat(old>>16&0xffff, f)+decodeFloat(b>>16&0xffff, f), 0, f, rn, false, false)
		return hi<<16 | lo
	}
	signed := t.signed()
	switch s.op {
	case "add":
		return (old + b) & mask(w)
	case "min":
		if signed {
			return uint64(min(int64(sext(old, w)), int64(sext(b, w)))) & mask(w)
		}
		return min(old, b&mask(w))
	case "max":
		if signed {
			return uint64(max(int64(sext(old, w)), int64(sext(b, w)))) & mask(w)
		}
		return max(old, b&mask(w))
	}
	panic("sim: atom op " + s.op)
}

// cp.async: each thread's copies wait in its uncommitted group until
// commit_group, then in its committed groups until wait_group lets them land.
// The destination bytes are marked pending meanwhile: reading them is a fault.

type asyncCopy struct {
	dst  uint64 // shared offset
	src  uint64 // global address
	n    int    // bytes copied
	from int    // bytes read from src (the rest zero-filled)
}

type asyncState struct {
	pending []asyncCopy
	groups  [][]asyncCopy
}

// xCpAsync: in.a destination (shared), in.b source (global), in.imm/imm2
// offsets, in.size the copy size, in.c the source size slot (-1: all).
func xCpAsync(w *warp, in *inst, m uint32) {
	n := int(in.size)
	b := &w.l.blk
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		dst := w.r[in.a][l] + uint64(in.imm)
		if in.space == spGeneric {
			if dst-sharedWindow >= windowSize {
				w.faultAddr(in, l, dst, "cp.async destination is not a shared address")
			}
			dst -= sharedWindow
		}
		src := w.r[in.b][l] + uint64(in.imm2)
		from := n
		if in.c >= 0 {
			from = int(uint32(w.r[in.c][l]))
			if from > n {
				w.fault(in, l, fmt.Sprintf("cp.async source size %d exceeds the copy size %d", from, n))
			}
		}
		if dst%uint64(n) != 0 || dst+uint64(n) > uint64(len(b.shared)) {
			w.faultAddr(in, l, dst, fmt.Sprintf("cp.async destination: misaligned or out-of-bounds %d-byte write of shared memory (the block has %d bytes)", n, len(b.shared)))
		}
		if from > 0 {
			if src%uint64(n) != 0 {
				w.faultAddr(in, l, src, fmt.Sprintf("cp.async source: misaligned %d-byte read of global memory", n))
			}
			w.global(in, l, src, from, accRead)
		}
		for i := dst; i < dst+uint64(n); i++ {
			if b.shinit[i] == 2 {
				w.faultAddr(in, l, dst, "cp.async to shared memory another cp.async is still writing")
			}
			b.shinit[i] = 2
		}
		st := &w.async[l]
		st.pending = append(st.pending, asyncCopy{dst: dst, src: src, n: n, from: from})
	}
}

func xCpAsyncCommit(w *warp, in *inst, m uint32) {
	for ; m != 0; m &= m - 1 {
		st := &w.async[bits.TrailingZeros32(m)&31]
		st.groups = append(st.groups, st.pending)
		st.pending = nil
	}
}

// xCpAsyncWait lets all but the newest in.imm committed groups land
// (wait_all: in.imm2 = 1, commit first and wait for everything).
func xCpAsyncWait(w *warp, in *inst, m uint32) {
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		st := &w.async[l]
		if in.imm2 != 0 {
			st.groups = append(st.groups, st.pending)
			st.pending = nil
		}
		for len(st.groups) > int(in.imm) {
			for _, c := range st.groups[0] {
				w.landCopy(in, l, c)
			}
			st.groups = st.groups[1:]
		}
	}
}

func (w *warp) landCopy(in *inst, lane int, c asyncCopy) {
	b := &w.l.blk
	dst := b.shared[c.dst : c.dst+uint64(c.n)]
	clear(dst)
	if c.from > 0 {
		copy(dst, w.global(in, lane, c.src, c.from, accRead))
	}
	for i := range c.n {
		b.shinit[c.dst+uint64(i)] = 1
	}
}

// finishAsync drops what a finished block never waited for.
func (w *warp) finishAsync() {
	for i := range w.async {
		w.async[i].pending = w.async[i].pending[:0]
		w.async[i].groups = w.async[i].groups[:0]
	}
}
