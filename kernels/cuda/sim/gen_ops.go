//go:build ignore

// gen_ops writes ops_gen.go: one function per (operation, type) of the
// register-to-register instructions the kernels run most, each a loop over the
// lanes with the operation inline (a call through a function value per lane
// would cost more than the operation). go generate runs it.
package main

import (
	"bytes"
	"go/format"
	"log"
	"os"
	"text/template"
)

// op is one generated function: Kind says its operands (a d = f(a) unary, b
// binary, t ternary, p a comparison writing a predicate, s selp), Expr the value
// in terms of a, b, c (uint64 register contents).
type op struct {
	Name, Kind, Expr string
}

var ops = []op{
	// integer
	{"Add16", "b", "uint64(uint16(a + b))"},
	{"AddU32", "b", "uint64(uint32(a + b))"},
	{"AddU64", "b", "a + b"},
	{"Sub16", "b", "uint64(uint16(a - b))"},
	{"SubU32", "b", "uint64(uint32(a - b))"},
	{"SubU64", "b", "a - b"},
	{"MulLo16", "b", "uint64(uint16(a * b))"},
	{"MulLoU32", "b", "uint64(uint32(a * b))"},
	{"MulLoU64", "b", "a * b"},
	{"MulHiU32", "b", "uint64(uint32(a)) * uint64(uint32(b)) >> 32"},
	{"MulHiS32", "b", "uint64(uint32(int64(int32(a)) * int64(int32(b)) >> 32))"},
	{"MulHiU64", "b", "mulHiU64(a, b)"},
	{"MulHiS64", "b", "mulHiS64(a, b)"},
	{"MulWideU16", "b", "uint64(uint32(uint16(a)) * uint32(uint16(b)))"},
	{"MulWideS16", "b", "uint64(uint32(int32(int16(a)) * int32(int16(b))))"},
	{"MulWideU32", "b", "uint64(uint32(a)) * uint64(uint32(b))"},
	{"MulWideS32", "b", "uint64(int64(int32(a)) * int64(int32(b)))"},
	{"MadLo16", "t", "uint64(uint16(a*b + c))"},
	{"MadLoU32", "t", "uint64(uint32(a*b + c))"},
	{"MadLoU64", "t", "a*b + c"},
	{"MadHiU32", "t", "uint64(uint32(uint64(uint32(a))*uint64(uint32(b))>>32 + c))"},
	{"MadHiS32", "t", "uint64(uint32(uint64(int64(int32(a))*int64(int32(b))>>32) + c))"},
	{"MadWideU32", "t", "uint64(uint32(a))*uint64(uint32(b)) + c"},
	{"MadWideS32", "t", "uint64(int64(int32(a))*int64(int32(b))) + c"},
	{"MinS16", "b", "uint64(uint16(min(int16(a), int16(b))))"},
	{"MinU16", "b", "uint64(min(uint16(a), uint16(b)))"},
	{"MinS32", "b", "uint64(uint32(min(int32(a), int32(b))))"},
	{"MinU32", "b", "uint64(min(uint32(a), uint32(b)))"},
	{"MinS64", "b", "uint64(min(int64(a), int64(b)))"},
	{"MinU64", "b", "min(a, b)"},
	{"MaxS16", "b", "uint64(uint16(max(int16(a), int16(b))))"},
	{"MaxU16", "b", "uint64(max(uint16(a), uint16(b)))"},
	{"MaxS32", "b", "uint64(uint32(max(int32(a), int32(b))))"},
	{"MaxU32", "b", "uint64(max(uint32(a), uint32(b)))"},
	{"MaxS64", "b", "uint64(max(int64(a), int64(b)))"},
	{"MaxU64", "b", "max(a, b)"},
	{"AbsS16", "a", "uint64(uint16(absI64(int64(int16(a)))))"},
	{"AbsS32", "a", "uint64(uint32(absI64(int64(int32(a)))))"},
	{"AbsS64", "a", "uint64(absI64(int64(a)))"},
	{"Neg16", "a", "uint64(uint16(-a))"},
	{"NegS32", "a", "uint64(uint32(-a))"},
	{"NegS64", "a", "-a"},
	{"And16", "b", "uint64(uint16(a & b))"},
	{"And32", "b", "uint64(uint32(a & b))"},
	{"And64", "b", "a & b"},
	{"Or16", "b", "uint64(uint16(a | b))"},
	{"Or32", "b", "uint64(uint32(a | b))"},
	{"Or64", "b", "a | b"},
	{"Xor16", "b", "uint64(uint16(a ^ b))"},
	{"Xor32", "b", "uint64(uint32(a ^ b))"},
	{"Xor64", "b", "a ^ b"},
	{"Not16", "a", "uint64(^uint16(a))"},
	{"Not32", "a", "uint64(^uint32(a))"},
	{"Not64", "a", "^a"},
	{"Cnot16", "a", "b2u(uint16(a) == 0)"},
	{"Cnot32", "a", "b2u(uint32(a) == 0)"},
	{"Cnot64", "a", "b2u(a == 0)"},
	{"Shl16", "b", "uint64(uint16(shl(a, b, 16)))"},
	{"Shl32", "b", "uint64(uint32(shl(a, b, 32)))"},
	{"Shl64", "b", "shl(a, b, 64)"},
	{"ShrU16", "b", "shrU(uint64(uint16(a)), b, 16)"},
	{"ShrU32", "b", "shrU(uint64(uint32(a)), b, 32)"},
	{"ShrU64", "b", "shrU(a, b, 64)"},
	{"ShrS16", "b", "uint64(uint16(shrS(int64(int16(a)), b, 16)))"},
	{"ShrS32", "b", "uint64(uint32(shrS(int64(int32(a)), b, 32)))"},
	{"ShrS64", "b", "uint64(shrS(int64(a), b, 64))"},
	{"Popc32", "a", "uint64(bits.OnesCount32(uint32(a)))"},
	{"Popc64", "a", "uint64(bits.OnesCount64(a))"},
	{"Clz32", "a", "uint64(bits.LeadingZeros32(uint32(a)))"},
	{"Clz64", "a", "uint64(bits.LeadingZeros64(a))"},
	{"Brev32", "a", "uint64(bits.Reverse32(uint32(a)))"},
	{"Brev64", "a", "bits.Reverse64(a)"},
	{"Prmt", "t", "uint64(prmt(uint32(a), uint32(b), uint32(c)))"},
	{"Mov", "a", "a"},
	{"Zext8", "a", "uint64(uint8(a))"},
	{"Zext16", "a", "uint64(uint16(a))"},
	{"Zext32", "a", "uint64(uint32(a))"},
	{"Sext8to16", "a", "uint64(uint16(int16(int8(a))))"},
	{"Sext8to32", "a", "uint64(uint32(int32(int8(a))))"},
	{"Sext8to64", "a", "uint64(int64(int8(a)))"},
	{"Sext16to32", "a", "uint64(uint32(int32(int16(a))))"},
	{"Sext16to64", "a", "uint64(int64(int16(a)))"},
	{"Sext32to64", "a", "uint64(int64(int32(a)))"},
	// float32 (round to nearest even, subnormals kept: Go's own arithmetic)
	{"AddF32", "b", "b32(f32(a) + f32(b))"},
	{"SubF32", "b", "b32(f32(a) - f32(b))"},
	{"MulF32", "b", "b32(f32(a) * f32(b))"},
	{"FmaF32", "t", "b32(fmaRN32(f32(a), f32(b), f32(c)))"},
	{"DivF32", "b", "b32(f32(a) / f32(b))"},
	{"RcpF32", "a", "b32(1 / f32(a))"},
	{"SqrtF32", "a", "b32(float32(math.Sqrt(float64(f32(a)))))"},
	{"NegF32", "a", "uint64(uint32(a) ^ 0x80000000)"},
	{"AbsF32", "a", "uint64(uint32(a) &^ 0x80000000)"},
	{"MinF32", "b", "b32(fminF32(f32(a), f32(b)))"},
	{"MaxF32", "b", "b32(fmaxF32(f32(a), f32(b)))"},
	{"CvtF32S32", "a", "b32(float32(int32(a)))"},
	{"CvtF32U32", "a", "b32(float32(uint32(a)))"},
	{"CvtF32S64", "a", "b32(float32(int64(a)))"},
	{"CvtF32U64", "a", "b32(float32(a))"},
	{"CvtF64F32", "a", "b64(float64(f32(a)))"},
	{"CvtF32F64", "a", "b32(float32(f64(a)))"},
	{"CvtF64S32", "a", "b64(float64(int32(a)))"},
	{"CvtF64U32", "a", "b64(float64(uint32(a)))"},
	{"CvtF64S64", "a", "b64(float64(int64(a)))"},
	{"CvtF64U64", "a", "b64(float64(a))"},
	{"CvtF32BF16", "a", "b32(bf16ToF32(uint16(a)))"},
	{"CvtF32F16", "a", "b32(f16ToF32(uint16(a)))"},
	{"CvtBF16F32", "a", "uint64(bf16FromF32(f32(a)))"},
	// float64
	{"AddF64", "b", "b64(f64(a) + f64(b))"},
	{"SubF64", "b", "b64(f64(a) - f64(b))"},
	{"MulF64", "b", "b64(f64(a) * f64(b))"},
	{"FmaF64", "t", "b64(math.FMA(f64(a), f64(b), f64(c)))"},
	{"DivF64", "b", "b64(f64(a) / f64(b))"},
	{"RcpF64", "a", "b64(1 / f64(a))"},
	{"SqrtF64", "a", "b64(math.Sqrt(f64(a)))"},
	{"NegF64", "a", "a ^ 1<<63"},
	{"AbsF64", "a", "a &^ (1 << 63)"},
	{"MinF64", "b", "b64(fminF64(f64(a), f64(b)))"},
	{"MaxF64", "b", "b64(fmaxF64(f64(a), f64(b)))"},
	// comparisons (predicate results)
	{"EqI", "p", "a == b"},
	{"NeI", "p", "a != b"},
	{"Eq16", "p", "uint16(a) == uint16(b)"},
	{"Ne16", "p", "uint16(a) != uint16(b)"},
	{"Eq32", "p", "uint32(a) == uint32(b)"},
	{"Ne32", "p", "uint32(a) != uint32(b)"},
	{"LtS32", "p", "int32(a) < int32(b)"},
	{"LeS32", "p", "int32(a) <= int32(b)"},
	{"GtS32", "p", "int32(a) > int32(b)"},
	{"GeS32", "p", "int32(a) >= int32(b)"},
	{"LtU32", "p", "uint32(a) < uint32(b)"},
	{"LeU32", "p", "uint32(a) <= uint32(b)"},
	{"GtU32", "p", "uint32(a) > uint32(b)"},
	{"GeU32", "p", "uint32(a) >= uint32(b)"},
	{"LtS64", "p", "int64(a) < int64(b)"},
	{"LeS64", "p", "int64(a) <= int64(b)"},
	{"GtS64", "p", "int64(a) > int64(b)"},
	{"GeS64", "p", "int64(a) >= int64(b)"},
	{"LtU64", "p", "a < b"},
	{"LeU64", "p", "a <= b"},
	{"GtU64", "p", "a > b"},
	{"GeU64", "p", "a >= b"},
	{"LtS16", "p", "int16(a) < int16(b)"},
	{"LeS16", "p", "int16(a) <= int16(b)"},
	{"GtS16", "p", "int16(a) > int16(b)"},
	{"GeS16", "p", "int16(a) >= int16(b)"},
	{"LtU16", "p", "uint16(a) < uint16(b)"},
	{"LeU16", "p", "uint16(a) <= uint16(b)"},
	{"GtU16", "p", "uint16(a) > uint16(b)"},
	{"GeU16", "p", "uint16(a) >= uint16(b)"},
	{"EqF32", "p", "f32(a) == f32(b)"},
	{"NeF32", "p", "f32(a) != f32(b) && !nan32(a) && !nan32(b)"},
	{"LtF32", "p", "f32(a) < f32(b)"},
	{"LeF32", "p", "f32(a) <= f32(b)"},
	{"GtF32", "p", "f32(a) > f32(b)"},
	{"GeF32", "p", "f32(a) >= f32(b)"},
	{"EquF32", "p", "f32(a) == f32(b) || nan32(a) || nan32(b)"},
	{"NeuF32", "p", "f32(a) != f32(b)"},
	{"LtuF32", "p", "!(f32(a) >= f32(b))"},
	{"LeuF32", "p", "!(f32(a) > f32(b))"},
	{"GtuF32", "p", "!(f32(a) <= f32(b))"},
	{"GeuF32", "p", "!(f32(a) < f32(b))"},
	{"NumF32", "p", "!nan32(a) && !nan32(b)"},
	{"NanF32", "p", "nan32(a) || nan32(b)"},
	{"EqF64", "p", "f64(a) == f64(b)"},
	{"NeF64", "p", "f64(a) != f64(b) && !nan64(a) && !nan64(b)"},
	{"LtF64", "p", "f64(a) < f64(b)"},
	{"LeF64", "p", "f64(a) <= f64(b)"},
	{"GtF64", "p", "f64(a) > f64(b)"},
	{"GeF64", "p", "f64(a) >= f64(b)"},
	{"EquF64", "p", "f64(a) == f64(b) || nan64(a) || nan64(b)"},
	{"NeuF64", "p", "f64(a) != f64(b)"},
	{"LtuF64", "p", "!(f64(a) >= f64(b))"},
	{"LeuF64", "p", "!(f64(a) > f64(b))"},
	{"GtuF64", "p", "!(f64(a) <= f64(b))"},
	{"GeuF64", "p", "!(f64(a) < f64(b))"},
	{"NumF64", "p", "!nan64(a) && !nan64(b)"},
	{"NanF64", "p", "nan64(a) || nan64(b)"},
	{"Selp", "s", ""},
}

