package sim

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// shflRef is CUDA's __shfl_*_sync(mask, v, x, width) for one lane.
func shflRef(mode string, vals []uint32, lane, x, width int) uint32 {
	base := lane / width * width
	src := lane
	switch mode {
	case "up":
		if lane%width-x >= 0 {
			src = lane - x
		}
	case "down":
		if lane%width+x < width {
			src = lane + x
		}
	case "bfly":
		if s := lane ^ x; s < base+width {
			src = s
		}
	case "idx":
		src = base + x%width
	}
	return vals[src]
}

func TestShfl(t *testing.T) {
	vals := make([]uint32, 32)
	in := make([]uint64, 32)
	for i := range vals {
		vals[i] = uint32(1000 + 7*i)
		in[i] = uint64(vals[i])
	}
	for _, mode := range []string{"up", "down", "bfly", "idx"} {
		for _, width := range []int{32, 16, 8} {
			for _, x := range []int{0, 1, 3, 5} {
				c := (32-width)<<8 | 0x1f
				if mode == "up" {
					c = (32 - width) << 8
				}
				body := "cvt.u32.u64 %r1, %a; shfl.sync." + mode + ".b32 %r4|%p1, %r1, " + itoa(x) + ", " + itoa(c) + ", 0xffffffff; cvt.u64.u32 %d, %r4;"
				got := runPTX(t, "", body, in)
				for l := range got {
					if w := shflRef(mode, vals, l, x, width); uint32(got[l]) != w {
						t.Errorf("shfl.%s x=%d width=%d lane %d: %d, want %d", mode, x, width, l, got[l], w)
						break
					}
				}
			}
		}
	}
}

func itoa(x int) string {
	if x < 0 {
		return "-" + itoa(-x)
	}
	if x < 10 {
		return string(rune('0' + x))
	}
	return itoa(x/10) + string(rune('0'+x%10))
}

func TestVoteAndRedux(t *testing.T) {
	in := lanes(32, func(i int) uint64 { return uint64(i % 3) })
	body := `setp.ne.u64 %p1, %a, 0;
	vote.sync.ballot.b32 %r1, %p1, 0xffffffff;
	vote.sync.any.pred %p2, %p1, 0xffffffff;
	vote.sync.all.pred %p3, %p1, 0xffffffff;
	vote.sync.uni.pred %p4, !%p1, 0xffffffff;
	selp.u32 %r2, 1, 0, %p2; selp.u32 %r3, 2, 0, %p3; selp.u32 %r5, 4, 0, %p4;
	or.b32 %r2, %r2, %r3; or.b32 %r2, %r2, %r5;
	cvt.u32.u64 %r6, %a;
	redux.sync.add.u32 %r7, %r6, 0xffffffff;
	redux.sync.max.s32 %r8, %r6, 0xffffffff;
	activemask.b32 %r9;
	mov.b64 %d, {%r1, %r2};`
	got := runPTX(t, "", body, in)
	var ballot uint32
	for i := range in {
		if in[i] != 0 {
			ballot |= 1 << i
		}
	}
	for l := range got {
		if uint32(got[l]) != ballot || got[l]>>32 != 1 {
			t.Errorf("lane %d: ballot %#x flags %d, want %#x and 1", l, uint32(got[l]), got[l]>>32, ballot)
			break
		}
	}
	got = runPTX(t, "", body[:strings.Index(body, "mov.b64")]+"mov.b64 %d, {%r7, %r8};", in)
	if sum := uint32(got[0]); sum != 31 || uint32(got[0]>>32) != 2 {
		t.Errorf("redux add %d (want 31), max %d (want 2)", sum, got[0]>>32)
	}
}

