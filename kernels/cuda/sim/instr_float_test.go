package sim

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

var bigModes = map[string]big.RoundingMode{"rn": big.ToNearestEven, "rz": big.ToZero, "rm": big.ToNegativeInf, "rp": big.ToPositiveInf}

// randF32 returns finite floats over a moderate exponent range, and pairs that
// cancel (to exercise the residual of the exact sums).
func randF32(r *rand.Rand) float32 {
	m := 1 + r.Float64()
	e := r.IntN(40) - 20
	x := float32(math.Ldexp(m, e))
	if r.IntN(2) == 0 {
		x = -x
	}
	return x
}

func f32u(x float32) uint64 { return uint64(math.Float32bits(x)) }
func u32f(x uint64) float32 { return math.Float32frombits(uint32(x)) }

// ref32 rounds an exact big value to f32 with mode (normal range only).
func ref32(x *big.Float, mode string) float32 {
	y := new(big.Float).SetPrec(24).SetMode(bigModes[mode]).Set(x)
	f, _ := y.Float32()
	return f
}

func exact(x float32) *big.Float { return new(big.Float).SetPrec(300).SetFloat64(float64(x)) }

func TestFloat32Rounding(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n := 256
	a, b, c := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i := range a {
		x, y := randF32(r), randF32(r)
		z := randF32(r)
		if i%4 == 0 { // fma with cancellation: c ≈ −a·b
			z = -float32(float64(x) * float64(y))
		}
		if i%8 == 1 { // add with cancellation and a wide exponent gap
			y = -x * (1 + float32(math.Ldexp(1, -23)))
			z = float32(math.Ldexp(float64(z), -30))
		}
		a[i], b[i], c[i] = f32u(x), f32u(y), f32u(z)
	}
	type op struct {
		ptx string
		ref func(x, y, z float32) *big.Float
	}
	ops := map[string]op{
		"add": {"add.%s.f32 %f4, %f1, %f2;", func(x, y, z float32) *big.Float { return new(big.Float).SetPrec(300).Add(exact(x), exact(y)) }},
		"sub": {"sub.%s.f32 %f4, %f1, %f2;", func(x, y, z float32) *big.Float { return new(big.Float).SetPrec(300).Sub(exact(x), exact(y)) }},
		"mul": {"mul.%s.f32 %f4, %f1, %f2;", func(x, y, z float32) *big.Float { return new(big.Float).SetPrec(300).Mul(exact(x), exact(y)) }},
		"fma": {"fma.%s.f32 %f4, %f1, %f2, %f3;", func(x, y, z float32) *big.Float {
			p := new(big.Float).SetPrec(300).Mul(exact(x), exact(y))
			return p.Add(p, exact(z))
		}},
		"div": {"div.%s.f32 %f4, %f1, %f2;", func(x, y, z float32) *big.Float { return new(big.Float).SetPrec(300).Quo(exact(x), exact(y)) }},
		"sqrt": {"abs.f32 %f1, %f1; sqrt.%s.f32 %f4, %f1;", func(x, y, z float32) *big.Float {
			return new(big.Float).SetPrec(300).Sqrt(exact(float32(math.Abs(float64(x)))))
		}},
		"rcp": {"rcp.%s.f32 %f4, %f1;", func(x, y, z float32) *big.Float { return new(big.Float).SetPrec(300).Quo(exact(1), exact(x)) }},
	}
	for name, o := range ops {
		for mode := range bigModes {
			body := `mov.b64 {%r1, %r2}, %a; mov.b32 %f1, %r1; mov.b64 {%r1, %r2}, %b; mov.b32 %f2, %r1; mov.b64 {%r1, %r2}, %c; mov.b32 %f3, %r1;
	` + sprintf(o.ptx, mode) + `
	mov.b32 %r4, %f4; cvt.u64.u32 %d, %r4;`
			got := runPTX(t, "", body, a, b, c)
			for i := range got {
				x, y, z := u32f(a[i]), u32f(b[i]), u32f(c[i])
				want := ref32(o.ref(x, y, z), mode)
				if math.Abs(float64(want)) < 0x1p-126 {
					continue // the reference does not do subnormals
				}
				if u32f(got[i]) != want {
					t.Errorf("%s.%s(%v, %v, %v) = %v, want %v", name, mode, x, y, z, u32f(got[i]), want)
					break
				}
			}
		}
	}
}

