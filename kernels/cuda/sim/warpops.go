package sim

import (
	"fmt"
	"math"
	"math/bits"
)

// Warp-level and block-level synchronizing instructions: bar.sync, shfl.sync,
// vote.sync, redux.sync, activemask, bar.warp.sync, ldmatrix and mma.sync.

// xBar records which barrier the lanes wait at (the scheduler does the rest):
// in.a is the barrier id slot, in.b the thread count slot (-1: the whole block).
func xBar(w *warp, in *inst, m uint32) {
	ids := &w.r[in.a]
	for mm := m; mm != 0; mm &= mm - 1 {
		l := bits.TrailingZeros32(mm) & 31
		id := ids[l] & 0xffffffff
		if id > 15 {
			w.fault(in, l, fmt.Sprintf("barrier id %d (0 to 15)", id))
		}
		if in.b >= 0 {
			if n := int(uint32(w.r[in.b][l])); n != alignUp(w.l.blk.nthr, 32) && n != w.l.blk.nthr {
				w.fault(in, l, fmt.Sprintf("a barrier for %d of the block's %d threads: partial barriers are not simulated", n, w.l.blk.nthr))
			}
		}
		w.barID[l] = int64(id)
	}
}

// memberMask reads the membermask operand (slot) of a .sync instruction and
// checks it against the executing lanes m: every lane must pass the same mask,
// be in it, and every thread the mask names must be executing this
// instruction now (strict: a mask naming a thread that exited, diverged
// elsewhere or does not exist is an error, as is a thread outside its mask).
func (w *warp) memberMask(in *inst, slot int32, m uint32) uint32 {
	r := &w.r[slot]
	lane := bits.TrailingZeros32(m)
	mask := uint32(r[lane])
	for mm := m; mm != 0; mm &= mm - 1 {
		l := bits.TrailingZeros32(mm) & 31
		if uint32(r[l]) != mask {
			w.fault(in, l, fmt.Sprintf("membermask %#x differs from lane %d's %#x", uint32(r[l]), lane, mask))
		}
	}
	if m&^mask != 0 {
		l := bits.TrailingZeros32(m &^ mask)
		w.fault(in, l, fmt.Sprintf("thread executes %s but is not in its membermask %#x", in.op, mask))
	}
	if miss := mask &^ m; miss != 0 {
		l := bits.TrailingZeros32(miss)
		w.fault(in, lane, fmt.Sprintf("%s: membermask %#x names lane %d, which %s (executing: %s)", in.op, mask, l, w.absent(l), laneList(m)))
	}
	return mask
}

// absent says why lane l is not executing the current instruction.
func (w *warp) absent(l int) string {
	switch {
	case w.exists>>l&1 == 0:
		return "does not exist (the block's last warp is partial)"
	case w.exited>>l&1 != 0:
		return "has exited"
	case w.atBar>>l&1 != 0:
		return "waits at a barrier"
	}
	return "is not executing it (diverged, or its guard predicate is false)"
}

// aligned checks that the whole warp executes a .aligned warp-wide instruction
// (ldmatrix, mma): all 32 threads, converged.
func (w *warp) aligned(in *inst, m uint32) {
	if m != fullMask {
		l := bits.TrailingZeros32(fullMask &^ m)
		w.fault(in, bits.TrailingZeros32(m), fmt.Sprintf("%s needs all 32 threads of the warp converged; lane %d %s (executing: %s)", in.op, l, w.absent(l), laneList(m)))
	}
}

// shuffle modes
const (
	shflUp = iota
	shflDown
	shflBfly
	shflIdx
)

// xShfl: d[|p], a, b (lane or offset), c (clamp and segment mask), membermask
// (in.e). in.imm is the mode; in.imm2 the predicate destination (-1 when none).
func xShfl(w *warp, in *inst, m uint32) {
	mask := w.memberMask(in, in.e, m)
	d, ra, rb, rc := &w.r[in.d], &w.r[in.a], &w.r[in.b], &w.r[in.c]
	src := *ra // read every source before writing d (d may be a)
	var pv uint32
	for mm := m; mm != 0; mm &= mm - 1 {
		l := bits.TrailingZeros32(mm) & 31
		lane := uint32(l)
		bval := uint32(rb[l]) & 0x1f
		cval := uint32(rc[l]) & 0x1f
		segmask := uint32(rc[l]) >> 8 & 0x1f
		maxLane := lane&segmask | cval&^segmask
		minLane := lane & segmask
		var j uint32
		var ok bool
		switch in.imm {
		case shflUp:
			j = lane - bval
			ok = int32(j) >= int32(maxLane)
		case shflDown:
			j = lane + bval
			ok = j <= maxLane
		case shflBfly:
			j = lane ^ bval
			ok = j <= maxLane
		case shflIdx:
			j = minLane | bval&^segmask
			ok = j <= maxLane
		}
		if !ok {
			j = lane
		} else {
			pv |= 1 << l
			if mask>>j&1 == 0 {
				w.fault(in, l, fmt.Sprintf("shfl.sync reads lane %d, which is not in the membermask %#x (its value is undefined)", j, mask))
			}
		}
		d[l] = src[j&31] & 0xffffffff
	}
	if in.imm2 >= 0 {
		p := int32(in.imm2)
		w.p[p] = w.p[p]&^m | pv&m
	}
}