func TestAtomics(t *testing.T) {
	n := 96 // three warps
	cell := make([]uint64, n)
	// u32 add: the old values are a permutation of 0..n-1; the order is the seeded one
	body := `ld.param.u64 %rd1, [in1];
	atom.global.add.u32 %r1, [%rd1], 1;
	cvt.u64.u32 %d, %r1;`
	got := runPTX(t, "", body, make([]uint64, n), cell)
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i := range got {
		if got[i] != uint64(i) {
			t.Fatalf("atom.add.u32 old values %v", got)
		}
	}
	// f32 add of integers (exact), max, min, exch, cas in shared memory
	body = `.reg .b32 %rs;
	mov.u32 %rs, sh;
	setp.eq.u32 %p1, %tid, 0;
	@%p1 st.shared.f32 [%rs], 0f00000000;
	@%p1 st.shared.u32 [%rs+4], 0;
	@%p1 st.shared.u32 [%rs+8], 0;
	@%p1 st.shared.u32 [%rs+12], 0xffffffff;
	bar.sync 0;
	cvt.rn.f32.u32 %f1, %tid;
	atom.shared.add.f32 %f2, [%rs], %f1;
	atom.shared.max.s32 %r1, [%rs+4], %tid;
	atom.shared.cas.b32 %r2, [%rs+8], 0, 1;
	red.shared.min.u32 [%rs+12], %tid;
	bar.sync 0;
	ld.shared.f32 %f3, [%rs];
	ld.shared.u32 %r3, [%rs+4];
	ld.shared.u32 %r5, [%rs+12];
	selp.u32 %r6, 1, 0, %p1;
	setp.eq.u32 %p2, %r2, 0;
	selp.u32 %r7, 2, 0, %p2;
	mov.b32 %r4, %f3;
	cvt.u64.u32 %rd2, %r4; cvt.u64.u32 %rd3, %r3; shl.b64 %rd3, %rd3, 32; or.b64 %d, %rd2, %rd3;
	add.u32 %r8, %r5, %r7; cvt.u64.u32 %rd4, %r8;`
	decl := ".shared .align 4 .b8 sh[16];"
	got = runPTX(t, decl, body, make([]uint64, n))
	sum := float32(n * (n - 1) / 2)
	if u32f(got[0]&0xffffffff) != sum || got[0]>>32 != uint64(n-1) {
		t.Errorf("shared add %v (want %v), max %d (want %d)", u32f(got[0]&0xffffffff), sum, got[0]>>32, n-1)
	}
	// exactly one thread's cas succeeds
	body2 := strings.Replace(body, "or.b64 %d, %rd2, %rd3;", "", 1) + " mov.b64 %d, %rd4;"
	got = runPTX(t, decl, body2, make([]uint64, n))
	wins := 0
	for _, g := range got {
		if g&2 != 0 {
			wins++
		}
		if g&^2 != 0 { // min of tids: 0
			t.Errorf("red.min: %d", g&^2)
		}
	}
	if wins != 1 {
		t.Errorf("cas succeeded %d times, want once", wins)
	}
}

func TestVectorAndNcLoads(t *testing.T) {
	in := lanes(32, func(i int) uint64 { return uint64(i)<<32 | uint64(2*i) })
	body := `ld.param.u64 %rd1, [in0];
	and.b32 %r9, %tid, 30;
	mul.wide.u32 %rd2, %r9, 8;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd3];
	add.u32 %r5, %r1, %r4;
	ld.global.v2.u32 {%r6, %r7}, [%rd3+8];
	cvt.u64.u32 %rd4, %r5; cvt.u64.u32 %rd5, %r7; shl.b64 %rd5, %rd5, 32; or.b64 %d, %rd4, %rd5;`
	got := runPTX(t, "", body, in)
	for l := range got {
		e := l &^ 1
		w := uint64(2*e+(e+1))&0xffffffff | uint64(e+1)<<32
		if got[l] != w {
			t.Errorf("lane %d: %#x, want %#x", l, got[l], w)
		}
	}
	// a 16-byte access must be 16-byte aligned
	_, err := tryPTX(t, "", `ld.param.u64 %rd1, [in0]; ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1+8];`, in)
	if err == nil || !strings.Contains(err.Error(), "misaligned 16-byte read") {
		t.Errorf("misaligned v4: %v", err)
	}
}

