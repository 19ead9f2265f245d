package sim

import (
	"strings"
)

// Decoders of the floating-point instructions beyond add and sub: fma (and
// mad on floats), copysign, testp, and the approximate and rounded functions.

func decFma(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.typedOps(s, m, in, 3)
	if err != nil {
		return err
	}
	switch {
	case t.name == "f32":
		explicit := fmods(m, in, rn)
		if !explicit && s.Parts[0] == "fma" {
			return d.errf("fma.f32 needs a rounding modifier (.rn, .rz, .rm, .rp)")
		}
		if in.mode == rn && !in.ftz && !in.sat {
			in.fn = xFmaF32
		} else {
			in.fn = f32mode("fma")
		}
	case t.name == "f64":
		fmods(m, in, rn)
		if in.mode == rn {
			in.fn = xFmaF64
		} else {
			in.fn = f64mode("fma")
		}
	case isHalf(t):
		return d.halfOp("fma", t, m, in)
	default:
		return d.errf("type .%s not allowed", t.name)
	}
	return nil
}

func decCopysign(d *decoder, s *Instr, m *mods, in *inst) error {
	t, err := d.typedOps(s, m, in, 2)
	if err != nil {
		return err
	}
	switch t.name {
	case "f32":
		in.fn = lanes2(func(a, b uint64) uint64 { return b&0x7fffffff | a&0x80000000 })
	case "f64":
		in.fn = lanes2(func(a, b uint64) uint64 { return b&^(1<<63) | a&(1<<63) })
	default:
		return d.errf("copysign takes .f32 or .f64")
	}
	return nil
}

func decTestp(d *decoder, s *Instr, m *mods, in *inst) error {
	class := m.one("finite", "infinite", "number", "notanumber", "normal", "subnormal")
	if class == "" {
		return d.errf("testp needs a class (.finite, .infinite, .number, .notanumber, .normal, .subnormal)")
	}
	t, err := d.oneType(m)
	if err != nil {
		return err
	}
	if t.name != "f32" && t.name != "f64" {
		return d.errf("testp takes .f32 or .f64")
	}
	if err := d.nargs(s, 2); err != nil {
		return err
	}
	if in.d, err = d.pred(s.Args[0]); err != nil {
		return err
	}
	if in.a, err = d.src(s.Args[1], t); err != nil {
		return err
	}
	in.b, in.c = in.a, -1
	f := fmtOf(t)
	is64 := t.name == "f64"
	in.fn = lanesPred(func(a, _ uint64) bool {
		x := float64(f32(a))
		if is64 {
			x = f64(a)
		}
		return testp(class, x, f)
	})
	return nil
}

func decApprox(d *decoder, s *Instr, m *mods, in *inst) error {
	fn := s.Parts[0]
	if !m.has("approx") {
		return d.errf("%s needs .approx", fn)
	}
	in.ftz = m.has("ftz")
	t, err := d.typedOps(s, m, in, 1)
	if err != nil {
		return err
	}
	switch {
	case t.name == "f32":
		in.b = in.a
		in.fn = approxLanes(fn)
	case isHalf(t) && (fn == "ex2" || fn == "tanh"):
		if fn == "ex2" && strings.HasPrefix(t.name, "bf16") && !in.ftz {
			return d.errf("ex2.approx.%s needs .ftz", t.name)
		}
		in.fn = approxHalfLanes(fn, fmtOf(t), t.class == tcPacked)
	default:
		return d.errf("%s.approx.%s is not simulated", fn, t.name)
	}
	return nil
}

func decRcpSqrt(d *decoder, s *Instr, m *mods, in *inst) error {
	fn := s.Parts[0]
	approx := m.has("approx")
	explicit := fmods(m, in, rn)
	t, err := d.typedOps(s, m, in, 1)
	if err != nil {
		return err
	}
	in.b = in.a
	switch {
	case approx && t.name == "f32":
		if explicit {
			return d.errf("%s.approx takes no rounding modifier", fn)
		}
		in.fn = approxLanes(fn)
	case approx:
		return d.errf("%s.approx.%s is not simulated", fn, t.name)
	case !explicit:
		return d.errf("%s.%s needs .approx or a rounding modifier", fn, t.name)
	case t.name == "f32" && in.mode == rn && !in.ftz:
		in.fn = xRcpF32
		if fn == "sqrt" {
			in.fn = xSqrtF32
		}
	case t.name == "f32":
		in.fn = f32mode(fn)
	case t.name == "f64" && in.mode == rn:
		in.fn = xRcpF64
		if fn == "sqrt" {
			in.fn = xSqrtF64
		}
	case t.name == "f64":
		in.fn = f64mode(fn)
	default:
		return d.errf("type .%s not allowed", t.name)
	}
	return nil
}