const tmpl = `// Code generated by gen_ops.go (go generate); DO NOT EDIT.

package sim

import (
	"math"
	"math/bits"
)

var _ = math.Sqrt
var _ = bits.OnesCount32

{{range .}}{{if eq .Kind "a"}}
func x{{.Name}}(w *warp, in *inst, m uint32) {
	d, ra := &w.r[in.d], &w.r[in.a]
	if m == fullMask {
		for l := range d {
			a := ra[l]
			d[l] = {{.Expr}}
		}
		return
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		a := ra[l]
		d[l] = {{.Expr}}
	}
}
{{else if eq .Kind "b"}}
func x{{.Name}}(w *warp, in *inst, m uint32) {
	d, ra, rb := &w.r[in.d], &w.r[in.a], &w.r[in.b]
	if m == fullMask {
		for l := range d {
			a, b := ra[l], rb[l]
			d[l] = {{.Expr}}
		}
		return
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		a, b := ra[l], rb[l]
		d[l] = {{.Expr}}
	}
}
{{else if eq .Kind "t"}}
func x{{.Name}}(w *warp, in *inst, m uint32) {
	d, ra, rb, rc := &w.r[in.d], &w.r[in.a], &w.r[in.b], &w.r[in.c]
	if m == fullMask {
		for l := range d {
			a, b, c := ra[l], rb[l], rc[l]
			d[l] = {{.Expr}}
		}
		return
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		a, b, c := ra[l], rb[l], rc[l]
		d[l] = {{.Expr}}
	}
}
{{else if eq .Kind "p"}}
func x{{.Name}}(w *warp, in *inst, m uint32) {
	ra, rb := &w.r[in.a], &w.r[in.b]
	var res uint32
	for l := range ra {
		a, b := ra[l], rb[l]
		if {{.Expr}} {
			res |= 1 << l
		}
	}
	w.setPred(in, m, res)
}
{{else if eq .Kind "s"}}
func x{{.Name}}(w *warp, in *inst, m uint32) {
	d, ra, rb := &w.r[in.d], &w.r[in.a], &w.r[in.b]
	p := w.p[in.c]
	if in.imm2 != 0 {
		p = ^p
	}
	for ; m != 0; m &= m - 1 {
		l := bits.TrailingZeros32(m) & 31
		if p>>l&1 != 0 {
			d[l] = ra[l]
		} else {
			d[l] = rb[l]
		}
	}
}
{{end}}{{end}}`

func main() {
	var buf bytes.Buffer
	if err := template.Must(template.New("ops").Parse(tmpl)).Execute(&buf, ops); err != nil {
		log.Fatal(err)
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		log.Fatalf("%v\n%s", err, buf.Bytes())
	}
	if err := os.WriteFile("ops_gen.go", src, 0o644); err != nil {
		log.Fatal(err)
	}
}