// ld.s32 into a 64-bit register sign-extends, ld.u32 zero-extends (the
// classifier loads a target id of -1 so, then indexes with it).
func TestLoadsWidenByType(t *testing.T) {
	in := lanes(32, func(i int) uint64 { return uint64(uint32(int32(i - 16))) })
	for _, c := range []struct {
		ty   string
		want func(x uint32) uint64
	}{
		{"s32", func(x uint32) uint64 { return uint64(int64(int32(x))) }},
		{"u32", func(x uint32) uint64 { return uint64(x) }},
	} {
		body := `ld.param.u64 %rd1, [in0];
	mul.wide.u32 %rd2, %tid, 8;
	add.s64 %rd3, %rd1, %rd2;
	ld.global.` + c.ty + ` %d, [%rd3];`
		got := runPTX(t, "", body, in)
		for l, g := range got {
			if w := c.want(uint32(in[l])); g != w {
				t.Errorf("ld.global.%s of %#x into a 64-bit register: %#x, want %#x", c.ty, uint32(in[l]), g, w)
				break
			}
		}
	}
}

func TestLocalMemoryAndCvta(t *testing.T) {
	decl := `.local .align 8 .b8 __local_depot0[16];
	.reg .b64 %SP, %SPL;`
	body := `mov.u64 %SPL, __local_depot0;
	cvta.local.u64 %SP, %SPL;
	st.local.u64 [%SPL+8], %a;
	ld.u64 %rd1, [%SP+8];              // generic load of the same word
	add.u64 %rd2, %SPL, 8;
	ld.local.u64 %rd3, [%rd2];
	add.u64 %d, %rd1, %rd3;`
	in := lanes(32, func(i int) uint64 { return uint64(i * 11) })
	got := runPTX(t, decl, body, in)
	for l := range got {
		if got[l] != uint64(22*l) {
			t.Errorf("lane %d: %d, want %d", l, got[l], 22*l)
			break
		}
	}
	_, err := tryPTX(t, decl, "mov.u64 %SPL, __local_depot0; st.local.u64 [%SPL+16], %a;", in)
	if err == nil || !strings.Contains(err.Error(), "out-of-bounds 8-byte write of local memory") {
		t.Errorf("local overflow: %v", err)
	}
}