func sprintf(f, s string) string {
	out := ""
	for i := 0; i < len(f); i++ {
		if f[i] == '%' && i+1 < len(f) && f[i+1] == 's' {
			out += s
			i++
			continue
		}
		out += string(f[i])
	}
	return out
}

// Subnormals: kept by default, flushed with .ftz.
func TestSubnormals(t *testing.T) {
	tiny := float32(math.Ldexp(1, -140))
	got := runPTX(t, "", `mov.b64 {%r1, %r2}, %a; mov.b32 %f1, %r1;
	mul.rn.f32 %f2, %f1, 0f3F000000;
	mul.rn.ftz.f32 %f3, %f1, 0f3F000000;
	mov.b32 %r3, %f2; mov.b32 %r4, %f3; mov.b64 %d, {%r3, %r4};`, []uint64{f32u(tiny)})
	lo, hi := u32f(got[0]&0xffffffff), u32f(got[0]>>32)
	if lo != tiny/2 || hi != 0 {
		t.Errorf("tiny/2: %v (want %v) and with .ftz %v (want 0)", lo, tiny/2, hi)
	}
}

// cvt to the narrow formats with every rounding mode, against big.Float.
func TestCvtNarrow(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	n := 256
	a := lanes(n, func(int) uint64 { return f32u(randF32(r)) })
	a[0], a[1] = f32u(1+0x1p-8), f32u(-(1 + 3*0x1p-9)) // exact ties for bf16
	formats := []struct {
		name string
		prec uint
		dec  func(uint64) float32
	}{
		{"bf16", 8, func(h uint64) float32 { return math.Float32frombits(uint32(h) << 16) }},
		{"f16", 11, func(h uint64) float32 { return FromF16(uint16(h)) }},
	}
	for _, f := range formats {
		for mode := range bigModes {
			body := "mov.b64 {%r1, %r2}, %a; mov.b32 %f1, %r1; cvt." + mode + "." + f.name + ".f32 %h1, %f1; cvt.u64.u16 %d, %h1;"
			got := runPTX(t, "", body, a)
			for i := range got {
				x := u32f(a[i])
				if f.name == "f16" && (math.Abs(float64(x)) > 65000 || math.Abs(float64(x)) < 0x1p-14) {
					continue // outside f16's normal range: checked by TestCvtSpecials
				}
				y := new(big.Float).SetPrec(f.prec).SetMode(bigModes[mode]).SetFloat64(float64(x))
				want, _ := y.Float32()
				if g := f.dec(got[i]); g != want {
					t.Errorf("cvt.%s.%s.f32(%v) = %v, want %v", mode, f.name, x, g, want)
					break
				}
			}
		}
	}
}

