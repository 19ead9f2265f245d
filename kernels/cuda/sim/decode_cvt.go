package sim

import (
	"fmt"
	"math/bits"
	"strings"
)

// Decoders of mov and cvt.

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