func TestCpAsync(t *testing.T) {
	n := 32
	in := lanes(n, func(i int) uint64 { return 0x1111111100000000*uint64(i+1) | uint64(i) })
	decl := ".shared .align 16 .b8 sh[256];"
	body := `.reg .b32 %rs;
	mov.u32 %rs, sh;
	ld.param.u64 %rd1, [in0];
	mul.wide.u32 %rd2, %tid, 8;
	add.s64 %rd3, %rd1, %rd2;
	shl.b32 %r1, %tid, 3;
	add.u32 %r2, %rs, %r1;
	cp.async.ca.shared.global [%r2], [%rd3], 8;
	cp.async.commit_group;
	cp.async.wait_group 0;
	bar.sync 0;
	add.u32 %r3, %tid, 1;
	rem.u32 %r3, %r3, 32;
	shl.b32 %r3, %r3, 3;
	add.u32 %r4, %rs, %r3;
	ld.shared.u64 %d, [%r4];`
	got := runPTX(t, decl, body, in)
	for l := range got {
		if got[l] != in[(l+1)%n] {
			t.Errorf("lane %d: %#x, want %#x", l, got[l], in[(l+1)%n])
			break
		}
	}
	// zero fill: 4 of 8 bytes read
	got = runPTX(t, decl, strings.Replace(body, "[%rd3], 8;", "[%rd3], 8, 4;", 1), in)
	if got[0] != in[1]&0xffffffff {
		t.Errorf("zero-fill: %#x, want %#x", got[0], in[1]&0xffffffff)
	}
	// reading before the wait is a fault
	_, err := tryPTX(t, decl, strings.Replace(strings.Replace(body, "cp.async.wait_group 0;", "", 1), "bar.sync 0;\n", "bar.sync 0;\n\tcp.async.wait_all;\n\tbar.sync 0;\n\tld.shared.u64 %rd9, [%r2];\n", 1), in)
	if err != nil {
		t.Errorf("wait_all then read: %v", err)
	}
	_, err = tryPTX(t, decl, strings.Replace(body, "cp.async.wait_group 0;", "ld.shared.u64 %rd9, [%r2];", 1), in)
	if err == nil || !strings.Contains(err.Error(), "cp.async is still writing") {
		t.Errorf("read before wait: %v", err)
	}
	// wait_group 1 keeps the newest group in flight...
	_, err = tryPTX(t, decl, strings.Replace(body, "cp.async.wait_group 0;", "cp.async.wait_group 1;", 1), in)
	if err == nil || !strings.Contains(err.Error(), "cp.async is still writing") {
		t.Errorf("wait_group 1 with the copy in the newest group: %v", err)
	}
	// ...and lets older ones land
	if _, err = tryPTX(t, decl, strings.Replace(body, "cp.async.wait_group 0;", "cp.async.commit_group; cp.async.wait_group 1;", 1), in); err != nil {
		t.Errorf("wait_group 1 with the copy's group second newest: %v", err)
	}
}

// ldmatrix: shared holds 32 rows of 8 halves, row k (0..31) holding the values
// 100k+0..7; lane l points at row perm(l). Thread t's register i must hold the
// fragment of matrix i the PTX ISA's figure gives.
func TestLdmatrix(t *testing.T) {
	perm := func(l int) int { return (l*7 + 3) % 32 }
	decl := ".shared .align 16 .b8 sh[512];"
	fill := `.reg .b32 %rs;
	mov.u32 %rs, sh;
	shl.b32 %r1, %tid, 4;
	add.u32 %r2, %rs, %r1;
	mul.lo.u32 %r3, %tid, 100;
	add.u32 %r5, %r3, 1;
	add.u32 %r6, %r3, 2;
	add.u32 %r7, %r3, 3;
	add.u32 %r8, %r3, 4;
	add.u32 %r9, %r3, 5;
	add.u32 %r10, %r3, 6;
	add.u32 %r11, %r3, 7;
	cvt.u16.u32 %h1, %r3; cvt.u16.u32 %h2, %r5; cvt.u16.u32 %h3, %r6; cvt.u16.u32 %h4, %r7;
	cvt.u16.u32 %h5, %r8; cvt.u16.u32 %h6, %r9; cvt.u16.u32 %h7, %r10; cvt.u16.u32 %h8, %r11;
	st.shared.v4.b16 [%r2], {%h1, %h2, %h3, %h4};
	st.shared.v4.b16 [%r2+8], {%h5, %h6, %h7, %h8};
	bar.sync 0;
	cvt.u32.u64 %r12, %a;           // the row this lane points at
	shl.b32 %r12, %r12, 4;
	add.u32 %r13, %rs, %r12;
`
	in := lanes(32, func(l int) uint64 { return uint64(perm(l)) })
	for _, x := range []int{1, 2, 4} {
		for _, trans := range []bool{false, true} {
			op := "ldmatrix.sync.aligned.m8n8.x" + itoa(x)
			if trans {
				op += ".trans"
			}
			regs := []string{"%r14", "%r15", "%r16", "%r17"}[:x]
			ld := op + ".shared.b16 {" + strings.Join(regs, ", ") + "}, [%r13];\n"
			for i := 0; i < x; i++ {
				body := fill + ld + "\tcvt.u64.u32 %d, " + regs[i] + ";"
				got := runPTX(t, decl, body, in)
				for lane := 0; lane < 32; lane++ {
					var lo, hi int
					if !trans {
						row := perm(8*i + lane/4)
						lo, hi = 100*row+2*(lane%4), 100*row+2*(lane%4)+1
					} else {
						lo = 100*perm(8*i+2*(lane%4)) + lane/4
						hi = 100*perm(8*i+2*(lane%4)+1) + lane/4
					}
					w := uint64(uint16(lo)) | uint64(uint16(hi))<<16
					if got[lane] != w {
						t.Errorf("%s register %d lane %d: %#x, want %#x", op, i, lane, got[lane], w)
						return
					}
				}
			}
		}
	}
}

