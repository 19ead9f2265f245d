package sim

// typeSizes are the PTX fundamental types the simulator knows, by name, with
// their size in bytes (.pred: 0, it lives in a predicate register).
var typeSizes = map[string]int{
	"pred": 0,
	"b8":   1, "b16": 2, "b32": 4, "b64": 8, "b128": 16,
	"u8": 1, "u16": 2, "u32": 4, "u64": 8,
	"s8": 1, "s16": 2, "s32": 4, "s64": 8,
	"f16": 2, "f16x2": 4, "bf16": 2, "bf16x2": 4, "tf32": 4,
	"f32": 4, "f64": 8,
}

// tclass is a type's kind.
type tclass uint8

const (
	tcBits   tclass = iota // .bN
	tcUint                 // .uN
	tcSint                 // .sN
	tcFloat                // .f16 .bf16 .f32 .f64 .tf32
	tcPacked               // .f16x2 .bf16x2
	tcPred
)

// ptype describes a PTX type.
type ptype struct {
	name  string
	size  int // bytes
	class tclass
}

func (t ptype) bits() uint { return uint(8 * t.size) }

// signed reports whether values of t are sign-extended when widened.
func (t ptype) signed() bool { return t.class == tcSint }

func (t ptype) isFloat() bool { return t.class == tcFloat }

func typeOf(name string) (ptype, bool) {
	n, ok := typeSizes[name]
	if !ok {
		return ptype{}, false
	}
	t := ptype{name: name, size: n}
	switch {
	case name == "pred":
		t.class = tcPred
	case name == "f16x2" || name == "bf16x2":
		t.class = tcPacked
	case name[0] == 'b' && name != "bf16":
		t.class = tcBits
	case name[0] == 'u':
		t.class = tcUint
	case name[0] == 's':
		t.class = tcSint
	default:
		t.class = tcFloat
	}
	return t, true
}

// mask returns the low n bits set (n ≤ 64).
func mask(n uint) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// sext sign-extends the low n bits of x.
func sext(x uint64, n uint) uint64 {
	if n >= 64 {
		return x
	}
	s := 64 - n
	return uint64(int64(x<<s) >> s)
}