func TestCvtSpecials(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		body string
		in   float32
		want uint64
	}{
		{"cvt.rn.bf16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", nan, 0x7fff},
		{"cvt.rn.bf16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", 3.4e38, 0x7f80},                     // rounds to +inf
		{"cvt.rn.satfinite.bf16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", inf, 0x7f7f},              // max finite
		{"cvt.rz.bf16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", 3.4e38, 0x7f7f},                     // toward zero stays finite
		{"cvt.rn.relu.bf16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", -2.5, 0},                       // relu
		{"cvt.rn.f16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", 70000, 0x7c00},                       // f16 overflow
		{"cvt.rn.satfinite.f16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", -70000, 0xfbff},            // -max
		{"cvt.rn.f16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", float32(math.Ldexp(1, -24)), 0x0001}, // smallest subnormal
		{"cvt.rn.f16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", float32(math.Ldexp(1, -25)), 0x0000}, // tie to even: 0
		{"cvt.rn.f16.f32 %h1, %f1; cvt.u64.u16 %d, %h1;", float32(math.Ldexp(3, -26)), 0x0001}, // above the tie
		{"cvt.rzi.s32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", -2.7, uint64(uint32(0xfffffffe))},   // -2
		{"cvt.rmi.s32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", -2.2, uint64(uint32(0xfffffffd))},   // -3
		{"cvt.rpi.s32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", 2.2, 3},                             // 3
		{"cvt.rni.s32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", 2.5, 2},                             // ties to even
		{"cvt.rni.s32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", 3e10, 0x7fffffff},                   // saturates
		{"cvt.rni.u32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", -5, 0},                              // saturates at 0
		{"cvt.rni.s32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", nan, 0},                             // NaN: 0
		{"cvt.rzi.s64.f32 %d, %f1;", nan, 1 << 63},                                             // NaN to 64 bits
		{"cvt.rni.f32.f32 %f2, %f1; mov.b32 %r4, %f2; cvt.u64.u32 %d, %r4;", 2.5, f32u(2)},     // integral in float
		{"cvt.sat.f32.f32 %f2, %f1; mov.b32 %r4, %f2; cvt.u64.u32 %d, %r4;", 1.5, f32u(1)},     // .sat
		{"cvt.sat.f32.f32 %f2, %f1; mov.b32 %r4, %f2; cvt.u64.u32 %d, %r4;", nan, 0},           // .sat NaN → 0
		{"cvt.rna.tf32.f32 %r4, %f1; cvt.u64.u32 %d, %r4;", 1 + 0x1p-11, f32u(1 + 0x1p-10)},    // ties away
		{"cvt.rn.f32.u64 %f2, %rd1; mov.b32 %r4, %f2; cvt.u64.u32 %d, %r4;", 0, f32u(0x1p64)},  // see below
		{"cvt.rn.bf16x2.f32 %r4, %f1, %f3; cvt.u64.u32 %d, %r4;", 1, 0x3f80_4000},              // a in the upper half
		{"cvt.f32.bf16 %f2, %h2; mov.b32 %r4, %f2; cvt.u64.u32 %d, %r4;", 0, f32u(-2)},         // widen
	}
	for _, c := range cases {
		body := `mov.b64 {%r1, %r2}, %a; mov.b32 %f1, %r1; mov.b64 %rd1, -1; mov.f32 %f3, 0f40000000; mov.b16 %h2, 0xc000;
	` + c.body
		got := runPTX(t, "", body, []uint64{f32u(c.in)})
		if got[0] != c.want {
			t.Errorf("%s (%v): %#x, want %#x", c.body, c.in, got[0], c.want)
		}
	}
}

// f64 with the directed modes and the mixed conversions.
func TestFloat64Rounding(t *testing.T) {
	third := new(big.Float).SetPrec(300).Quo(big.NewFloat(1), big.NewFloat(3))
	for mode, bm := range bigModes {
		body := "mov.b64 %fd1, %a; mov.b64 %fd2, %b; div." + mode + ".f64 %fd3, %fd1, %fd2; mov.b64 %d, %fd3;"
		got := runPTX(t, "", body, []uint64{math.Float64bits(1)}, []uint64{math.Float64bits(3)})
		want, _ := new(big.Float).SetPrec(53).SetMode(bm).Set(third).Float64()
		if math.Float64frombits(got[0]) != want {
			t.Errorf("div.%s.f64 1/3 = %v, want %v", mode, math.Float64frombits(got[0]), want)
		}
		body = "mov.b64 %fd1, %a; cvt." + mode + ".f32.f64 %f1, %fd1; mov.b32 %r4, %f1; cvt.u64.u32 %d, %r4;"
		x := 1.0 / 3
		got = runPTX(t, "", body, []uint64{math.Float64bits(x)})
		w, _ := new(big.Float).SetPrec(24).SetMode(bm).SetFloat64(x).Float32()
		if u32f(got[0]) != w {
			t.Errorf("cvt.%s.f32.f64(1/3) = %v, want %v", mode, u32f(got[0]), w)
		}
	}
}