// mma.sync m16n8k16 (and k8) with bf16 and f16 inputs: the fragments are laid
// out as the PTX ISA's figures say, the result is compared with a float64 GEMM.
func TestMma(t *testing.T) {
	for _, c := range []struct {
		k    int
		typ  string
		conv func(float32) uint16
		back func(uint16) float32
	}{
		{16, "bf16", ToBF16, FromBF16}, {8, "bf16", ToBF16, FromBF16}, {16, "f16", ToF16, FromF16},
	} {
		r := rand.New(rand.NewPCG(uint64(c.k), 3))
		var A [16][16]uint16
		var B [16][8]uint16
		for i := range A {
			for j := 0; j < c.k; j++ {
				A[i][j] = c.conv(float32(r.NormFloat64()))
			}
		}
		for i := 0; i < c.k; i++ {
			for j := range B[i] {
				B[i][j] = c.conv(float32(r.NormFloat64()))
			}
		}
		// fragments per lane, from the figures
		aReg := func(lane, reg int) uint32 {
			g, q := lane>>2, lane%4
			var h [2]uint16
			for e := 0; e < 2; e++ {
				i := 2*reg + e
				row := g
				if i%4 >= 2 {
					row += 8
				}
				col := 2*q + i&1
				if i >= 4 {
					col += 8
				}
				h[e] = A[row][col]
			}
			return uint32(h[0]) | uint32(h[1])<<16
		}
		bReg := func(lane, reg int) uint32 {
			g, q := lane>>2, lane%4
			var h [2]uint16
			for e := 0; e < 2; e++ {
				i := 2*reg + e
				row := 2*q + i&1
				if i >= 2 {
					row += 8
				}
				h[e] = B[row][g]
			}
			return uint32(h[0]) | uint32(h[1])<<16
		}
		cVal := func(row, col int) float32 { return float32(row*8+col) / 16 }
		in0 := lanes(32, func(l int) uint64 { return uint64(aReg(l, 0)) | uint64(aReg(l, 1))<<32 })
		in1 := lanes(32, func(l int) uint64 {
			if c.k == 8 {
				return 0
			}
			return uint64(aReg(l, 2)) | uint64(aReg(l, 3))<<32
		})
		in2 := lanes(32, func(l int) uint64 {
			if c.k == 8 {
				return uint64(bReg(l, 0))
			}
			return uint64(bReg(l, 0)) | uint64(bReg(l, 1))<<32
		})
		// C from the lane: c_i at (g + 8·(i≥2), 2q + i&1), value (row·8+col)/16
		body := `mov.b64 {%r1, %r2}, %a; mov.b64 {%r3, %r5}, %b; mov.b64 {%r6, %r7}, %c;
	shr.u32 %r8, %lane, 2; and.b32 %r9, %lane, 3; shl.b32 %r9, %r9, 1;
	mad.lo.u32 %r10, %r8, 8, %r9; cvt.rn.f32.u32 %f1, %r10; mul.rn.f32 %f1, %f1, 0f3D800000;
	add.u32 %r11, %r10, 1; cvt.rn.f32.u32 %f2, %r11; mul.rn.f32 %f2, %f2, 0f3D800000;
	add.u32 %r12, %r10, 64; cvt.rn.f32.u32 %f3, %r12; mul.rn.f32 %f3, %f3, 0f3D800000;
	add.u32 %r13, %r10, 65; cvt.rn.f32.u32 %f4, %r13; mul.rn.f32 %f4, %f4, 0f3D800000;
	`
		if c.k == 16 {
			body += "mma.sync.aligned.m16n8k16.row.col.f32." + c.typ + "." + c.typ + ".f32 {%f5, %f6, %f7, %f8}, {%r1, %r2, %r3, %r5}, {%r6, %r7}, {%f1, %f2, %f3, %f4};\n"
		} else {
			body += "mma.sync.aligned.m16n8k8.row.col.f32." + c.typ + "." + c.typ + ".f32 {%f5, %f6, %f7, %f8}, {%r1, %r2}, {%r6}, {%f1, %f2, %f3, %f4};\n"
		}
		for half := 0; half < 2; half++ {
			out := "mov.b32 %r14, %f5; mov.b32 %r15, %f6;"
			if half == 1 {
				out = "mov.b32 %r14, %f7; mov.b32 %r15, %f8;"
			}
			got := runPTX(t, "", body+out+" mov.b64 %d, {%r14, %r15};", in0, in1, in2)
			for l := 0; l < 32; l++ {
				g, q := l>>2, l%4
				for e := 0; e < 2; e++ {
					row, col := g+8*half, 2*q+e
					want := float64(cVal(row, col))
					for kk := 0; kk < c.k; kk++ {
						want += float64(c.back(A[row][kk])) * float64(c.back(B[kk][col]))
					}
					gv := float64(u32f(got[l] >> (32 * e)))
					if math.Abs(gv-want) > 1e-6*math.Max(1, math.Abs(want)) {
						t.Errorf("m16n8k%d %s D[%d][%d] (lane %d) = %v, want %v", c.k, c.typ, row, col, l, gv, want)
						return
					}
				}
			}
		}
	}
}

