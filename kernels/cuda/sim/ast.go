package sim

// The parsed form of a PTX module: directives, declarations and instruction
// statements with their source lines, before any meaning is given to them
// (decode.go does that).

// Module is one parsed PTX file.
type Module struct {
	Name        string // for messages (e.g. "attention.ptx")
	Version     string // .version, e.g. "7.8"
	Target      string // .target, e.g. "sm_80"
	AddressSize int    // .address_size (64)
	Vars        []*VarDecl
	Funcs       []*Func
}

// VarDecl is a .reg, .global, .const, .shared, .local or .param declaration.
type VarDecl struct {
	Line   int
	Space  string // "reg", "global", "const", "shared", "local", "param"
	Extern bool
	Align  int    // bytes; 0 when not given
	Vec    int    // .v2/.v4 element count, 0 when scalar
	Type   string // "b8", "f32", "pred", ...
	Name   string
	Count  int      // registers declared as %r<Count>; array elements (product of dims); 0 scalar
	Range  bool     // the %r<N> form: Name0 .. Name(N-1)
	Array  bool     // declared with [ ]
	Init   []uint64 // initializer values (scalars of Type), nil when none
	InitFP bool     // the initializer values are floating-point bit patterns of Type
}

// Func is a .entry (kernel) or .func.
type Func struct {
	Line    int
	Name    string
	Entry   bool
	Params  []*VarDecl
	Returns []*VarDecl
	Body    []Stmt // nil for a declaration without a body
	MaxNTID []int  // .maxntid / .reqntid when given
	ReqNTID bool
}

// stmtKind says what a statement is.
type stmtKind uint8

const (
	sInstr stmtKind = iota
	sLabel
	sDecl
	sOpen  // {
	sClose // }
)

// Stmt is one statement of a function body.
type Stmt struct {
	Kind  stmtKind
	Line  int
	Label string
	Decl  *VarDecl
	Instr *Instr
}

// Instr is an instruction statement: [@[!]pred] opcode.mod... operands;
type Instr struct {
	Line     int
	Guard    string // predicate register name, "" when none
	GuardNeg bool
	Op       string   // the opcode as written, e.g. "ld.global.nc.v4.f32"
	Parts    []string // Op split at '.': ["ld", "global", "nc", "v4", "f32"]
	Args     []Operand
}

// opndKind is the kind of an operand.
type opndKind uint8

const (
	oName  opndKind = iota // a register, special register, symbol or label name
	oInt                   // an integer constant (Int)
	oFloat                 // a floating constant: 0f (Bits of an f32), 0d or decimal (Bits of an f64)
	oAddr                  // [Base+Int]: Base is nil for an absolute address
	oVec                   // {a, b, ...}
	oPair                  // a|b (a destination and its predicate)
	oSink                  // _ (a discarded destination)
)

// Operand is one instruction operand.
type Operand struct {
	Kind  opndKind
	Name  string
	Not   bool // !%p
	Neg   bool // -%r (negated operand, where PTX allows it)
	Int   int64
	Bits  uint64
	F32   bool // oFloat written as 0f (single precision bits)
	Base  *Operand
	Elems []Operand
}