// vote modes
const (
	voteAll = iota
	voteAny
	voteUni
	voteBallot
)

// xVote: d, {!}a (predicate in.a, negated when in.b = 1), membermask in.e.
func xVote(w *warp, in *inst, m uint32) {
	mask := w.memberMask(in, in.e, m)
	p := w.p[in.a]
	if in.b == 1 {
		p = ^p
	}
	p &= mask
	switch in.imm {
	case voteBallot:
		d := &w.r[in.d]
		for mm := m; mm != 0; mm &= mm - 1 {
			d[bits.TrailingZeros32(mm)&31] = uint64(p)
		}
		return
	}
	var res bool
	switch in.imm {
	case voteAll:
		res = p == mask
	case voteAny:
		res = p != 0
	case voteUni:
		res = p == 0 || p == mask
	}
	var bitsRes uint32
	if res {
		bitsRes = fullMask
	}
	w.p[in.d] = w.p[in.d]&^m | bitsRes&m
}

// xActivemask writes the executing lanes.
func xActivemask(w *warp, in *inst, m uint32) {
	d := &w.r[in.d]
	for mm := m; mm != 0; mm &= mm - 1 {
		d[bits.TrailingZeros32(mm)&31] = uint64(m)
	}
}

// xWarpSync is bar.warp.sync membermask: the check is all it does here.
func xWarpSync(w *warp, in *inst, m uint32) { w.memberMask(in, in.a, m) }

// xRedux: redux.sync.op.type d, a, membermask (in.e); in.aux the op.
func xRedux(w *warp, in *inst, m uint32) {
	mask := w.memberMask(in, in.e, m)
	op := in.aux.(string)
	ra := &w.r[in.a]
	var acc uint64
	first := true
	signed := in.imm != 0
	for mm := mask; mm != 0; mm &= mm - 1 {
		v := ra[bits.TrailingZeros32(mm)&31] & 0xffffffff
		if first {
			acc, first = v, false
			continue
		}
		switch op {
		case "add":
			acc = (acc + v) & 0xffffffff
		case "and":
			acc &= v
		case "or":
			acc |= v
		case "xor":
			acc ^= v
		case "min":
			if signed {
				acc = uint64(uint32(min(int32(acc), int32(v))))
			} else {
				acc = min(acc, v)
			}
		case "max":
			if signed {
				acc = uint64(uint32(max(int32(acc), int32(v))))
			} else {
				acc = max(acc, v)
			}
		}
	}
	d := &w.r[in.d]
	for mm := m; mm != 0; mm &= mm - 1 {
		d[bits.TrailingZeros32(mm)&31] = acc
	}
}

// xLdmatrix: ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 {d...}, [a+imm].
// Matrix i's rows come from the addresses of threads 8i..8i+7; each row is 16
// contiguous bytes. Without .trans thread t receives, for matrix i, row t/4
// columns 2(t%4) and 2(t%4)+1 (low half first); with .trans the elements
// (2(t%4), t/4) and (2(t%4)+1, t/4).
func xLdmatrix(w *warp, in *inst, m uint32) {
	w.aligned(in, m)
	ra := &w.r[in.a]
	trans := in.imm2 != 0
	var rows [32][]byte
	for i := range in.vd {
		for r := 0; r < 8; r++ {
			l := 8*i + r
			addr := ra[l] + uint64(in.imm)
			if in.space == spGeneric {
				if addr-sharedWindow >= windowSize {
					w.faultAddr(in, l, addr, "ldmatrix address is not in shared memory")
				}
				addr -= sharedWindow
			}
			if addr%16 != 0 {
				w.faultAddr(in, l, addr, "ldmatrix row address not aligned to 16 bytes")
			}
			rows[l] = w.shared(in, l, addr, 16, accRead)
		}
	}
	for i, slot := range in.vd {
		d := &w.r[slot]
		for t := 0; t < 32; t++ {
			var lo, hi uint64
			if !trans {
				row := rows[8*i+t/4]
				lo = uint64(row[4*(t%4)]) | uint64(row[4*(t%4)+1])<<8
				hi = uint64(row[4*(t%4)+2]) | uint64(row[4*(t%4)+3])<<8
			} else {
				r0, r1 := rows[8*i+2*(t%4)], rows[8*i+2*(t%4)+1]
				c := 2 * (t / 4)
				lo = uint64(r0[c]) | uint64(r0[c+1])<<8
				hi = uint64(r1[c]) | uint64(r1[c+1])<<8
			}
			d[t] = hi<<16 | lo
		}
	}
}