func TestMmaNeedsTheWholeWarp(t *testing.T) {
	body := `setp.lt.u32 %p1, %lane, 16;
	@%p1 bra $L_skip;
	mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%f5, %f6, %f7, %f8}, {%r1, %r2}, {%r6}, {%f1, %f2, %f3, %f4};
$L_skip:`
	_, err := tryPTX(t, "", body, make([]uint64, 32))
	if err == nil || !strings.Contains(err.Error(), "needs all 32 threads of the warp converged") {
		t.Errorf("diverged mma: %v", err)
	}
}

// Blocks and warps run in a seeded random order: two seeds give two orders of
// an atomic counter, the same seed the same order.
func TestSeededOrder(t *testing.T) {
	src := ptxHeader + `
.visible .entry order(.param .u64 p, .param .u64 q)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<6>;
	.reg .pred %p1;
	ld.param.u64 %rd1, [p];
	ld.param.u64 %rd2, [q];
	mov.u32 %r1, %laneid;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra $L_done;
	atom.global.add.u32 %r2, [%rd2], 1;
	mov.u32 %r3, %ctaid.x;
	mad.lo.u32 %r3, %r3, 8, 0;
	mov.u32 %r1, %tid.x;
	shr.u32 %r1, %r1, 5;
	add.u32 %r3, %r3, %r1;
	mul.wide.u32 %rd3, %r3, 4;
	add.s64 %rd4, %rd1, %rd3;
	st.global.u32 [%rd4], %r2;
$L_done:
	ret;
}`
	run := func(seed uint64) []uint32 {
		d := NewDevice(Config{Seed: seed})
		m, _ := Parse("order.ptx", []byte(src))
		im, err := d.Load(m)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := im.Kernel("order")
		out, _ := d.Mem.Allocate(4*32, "device")
		ctr, _ := d.Mem.Allocate(4, "device")
		if err := k.Launch(LaunchConfig{Grid: Dim3{4, 1, 1}, Block: Dim3{256, 1, 1}, Args: []uint64{out.Base, ctr.Base}}); err != nil {
			t.Fatal(err)
		}
		res := make([]uint32, 32)
		for i := range res {
			res[i] = binary.LittleEndian.Uint32(out.Buf[4*i:])
		}
		return res
	}
	a, b, c := run(1), run(1), run(2)
	if !equal32(a, b) {
		t.Errorf("one seed, two orders: %v %v", a, b)
	}
	if equal32(a, c) {
		t.Errorf("two seeds, one order: %v", a)
	}
	// within a block, warps do not run in index order
	inOrder := true
	for i := 1; i < 8; i++ {
		inOrder = inOrder && a[i] > a[i-1]
	}
	if inOrder {
		t.Errorf("block 0's warps ran in index order: %v", a[:8])
	}
}

