package sim

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// checkBody runs body on random inputs and compares every thread's %d with want.
func checkBody(t *testing.T, name, body string, gen func(r *rand.Rand) uint64, want func(a, b, c uint64) uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, uint64(len(name))))
	n := 64
	in := [3][]uint64{}
	for i := range in {
		in[i] = lanes(n, func(int) uint64 { return gen(r) })
	}
	// edge values in the first lanes
	edges := []uint64{0, 1, 0xffffffff, 0x80000000, 0x7fffffff, 1 << 63, ^uint64(0), 31, 32, 33, 64}
	for i, e := range edges {
		in[0][i], in[1][(i+3)%len(edges)], in[2][i] = e, e, e
	}
	got := runPTX(t, "", body, in[0], in[1], in[2])
	for i := range got {
		if w := want(in[0][i], in[1][i], in[2][i]); got[i] != w {
			t.Errorf("%s(%#x, %#x, %#x) = %#x, want %#x", name, in[0][i], in[1][i], in[2][i], got[i], w)
			return
		}
	}
}

func any64(r *rand.Rand) uint64 { return r.Uint64() }

// body32 wraps a 32-bit operation on the low halves of %a, %b, %c into %r4.
func body32(op string) string {
	return `
	cvt.u32.u64 %r1, %a;
	cvt.u32.u64 %r2, %b;
	cvt.u32.u64 %r3, %c;
	` + op + `
	cvt.u64.u32 %d, %r4;`
}