// mmaSpec is one mma.sync shape and its types.
type mmaSpec struct {
	m, n, k int
	ab      ffmt // f16, bf16 or tf32
	cF16    bool // C is f16 (two f16x2 registers)
	dF16    bool
}

// xMma: mma.sync.aligned.m16n8kK.row.col.dtype.atype.btype.ctype d, a, b, c.
// in.vd is D, in.va the A, B and C registers in order. The fragments follow the
// PTX ISA's figures for m16n8k16 and m16n8k8 (groupID = lane>>2,
// threadID_in_group = lane%4). Products are exact and summed in float64, then
// rounded once to the accumulator type (the tensor cores' order and
// intermediate precision are unspecified; this is the exact sum, rounded).
func xMma(w *warp, in *inst, m uint32) {
	w.aligned(in, m)
	s := in.aux.(*mmaSpec)
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	na, nb := aRegs(s), bRegs(s)
	regA, regB, regC := in.va[:na], in.va[na:na+nb], in.va[na+nb:]
	for t := 0; t < 32; t++ {
		g, q := t>>2, t&3
		elem := func(slot int32, half int) float64 {
			v := w.r[slot][t]
			if s.ab == fmtTF32 {
				return float64(f32(v &^ 0x1fff)) // the low 13 bits are ignored
			}
			return decodeFloat(v>>(16*half)&0xffff, s.ab)
		}
		if s.ab == fmtTF32 {
			// A: a0 (g, q), a1 (g+8, q), a2 (g, q+4), a3 (g+8, q+4); B: b0 (q, g), b1 (q+4, g)
			A[g][q], A[g+8][q], A[g][q+4], A[g+8][q+4] = elem(regA[0], 0), elem(regA[1], 0), elem(regA[2], 0), elem(regA[3], 0)
			B[q][g], B[q+4][g] = elem(regB[0], 0), elem(regB[1], 0)
		} else {
			for i := 0; i < 2*na; i++ {
				row := g
				if i%4 >= 2 {
					row = g + 8
				}
				col := 2*q + i&1
				if i >= 4 {
					col += 8
				}
				A[row][col] = elem(regA[i/2], i%2)
			}
			for i := 0; i < 2*nb; i++ {
				row := 2*q + i&1
				if i >= 2 {
					row += 8
				}
				B[row][g] = elem(regB[i/2], i%2)
			}
		}
		for i := 0; i < 4; i++ {
			row := g
			if i >= 2 {
				row = g + 8
			}
			col := 2*q + i&1
			if s.cF16 {
				C[row][col] = decodeFloat(w.r[regC[i/2]][t]>>(16*(i%2))&0xffff, fmtF16)
			} else {
				C[row][col] = float64(f32(w.r[regC[i]][t]))
			}
		}
	}
	var D [16][8]float64
	for i := 0; i < 16; i++ {
		for j := 0; j < 8; j++ {
			sum := C[i][j]
			for kk := 0; kk < s.k; kk++ {
				sum += A[i][kk] * B[kk][j]
			}
			D[i][j] = sum
		}
	}
	// write D after reading everything (D may be C)
	for t := 0; t < 32; t++ {
		g, q := t>>2, t&3
		if s.dF16 {
			lo0 := round(D[g][2*q], 0, fmtF16, rn, false, false)
			hi0 := round(D[g][2*q+1], 0, fmtF16, rn, false, false)
			lo1 := round(D[g+8][2*q], 0, fmtF16, rn, false, false)
			hi1 := round(D[g+8][2*q+1], 0, fmtF16, rn, false, false)
			w.r[in.vd[0]][t] = hi0<<16 | lo0
			w.r[in.vd[1]][t] = hi1<<16 | lo1
			continue
		}
		for i := 0; i < 4; i++ {
			row := g
			if i >= 2 {
				row = g + 8
			}
			v := float32(D[row][2*q+i&1])
			if v != v {
				v = math.Float32frombits(0x7fffffff)
			}
			w.r[in.vd[i]][t] = b32(v)
		}
	}
}

// aRegs and bRegs are the A and B fragment register counts.
func aRegs(s *mmaSpec) int {
	if s.ab == fmtTF32 {
		return 4
	}
	return s.k / 4 // k16: 4, k8: 2
}

func bRegs(s *mmaSpec) int {
	if s.ab == fmtTF32 {
		return 2
	}
	return s.k / 8 // k16: 2, k8: 1
}
