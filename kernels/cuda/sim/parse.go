package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads the PTX text of one module (what nvcc -ptx writes). name is used
// in messages. It checks the syntax only; decoding (Load) gives instructions
// their meaning and rejects what the simulator does not implement.
func Parse(name string, src []byte) (*Module, error) {
	toks, err := lex(string(src))
	if err != nil {
		return nil, fmt.Errorf("sim: %s: %w", name, err)
	}
	p := &parser{toks: toks, name: name}
	m, err := p.module()
	if err != nil {
		return nil, err
	}
	m.Name = name
	return m, nil
}

type parser struct {
	toks []token
	pos  int
	name string
}

// syntaxError is a parse failure at a line.
type syntaxError struct {
	file string
	line int
	msg  string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("sim: %s:%d: %s", e.file, e.line, e.msg) }

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) peekAt(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &syntaxError{file: p.name, line: line, msg: fmt.Sprintf(format, args...)}
}

func (p *parser) is(kind tokKind, text string) bool {
	t := p.peek()
	return t.kind == kind && t.text == text
}

func (p *parser) accept(kind tokKind, text string) bool {
	if p.is(kind, text) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expect(kind tokKind, text string) error {
	t := p.next()
	if t.kind != kind || t.text != text {
		return p.errf(t.line, "expected %q, found %s", text, t)
	}
	return nil
}

func (p *parser) ident() (token, error) {
	t := p.next()
	if t.kind != tIdent {
		return t, p.errf(t.line, "expected a name, found %s", t)
	}
	return t, nil
}

func (p *parser) integer() (int64, int, error) {
	neg := p.accept(tPunct, "-")
	t := p.next()
	if t.kind != tNumber {
		return 0, t.line, p.errf(t.line, "expected a number, found %s", t)
	}
	o, err := parseNumber(t.text)
	if err != nil || o.Kind != oInt {
		return 0, t.line, p.errf(t.line, "expected an integer, found %s", t)
	}
	if neg {
		o.Int = -o.Int
	}
	return o.Int, t.line, nil
}

// skipLine drops the rest of the current line (.file and .loc take no semicolon).
func (p *parser) skipLine(line int) {
	for p.peek().kind != tEOF && p.peek().line == line {
		p.next()
	}
}

// skipBraces drops a balanced { ... } (a .section of debug information).
func (p *parser) skipBraces() error {
	start := p.peek().line
	if err := p.expect(tPunct, "{"); err != nil {
		return err
	}
	for depth := 1; depth > 0; {
		t := p.next()
		switch {
		case t.kind == tEOF:
			return p.errf(start, "unterminated { }")
		case t.kind == tPunct && t.text == "{":
			depth++
		case t.kind == tPunct && t.text == "}":
			depth--
		}
	}
	return nil
}

func (p *parser) module() (*Module, error) {
	m := &Module{}
	for {
		t := p.peek()
		if t.kind == tEOF {
			return m, nil
		}
		if t.kind != tIdent || !strings.HasPrefix(t.text, ".") {
			return nil, p.errf(t.line, "expected a directive at module level, found %s", t)
		}
		switch t.text {
		case ".version":
			p.next()
			v := p.next()
			if v.kind != tNumber {
				return nil, p.errf(v.line, ".version: expected a number, found %s", v)
			}
			m.Version = v.text
		case ".target":
			p.next()
			v, err := p.ident()
			if err != nil {
				return nil, err
			}
			m.Target = v.text
			for p.accept(tPunct, ",") {
				if _, err := p.ident(); err != nil {
					return nil, err
				}
			}
		case ".address_size":
			p.next()
			n, line, err := p.integer()
			if err != nil {
				return nil, err
			}
			if n != 64 && n != 32 {
				return nil, p.errf(line, ".address_size %d", n)
			}
			m.AddressSize = int(n)
		case ".file", ".loc":
			p.next()
			p.skipLine(t.line)
		case ".section":
			p.next()
			if _, err := p.ident(); err != nil {
				return nil, err
			}
			if err := p.skipBraces(); err != nil {
				return nil, err
			}
		case ".pragma":
			if err := p.pragma(); err != nil {
				return nil, err
			}
		default:
			if err := p.moduleDecl(m); err != nil {
				return nil, err
			}
		}
	}
}

func (p *parser) pragma() error {
	p.next()
	for !p.accept(tPunct, ";") {
		if t := p.next(); t.kind == tEOF {
			return p.errf(t.line, ".pragma without ;")
		}
	}
	return nil
}

// moduleDecl parses a linkage-prefixed kernel, function or variable.
func (p *parser) moduleDecl(m *Module) error {
	extern := false
	for {
		t := p.peek()
		switch t.text {
		case ".visible", ".weak", ".common":
			p.next()
			continue
		case ".extern":
			extern = true
			p.next()
			continue
		case ".entry", ".func":
			f, err := p.function()
			if err != nil {
				return err
			}
			m.Funcs = append(m.Funcs, f)
			return nil
		case ".global", ".const", ".shared", ".local":
			ds, err := p.varDecl()
			if err != nil {
				return err
			}
			for _, d := range ds {
				d.Extern = extern
			}
			m.Vars = append(m.Vars, ds...)
			return nil
		}
		return p.errf(t.line, "unknown directive %s", t)
	}
}

// function parses .entry name (params) perf-directives { body } or a .func.
func (p *parser) function() (*Func, error) {
	kw := p.next()
	f := &Func{Line: kw.line, Entry: kw.text == ".entry"}
	if !f.Entry && p.is(tPunct, "(") {
		rets, err := p.paramList()
		if err != nil {
			return nil, err
		}
		f.Returns = rets
	}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	f.Name = name.text
	if p.is(tPunct, "(") {
		if f.Params, err = p.paramList(); err != nil {
			return nil, err
		}
	}
	for {
		t := p.peek()
		switch t.text {
		case ".maxntid", ".reqntid":
			p.next()
			f.ReqNTID = t.text == ".reqntid"
			f.MaxNTID = nil
			for {
				n, _, err := p.integer()
				if err != nil {
					return nil, err
				}
				f.MaxNTID = append(f.MaxNTID, int(n))
				if !p.accept(tPunct, ",") {
					break
				}
			}
			continue
		case ".minnctapersm", ".maxnreg", ".maxnctapersm":
			p.next()
			if _, _, err := p.integer(); err != nil {
				return nil, err
			}
			continue
		case ".noreturn":
			p.next()
			continue
		case ".pragma":
			if err := p.pragma(); err != nil {
				return nil, err
			}
			continue
		}
		break
	}
	if p.accept(tPunct, ";") {
		return f, nil
	}
	body, err := p.body()
	if err != nil {
		return nil, err
	}
	f.Body = body
	return f, nil
}

func (p *parser) paramList() ([]*VarDecl, error) {
	if err := p.expect(tPunct, "("); err != nil {
		return nil, err
	}
	var ps []*VarDecl
	if p.accept(tPunct, ")") {
		return ps, nil
	}
	for {
		ds, err := p.declNames(false)
		if err != nil {
			return nil, err
		}
		ps = append(ps, ds...)
		if p.accept(tPunct, ")") {
			return ps, nil
		}
		if err := p.expect(tPunct, ","); err != nil {
			return nil, err
		}
	}
}

// varDecl parses a declaration ending in ';'.
func (p *parser) varDecl() ([]*VarDecl, error) {
	ds, err := p.declNames(true)
	if err != nil {
		return nil, err
	}
	return ds, p.expect(tPunct, ";")
}

var spaces = map[string]bool{".reg": true, ".global": true, ".const": true, ".shared": true, ".local": true, ".param": true}

// declNames parses space [.align n] [.ptr ...] [.vN] .type name[<n>|[dims]] [= init] (, name...)*.
// multi allows several names (not in parameter lists, where ',' separates params).
func (p *parser) declNames(multi bool) ([]*VarDecl, error) {
	sp := p.next()
	if sp.kind != tIdent || !spaces[sp.text] {
		return nil, p.errf(sp.line, "expected a state space (.reg, .param, ...), found %s", sp)
	}
	base := VarDecl{Line: sp.line, Space: sp.text[1:]}
	for {
		t := p.peek()
		if t.kind != tIdent || !strings.HasPrefix(t.text, ".") {
			break
		}
		p.next()
		switch {
		case t.text == ".align":
			n, line, err := p.integer()
			if err != nil {
				return nil, err
			}
			if n <= 0 || n&(n-1) != 0 || n > 1<<16 {
				return nil, p.errf(line, ".align %d is not a power of two", n)
			}
			base.Align = int(n)
		case t.text == ".v2" || t.text == ".v4" || t.text == ".v8":
			base.Vec, _ = strconv.Atoi(t.text[2:])
		case t.text == ".ptr" || t.text == ".global" || t.text == ".const" || t.text == ".shared" || t.text == ".local":
			// parameter attributes of pointers: nothing to simulate
		default:
			if _, ok := typeSizes[t.text[1:]]; !ok {
				return nil, p.errf(t.line, "unknown type or attribute %s in a declaration", t)
			}
			if base.Type != "" {
				return nil, p.errf(t.line, "two types in a declaration (%s and %s)", base.Type, t.text)
			}
			base.Type = t.text[1:]
		}
	}
	if base.Type == "" {
		return nil, p.errf(sp.line, "declaration without a type")
	}
	var out []*VarDecl
	for {
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		d := base
		d.Name = name.text
		if p.accept(tPunct, "<") {
			n, line, err := p.integer()
			if err != nil {
				return nil, err
			}
			if n < 0 || n > 1<<20 {
				return nil, p.errf(line, "%s<%d>: bad register count", d.Name, n)
			}
			if err := p.expect(tPunct, ">"); err != nil {
				return nil, err
			}
			d.Count, d.Range = int(n), true
		}
		for p.accept(tPunct, "[") {
			d.Array = true
			if p.accept(tPunct, "]") {
				d.Count = -1 // unsized (extern .shared)
				continue
			}
			n, line, err := p.integer()
			if err != nil {
				return nil, err
			}
			if n < 0 || n > 1<<34 {
				return nil, p.errf(line, "%s[%d]: bad array size", d.Name, n)
			}
			if err := p.expect(tPunct, "]"); err != nil {
				return nil, err
			}
			switch {
			case d.Count == 0:
				d.Count = int(n)
			case d.Count > 0:
				d.Count *= int(n)
			}
		}
		if p.accept(tPunct, "=") {
			vals, fp, err := p.initializer()
			if err != nil {
				return nil, err
			}
			d.Init, d.InitFP = vals, fp
		}
		out = append(out, &d)
		if !multi || !p.accept(tPunct, ",") {
			return out, nil
		}
	}
}

// initializer parses = value or = {values...} (nested braces flattened).
func (p *parser) initializer() ([]uint64, bool, error) {
	var vals []uint64
	fp := false
	var one func() error
	one = func() error {
		if p.accept(tPunct, "{") {
			for {
				if err := one(); err != nil {
					return err
				}
				if p.accept(tPunct, "}") {
					return nil
				}
				if err := p.expect(tPunct, ","); err != nil {
					return err
				}
			}
		}
		neg := p.accept(tPunct, "-")
		t := p.next()
		if t.kind != tNumber {
			return p.errf(t.line, "initializer: expected a number, found %s", t)
		}
		o, err := parseNumber(t.text)
		if err != nil {
			return p.errf(t.line, "initializer: %v", err)
		}
		switch o.Kind {
		case oInt:
			if neg {
				o.Int = -o.Int
			}
			vals = append(vals, uint64(o.Int))
		default:
			fp = true
			if neg {
				o.Bits ^= 1 << 63
				if o.F32 {
					o.Bits ^= 1<<63 | 1<<31
				}
			}
			vals = append(vals, o.Bits)
		}
		return nil
	}
	return vals, fp, one()
}

// body parses { statements } with nested blocks.
func (p *parser) body() ([]Stmt, error) {
	open := p.peek()
	if err := p.expect(tPunct, "{"); err != nil {
		return nil, err
	}
	var out []Stmt
	depth := 1
	for {
		t := p.peek()
		switch {
		case t.kind == tEOF:
			return nil, p.errf(open.line, "function body not closed")
		case t.kind == tPunct && t.text == "{":
			p.next()
			depth++
			out = append(out, Stmt{Kind: sOpen, Line: t.line})
		case t.kind == tPunct && t.text == "}":
			p.next()
			depth--
			if depth == 0 {
				return out, nil
			}
			out = append(out, Stmt{Kind: sClose, Line: t.line})
		case t.kind == tIdent && spaces[t.text]:
			ds, err := p.varDecl()
			if err != nil {
				return nil, err
			}
			for _, d := range ds {
				out = append(out, Stmt{Kind: sDecl, Line: d.Line, Decl: d})
			}
		case t.kind == tIdent && (t.text == ".loc" || t.text == ".file"):
			p.next()
			p.skipLine(t.line)
		case t.kind == tIdent && t.text == ".pragma":
			if err := p.pragma(); err != nil {
				return nil, err
			}
		case t.kind == tIdent && p.peekAt(1).kind == tPunct && p.peekAt(1).text == ":" && !strings.HasPrefix(t.text, "."):
			p.next()
			p.next()
			out = append(out, Stmt{Kind: sLabel, Line: t.line, Label: t.text})
		case t.kind == tPunct && t.text == "@" || t.kind == tIdent:
			in, err := p.instr()
			if err != nil {
				return nil, err
			}
			out = append(out, Stmt{Kind: sInstr, Line: in.Line, Instr: in})
		case t.kind == tPunct && t.text == ";":
			p.next() // empty statement
		default:
			return nil, p.errf(t.line, "unexpected %s in a function body", t)
		}
	}
}

// instr parses [@[!]p] opcode operands ;
func (p *parser) instr() (*Instr, error) {
	first := p.peek()
	in := &Instr{Line: first.line}
	if p.accept(tPunct, "@") {
		in.GuardNeg = p.accept(tPunct, "!")
		g, err := p.ident()
		if err != nil {
			return nil, err
		}
		in.Guard = g.text
	}
	op, err := p.ident()
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(op.text, ".") || strings.HasPrefix(op.text, "%") {
		return nil, p.errf(op.line, "expected an instruction, found %s", op)
	}
	in.Line = op.line
	in.Op = op.text
	in.Parts = strings.Split(op.text, ".")
	for _, part := range in.Parts {
		if part == "" {
			return nil, p.errf(op.line, "malformed opcode %q", op.text)
		}
	}
	if p.accept(tPunct, ";") {
		return in, nil
	}
	for {
		o, err := p.operand()
		if err != nil {
			return nil, err
		}
		in.Args = append(in.Args, o)
		if p.accept(tPunct, ";") {
			return in, nil
		}
		if err := p.expect(tPunct, ","); err != nil {
			return nil, p.errf(op.line, "%s: expected ',' or ';' after operand %d", in.Op, len(in.Args))
		}
	}
}

func (p *parser) operand() (Operand, error) {
	if p.accept(tPunct, "!") {
		o, err := p.primary()
		if err != nil {
			return o, err
		}
		if o.Kind != oName {
			return o, p.errf(p.peek().line, "! applies to a predicate register")
		}
		o.Not = true
		return o, nil
	}
	o, err := p.primary()
	if err != nil {
		return o, err
	}
	if p.accept(tPunct, "|") {
		q, err := p.primary()
		if err != nil {
			return o, err
		}
		return Operand{Kind: oPair, Elems: []Operand{o, q}}, nil
	}
	return o, nil
}

func (p *parser) primary() (Operand, error) {
	t := p.peek()
	switch {
	case t.kind == tPunct && t.text == "-":
		p.next()
		n := p.peek()
		if n.kind == tNumber {
			p.next()
			o, err := parseNumber(n.text)
			if err != nil {
				return o, p.errf(n.line, "%v", err)
			}
			if o.Kind == oInt {
				o.Int = -o.Int
			} else if o.F32 {
				o.Bits ^= 1 << 31
			} else {
				o.Bits ^= 1 << 63
			}
			return o, nil
		}
		o, err := p.primary()
		if err != nil {
			return o, err
		}
		if o.Kind != oName {
			return o, p.errf(t.line, "- applies to a number or register")
		}
		o.Neg = true
		return o, nil
	case t.kind == tNumber:
		p.next()
		o, err := parseNumber(t.text)
		if err != nil {
			return o, p.errf(t.line, "%v", err)
		}
		return o, nil
	case t.kind == tIdent:
		p.next()
		if t.text == "_" {
			return Operand{Kind: oSink}, nil
		}
		o := Operand{Kind: oName, Name: t.text}
		if p.is(tPunct, "+") && p.peekAt(1).kind == tNumber {
			p.next()
			n, _, err := p.integer()
			if err != nil {
				return o, err
			}
			o.Int = n
		}
		return o, nil
	case t.kind == tPunct && t.text == "[":
		p.next()
		o := Operand{Kind: oAddr}
		b := p.peek()
		switch b.kind {
		case tIdent:
			p.next()
			o.Base = &Operand{Kind: oName, Name: b.text}
		case tNumber:
			n, _, err := p.integer()
			if err != nil {
				return o, err
			}
			o.Int = n
		default:
			return o, p.errf(b.line, "expected an address, found %s", b)
		}
		for p.is(tPunct, "+") || p.is(tPunct, "-") {
			sign := int64(1)
			if p.next().text == "-" {
				sign = -1
			}
			n, _, err := p.integer()
			if err != nil {
				return o, err
			}
			o.Int += sign * n
		}
		if err := p.expect(tPunct, "]"); err != nil {
			return o, err
		}
		return o, nil
	case t.kind == tPunct && (t.text == "{" || t.text == "("):
		p.next()
		closer := "}"
		if t.text == "(" {
			closer = ")"
		}
		o := Operand{Kind: oVec}
		if p.accept(tPunct, closer) {
			return o, nil
		}
		for {
			e, err := p.operand()
			if err != nil {
				return o, err
			}
			o.Elems = append(o.Elems, e)
			if p.accept(tPunct, closer) {
				return o, nil
			}
			if err := p.expect(tPunct, ","); err != nil {
				return o, err
			}
		}
	}
	return Operand{}, p.errf(t.line, "expected an operand, found %s", t)
}

// parseNumber reads a PTX constant: decimal, 0x hex, 0b binary, leading-0
// octal integers (a U suffix allowed), 0f/0F single and 0d/0D double precision
// bit patterns, and decimal floating-point (as a double).
func parseNumber(s string) (Operand, error) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F') {
		if len(s) != 10 {
			return Operand{}, fmt.Errorf("bad single-precision constant %q (0f and 8 hex digits)", s)
		}
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			return Operand{}, fmt.Errorf("bad single-precision constant %q", s)
		}
		return Operand{Kind: oFloat, Bits: v, F32: true}, nil
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D') {
		if len(s) != 18 {
			return Operand{}, fmt.Errorf("bad double-precision constant %q (0d and 16 hex digits)", s)
		}
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return Operand{}, fmt.Errorf("bad double-precision constant %q", s)
		}
		return Operand{Kind: oFloat, Bits: v}, nil
	}
	t := strings.TrimSuffix(strings.TrimSuffix(s, "U"), "u")
	if strings.ContainsAny(t, ".eE") && !strings.HasPrefix(t, "0x") && !strings.HasPrefix(t, "0X") {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return Operand{}, fmt.Errorf("bad number %q", s)
		}
		return Operand{Kind: oFloat, Bits: math.Float64bits(f)}, nil
	}
	var v uint64
	var err error
	switch {
	case len(t) > 2 && (t[:2] == "0x" || t[:2] == "0X"):
		v, err = strconv.ParseUint(t[2:], 16, 64)
	case len(t) > 2 && (t[:2] == "0b" || t[:2] == "0B"):
		v, err = strconv.ParseUint(t[2:], 2, 64)
	case len(t) > 1 && t[0] == '0':
		v, err = strconv.ParseUint(t[1:], 8, 64)
	default:
		v, err = strconv.ParseUint(t, 10, 64)
	}
	if err != nil {
		return Operand{}, fmt.Errorf("bad number %q", s)
	}
	return Operand{Kind: oInt, Int: int64(v)}, nil
}