func equal32(a, b []uint32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Dynamic shared memory (extern .shared x[]) follows the static variables; a
// launch may ask for up to 48 KiB less the static part, more once raised.
func TestDynamicShared(t *testing.T) {
	src := ptxHeader + `
.extern .shared .align 16 .b8 dyn[];
.visible .entry dynk(.param .u64 p, .param .u32 n)
{
	.shared .align 4 .b8 stat[12];
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	ld.param.u32 %r6, [n];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	mov.u32 %r3, dyn;
	add.u32 %r4, %r3, %r2;
	st.shared.u32 [%r4], %r1;
	bar.sync 0;
	sub.u32 %r7, %r6, 1;
	sub.u32 %r5, %r7, %r1;          // read the mirror thread's word
	shl.b32 %r5, %r5, 2;
	add.u32 %r5, %r3, %r5;
	ld.shared.u32 %r5, [%r5];
	mov.u32 %r7, stat;              // the static variable sits below dyn
	st.shared.u32 [%r7], %r3;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r5;
	ret;
}`
	d := newTestDev(t)
	k := d.kernelText("dyn.ptx", src, "dynk")
	if k.StaticShared() != 12 || k.MaxDynamicShared() != 48<<10-12 {
		t.Errorf("static %d, max dynamic %d", k.StaticShared(), k.MaxDynamicShared())
	}
	n := 64
	out := d.floats(make([]float32, n))
	if err := k.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{n, 1, 1}, SharedBytes: 4 * n, Args: []uint64{out, uint64(n)}}); err != nil {
		t.Fatal(err)
	}
	b, _ := d.Mem.Bytes(out, 4*n)
	for i := 0; i < n; i++ {
		if got := binary.LittleEndian.Uint32(b[4*i:]); got != uint32(n-1-i) {
			t.Fatalf("thread %d read %d, want %d", i, got, n-1-i)
		}
	}
	// too little dynamic memory: the store past it faults
	err := k.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{n, 1, 1}, SharedBytes: 4 * (n - 1), Args: []uint64{out, uint64(n)}})
	if err == nil || !strings.Contains(err.Error(), "out-of-bounds 4-byte write of shared memory") {
		t.Errorf("%v", err)
	}
	// more than 48 KiB needs the attribute
	big := LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{n, 1, 1}, SharedBytes: 64 << 10, Args: []uint64{out, uint64(n)}}
	if err := k.Launch(big); err == nil || !errors.Is(err, ErrLaunch) {
		t.Errorf("64 KiB without the attribute: %v", err)
	}
	if err := k.SetMaxDynamicShared(64 << 10); err != nil {
		t.Fatal(err)
	}
	if err := k.Launch(big); err != nil {
		t.Errorf("64 KiB with the attribute: %v", err)
	}
	if err := k.SetMaxDynamicShared(200 << 10); err == nil {
		t.Error("200 KiB: past sm_80's 163 KiB")
	}
}