func TestIntegerOps(t *testing.T) {
	u := func(x uint64) uint32 { return uint32(x) }
	s := func(x uint64) int32 { return int32(x) }
	cases := []struct {
		name, body string
		want       func(a, b, c uint64) uint64
	}{
		{"add.s32", body32("add.s32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(u(a) + u(b)) }},
		{"add.sat.s32", body32("add.sat.s32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 {
			x := int64(s(a)) + int64(s(b))
			return uint64(uint32(int32(min(max(x, math.MinInt32), math.MaxInt32))))
		}},
		{"sub.u64", "sub.u64 %d, %a, %b;", func(a, b, c uint64) uint64 { return a - b }},
		{"mul.lo.s32", body32("mul.lo.s32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(u(a) * u(b)) }},
		{"mul.hi.u32", body32("mul.hi.u32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(u(a)) * uint64(u(b)) >> 32 }},
		{"mul.hi.s32", body32("mul.hi.s32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(uint32((int64(s(a)) * int64(s(b))) >> 32)) }},
		{"mul.hi.s64", "mul.hi.s64 %d, %a, %b;", func(a, b, c uint64) uint64 {
			hi, _ := bits.Mul64(a, b)
			if int64(a) < 0 {
				hi -= b
			}
			if int64(b) < 0 {
				hi -= a
			}
			return hi
		}},
		{"mul.wide.s32", "cvt.u32.u64 %r1, %a; cvt.u32.u64 %r2, %b; mul.wide.s32 %d, %r1, %r2;", func(a, b, c uint64) uint64 { return uint64(int64(s(a)) * int64(s(b))) }},
		{"mul.wide.u32", "cvt.u32.u64 %r1, %a; cvt.u32.u64 %r2, %b; mul.wide.u32 %d, %r1, %r2;", func(a, b, c uint64) uint64 { return uint64(u(a)) * uint64(u(b)) }},
		{"mad.lo.s32", body32("mad.lo.s32 %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 { return uint64(u(a)*u(b) + u(c)) }},
		{"mad.wide.s32", "cvt.u32.u64 %r1, %a; cvt.u32.u64 %r2, %b; mad.wide.s32 %d, %r1, %r2, %c;", func(a, b, c uint64) uint64 { return uint64(int64(s(a))*int64(s(b))) + c }},
		{"min.s32", body32("min.s32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(uint32(min(s(a), s(b)))) }},
		{"max.u64", "max.u64 %d, %a, %b;", func(a, b, c uint64) uint64 { return max(a, b) }},
		{"abs.s32", body32("abs.s32 %r4, %r1;"), func(a, b, c uint64) uint64 {
			x := s(a)
			if x < 0 {
				x = -x
			}
			return uint64(uint32(x))
		}},
		{"neg.s64", "neg.s64 %d, %a;", func(a, b, c uint64) uint64 { return -a }},
		{"and.b32", body32("and.b32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(u(a) & u(b)) }},
		{"or.b64", "or.b64 %d, %a, %b;", func(a, b, c uint64) uint64 { return a | b }},
		{"xor.b32", body32("xor.b32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(u(a) ^ u(b)) }},
		{"not.b64", "not.b64 %d, %a;", func(a, b, c uint64) uint64 { return ^a }},
		{"cnot.b32", body32("cnot.b32 %r4, %r1;"), func(a, b, c uint64) uint64 { return b2u(u(a) == 0) }},
		{"shl.b32", body32("shl.b32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 {
			if u(b) >= 32 {
				return 0
			}
			return uint64(u(a) << u(b))
		}},
		{"shr.s32", body32("shr.s32 %r4, %r1, %r2;"), func(a, b, c uint64) uint64 { return uint64(uint32(s(a) >> min(u(b), 31))) }},
		{"shr.u64", "cvt.u32.u64 %r2, %b; shr.u64 %d, %a, %r2;", func(a, b, c uint64) uint64 {
			if u(b) >= 64 {
				return 0
			}
			return a >> u(b)
		}},
		{"popc.b64", "popc.b64 %r4, %a; cvt.u64.u32 %d, %r4;", func(a, b, c uint64) uint64 { return uint64(bits.OnesCount64(a)) }},
		{"clz.b32", body32("clz.b32 %r4, %r1;"), func(a, b, c uint64) uint64 { return uint64(bits.LeadingZeros32(u(a))) }},
		{"brev.b32", body32("brev.b32 %r4, %r1;"), func(a, b, c uint64) uint64 { return uint64(bits.Reverse32(u(a))) }},
		{"bfind.u32", body32("bfind.u32 %r4, %r1;"), func(a, b, c uint64) uint64 {
			if u(a) == 0 {
				return 0xffffffff
			}
			return uint64(31 - bits.LeadingZeros32(u(a)))
		}},
		{"bfind.shiftamt.s32", body32("bfind.shiftamt.s32 %r4, %r1;"), func(a, b, c uint64) uint64 {
			x := u(a)
			if int32(x) < 0 {
				x = ^x
			}
			if x == 0 {
				return 0xffffffff
			}
			return uint64(bits.LeadingZeros32(x))
		}},
		{"bfe.u32", body32("and.b32 %r2, %r2, 63; and.b32 %r3, %r3, 63; bfe.u32 %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			pos, ln := u(b)&63, u(c)&63
			var d uint32
			for i := uint32(0); i < 32; i++ {
				if i < ln && pos+i < 32 {
					d |= (u(a) >> (pos + i) & 1) << i
				}
			}
			return uint64(d)
		}},
		{"bfe.s32", body32("and.b32 %r2, %r2, 63; and.b32 %r3, %r3, 63; bfe.s32 %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			pos, ln := u(b)&63, u(c)&63
			if ln == 0 {
				return 0
			}
			sbit := u(a) >> min(pos+ln-1, 31) & 1
			var d uint32
			for i := uint32(0); i < 32; i++ {
				if i < ln && pos+i < 32 {
					d |= (u(a) >> (pos + i) & 1) << i
				} else {
					d |= sbit << i
				}
			}
			return uint64(d)
		}},
		{"bfi.b32", body32("and.b32 %r3, %r3, 31; and.b32 %r5, %r3, 7; bfi.b32 %r4, %r1, %r2, %r3, %r5;"), func(a, b, c uint64) uint64 {
			pos, ln := u(c)&31, u(c)&31&7
			m := uint32(1)<<ln - 1
			return uint64(u(b)&^(m<<pos) | (u(a)&m)<<pos)
		}},
		{"prmt.b32", body32("prmt.b32 %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			src := [8]byte{}
			for i := 0; i < 4; i++ {
				src[i], src[4+i] = byte(u(a)>>(8*i)), byte(u(b)>>(8*i))
			}
			var d uint32
			for i := 0; i < 4; i++ {
				sel := u(c) >> (4 * i) & 0xf
				v := uint32(src[sel&7])
				if sel&8 != 0 {
					if v&0x80 != 0 {
						v = 0xff
					} else {
						v = 0
					}
				}
				d |= v << (8 * i)
			}
			return uint64(d)
		}},
		{"prmt.b32.f4e", body32("prmt.b32.f4e %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			x := uint64(u(b))<<32 | uint64(u(a))
			return uint64(uint32(x >> (8 * (u(c) & 3))))
		}},
		{"prmt.b32.b4e", body32("prmt.b32.b4e %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			x := uint64(u(b))<<32 | uint64(u(a))
			sel := u(c) & 3
			var d uint32
			for i := uint32(0); i < 4; i++ { // d.b0 = byte sel, d.b1 = sel-1, ... (mod 8)
				d |= uint32(x>>(8*((sel-i)&7))&0xff) << (8 * i)
			}
			return uint64(d)
		}},
		{"lop3.b32", body32("lop3.b32 %r4, %r1, %r2, %r3, 0x96;"), func(a, b, c uint64) uint64 { return uint64(u(a) ^ u(b) ^ u(c)) }},
		{"shf.l.wrap.b32", body32("shf.l.wrap.b32 %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			return uint64(uint32((uint64(u(b))<<32 | uint64(u(a))) << (u(c) & 31) >> 32))
		}},
		{"shf.r.clamp.b32", body32("shf.r.clamp.b32 %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			return uint64(uint32((uint64(u(b))<<32 | uint64(u(a))) >> min(u(c), 32)))
		}},
		{"selp.b64", "setp.lt.u64 %p1, %a, %b; selp.b64 %d, %a, %c, %p1;", func(a, b, c uint64) uint64 {
			if a < b {
				return a
			}
			return c
		}},
		{"cvt.s64.s8", "cvt.u32.u64 %r1, %a; cvt.s64.s8 %d, %r1;", func(a, b, c uint64) uint64 { return uint64(int64(int8(a))) }},
		{"cvt.sat.u8.s32", body32("cvt.sat.u8.s32 %r4, %r1;"), func(a, b, c uint64) uint64 { return uint64(min(max(s(a), 0), 255)) }},
		{"cvt.sat.s16.u64", "cvt.sat.s16.u64 %h1, %a; cvt.s64.s16 %d, %h1;", func(a, b, c uint64) uint64 { return uint64(int64(min(a, 32767))) }},
		{"sad.u32", body32("sad.u32 %r4, %r1, %r2, %r3;"), func(a, b, c uint64) uint64 {
			x, y := u(a), u(b)
			if x < y {
				x, y = y, x
			}
			return uint64(x - y + u(c))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkBody(t, c.name, c.body, any64, c.want) })
	}
}

func TestDivisionByZeroFaults(t *testing.T) {
	_, err := tryPTX(t, "", "cvt.u32.u64 %r1, %a; div.u32 %r2, %r1, 0; cvt.u64.u32 %d, %r2;", lanes(32, func(i int) uint64 { return 7 }))
	if err == nil {
		t.Fatal("no fault")
	}
	wantIn(t, err.Error(), "integer division by zero")
	got := runPTX(t, "", "div.s64 %d, %a, %b;", []uint64{7, ^uint64(6), 1 << 63}, []uint64{2, 2, ^uint64(0)})
	if got[0] != 3 || int64(got[1]) != -3 || got[2] != 1<<63 {
		t.Errorf("div.s64: %#x", got)
	}
	got = runPTX(t, "", "rem.s64 %d, %a, %b;", []uint64{7, ^uint64(6)}, []uint64{2, 2})
	if got[0] != 1 || int64(got[1]) != -1 {
		t.Errorf("rem.s64: %d", got)
	}
}

// setp on every comparison, with NaNs, and the predicate combinations.
func TestSetp(t *testing.T) {
	nan := math.Float32bits(float32(math.NaN()))
	vals := []float32{-1, 0, 1, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}
	var as, bs []uint64
	for _, x := range vals {
		for _, y := range vals {
			as, bs = append(as, uint64(math.Float32bits(x))), append(bs, uint64(math.Float32bits(y)))
		}
		as, bs = append(as, uint64(math.Float32bits(x))), append(bs, uint64(nan))
		as, bs = append(as, uint64(nan)), append(bs, uint64(math.Float32bits(x)))
	}
	f := func(u uint64) float64 { return float64(math.Float32frombits(uint32(u))) }
	ops := map[string]func(x, y float64) bool{
		"eq": func(x, y float64) bool { return x == y }, "ne": func(x, y float64) bool { return x != y && x == x && y == y },
		"lt": func(x, y float64) bool { return x < y }, "le": func(x, y float64) bool { return x <= y },
		"gt": func(x, y float64) bool { return x > y }, "ge": func(x, y float64) bool { return x >= y },
		"equ": func(x, y float64) bool { return x == y || x != x || y != y }, "neu": func(x, y float64) bool { return x != y },
		"ltu": func(x, y float64) bool { return !(x >= y) }, "leu": func(x, y float64) bool { return !(x > y) },
		"gtu": func(x, y float64) bool { return !(x <= y) }, "geu": func(x, y float64) bool { return !(x < y) },
		"num": func(x, y float64) bool { return x == x && y == y }, "nan": func(x, y float64) bool { return x != x || y != y },
	}
	for op, want := range ops {
		body := `mov.b64 {%r1, %r2}, %a; mov.b32 %f1, %r1; mov.b64 {%r3, %r4}, %b; mov.b32 %f2, %r3;
	setp.` + op + `.f32 %p1|%p2, %f1, %f2;
	selp.u64 %rd1, 1, 0, %p1;
	selp.u64 %rd2, 2, 0, %p2;
	or.b64 %d, %rd1, %rd2;`
		got := runPTX(t, "", body, as, bs)
		for i := range got {
			w := want(f(as[i]), f(bs[i]))
			exp := uint64(2)
			if w {
				exp = 1
			}
			if got[i] != exp {
				t.Errorf("setp.%s.f32 %v, %v: %d, want %d", op, f(as[i]), f(bs[i]), got[i], exp)
			}
		}
	}
	// combination with a third predicate: p = (a < b) AND !c, q = !(a < b) AND !c
	body := `setp.ne.u64 %p3, %c, 0;
	setp.lt.and.s64 %p1|%p2, %a, %b, !%p3;
	selp.u64 %rd1, 1, 0, %p1;
	selp.u64 %rd2, 2, 0, %p2;
	or.b64 %d, %rd1, %rd2;`
	a, b, c := []uint64{1, 5, 1, 5}, []uint64{5, 1, 5, 1}, []uint64{0, 0, 1, 1}
	got := runPTX(t, "", body, a, b, c)
	if want := []uint64{1, 2, 0, 0}; !equalU64(got, want) {
		t.Errorf("setp.lt.and: %v, want %v", got, want)
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPredicateLogic(t *testing.T) {
	body := `setp.ne.u64 %p1, %a, 0; setp.ne.u64 %p2, %b, 0;
	xor.pred %p3, %p1, %p2; and.pred %p4, %p1, %p2; or.pred %p5, %p1, %p2; not.pred %p6, %p1;
	selp.u64 %rd1, 1, 0, %p3; selp.u64 %rd2, 2, 0, %p4; selp.u64 %rd3, 4, 0, %p5; selp.u64 %rd4, 8, 0, %p6;
	or.b64 %d, %rd1, %rd2; or.b64 %d, %d, %rd3; or.b64 %d, %d, %rd4;`
	got := runPTX(t, "", body, []uint64{0, 0, 1, 1}, []uint64{0, 1, 0, 1})
	if want := []uint64{8, 1 | 4 | 8, 1 | 4, 2 | 4}; !equalU64(got, want) {
		t.Errorf("pred logic: %v, want %v", got, want)
	}
}