// The .approx instructions stay within the PTX ISA's bounds and are exact
// where the result is representable.
func TestApproxBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	n := 512
	ulp := func(x float32) float64 {
		return math.Abs(float64(math.Nextafter32(x, float32(math.Inf(1)))) - float64(x))
	}
	cases := []struct {
		op    string
		gen   func() float32
		exact func(x float64) float64
		ok    func(got float32, want float64) bool
	}{
		{"ex2.approx.ftz.f32", func() float32 { return float32(r.Float64()*200 - 100) }, math.Exp2,
			func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= 2.5*ulp(float32(w)) }},
		{"lg2.approx.f32", func() float32 { return float32(math.Exp2(r.Float64()*60 - 30)) }, math.Log2,
			func(g float32, w float64) bool {
				return math.Abs(float64(g)-w) <= math.Max(0x1p-22, 0x1p-22*math.Abs(w))*1.0001
			}},
		{"rcp.approx.f32", func() float32 { return randF32(r) }, func(x float64) float64 { return 1 / x },
			func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= 1.5*ulp(float32(w)) }},
		{"rsqrt.approx.f32", func() float32 { return float32(math.Abs(float64(randF32(r)))) }, func(x float64) float64 { return 1 / math.Sqrt(x) },
			func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= math.Exp2(-22.9)*w }},
		{"sqrt.approx.f32", func() float32 { return float32(math.Abs(float64(randF32(r)))) }, math.Sqrt,
			func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= 0x1p-23*w }},
		{"sin.approx.f32", func() float32 { return float32(r.Float64()*4*math.Pi - 2*math.Pi) }, math.Sin,
			func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= math.Exp2(-20.5) }},
		{"cos.approx.f32", func() float32 { return float32(r.Float64()*4*math.Pi - 2*math.Pi) }, math.Cos,
			func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= math.Exp2(-20.5) }},
		{"tanh.approx.f32", func() float32 { return float32(r.Float64()*20 - 10) }, math.Tanh,
			func(g float32, w float64) bool { return math.Abs(float64(g)-w) <= 0x1p-11*math.Abs(w) }},
	}
	for _, c := range cases {
		in := lanes(n, func(int) uint64 { return f32u(c.gen()) })
		body := "mov.b64 {%r1, %r2}, %a; mov.b32 %f1, %r1; " + c.op + " %f2, %f1; mov.b32 %r4, %f2; cvt.u64.u32 %d, %r4;"
		got := runPTX(t, "", body, in)
		moved := 0
		for i := range got {
			x := float64(u32f(in[i]))
			w := c.exact(x)
			g := u32f(got[i])
			if !c.ok(g, w) {
				t.Errorf("%s(%v) = %v, exact %v: outside the bound", c.op, x, g, w)
				break
			}
			if g != float32(w) {
				moved++
			}
		}
		if moved == 0 {
			t.Errorf("%s: no result differs from the correctly rounded one: the perturbation is off", c.op)
		}
	}
	// exact where representable
	got := runPTX(t, "", `mov.b64 {%r1, %r2}, %a; mov.b32 %f1, %r1; ex2.approx.ftz.f32 %f2, %f1; mov.b32 %r4, %f2; cvt.u64.u32 %d, %r4;`,
		[]uint64{f32u(0), f32u(3), f32u(-2)})
	for i, w := range []float32{1, 8, 0.25} {
		if u32f(got[i]) != w {
			t.Errorf("ex2.approx of an integer: %v, want %v", u32f(got[i]), w)
		}
	}
}

// The half-precision arithmetic rounds once to the format.
func TestHalfArithmetic(t *testing.T) {
	bf := func(x float32) uint64 { return uint64(ToBF16(x)) }
	a := []uint64{bf(1.5)<<16 | bf(3), bf(-2)<<16 | bf(0.1)}
	b := []uint64{bf(2)<<16 | bf(0.5), bf(3)<<16 | bf(7)}
	c := []uint64{bf(0.25)<<16 | bf(1), bf(1)<<16 | bf(-0.7)}
	body := `cvt.u32.u64 %r1, %a; cvt.u32.u64 %r2, %b; cvt.u32.u64 %r3, %c;
	fma.rn.bf16x2 %r4, %r1, %r2, %r3;
	cvt.u64.u32 %d, %r4;`
	got := runPTX(t, "", body, a, b, c)
	for i := range got {
		for h := 0; h < 2; h++ {
			x, y, z := FromBF16(uint16(a[i]>>(16*h))), FromBF16(uint16(b[i]>>(16*h))), FromBF16(uint16(c[i]>>(16*h)))
			want := ToBF16(float32(float64(x)*float64(y) + float64(z)))
			if g := uint16(got[i] >> (16 * h)); g != want {
				t.Errorf("fma.rn.bf16x2 half %d of lane %d: %v, want %v", h, i, FromBF16(g), FromBF16(want))
			}
		}
	}
}
