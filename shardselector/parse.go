package shardselector

import (
	"fmt"
	"strconv"
	"strings"
)

// exprKind numbers expression kinds as cel-go's ast.ExprKind does; the
// API server prints them as numbers in its messages.
type exprKind int

const (
	kindCall    exprKind = 1
	kindIdent   exprKind = 3
	kindList    exprKind = 4
	kindLiteral exprKind = 5
	kindMap     exprKind = 6
	kindSelect  exprKind = 7
	kindStruct  exprKind = 8
)

// Function names cel-go gives operators.
const (
	opConditional = "_?_:_"
	opLogicalAnd  = "_&&_"
	opLogicalOr   = "_||_"
	opLogicalNot  = "!_"
	opNegate      = "-_"
	opIndex       = "_[_]"
)

var binaryOps = map[tokKind]string{
	tEq: "_==_", tNe: "_!=_", tLt: "_<_", tLe: "_<=_", tGe: "_>=_", tGt: "_>_", tIn: "@in",
	tPlus: "_+_", tMinus: "_-_", tStar: "_*_", tSlash: "_/_", tPercent: "_%_",
}

// expr is a node of the syntax tree, as much of cel-go's as the walker and
// the nesting limits need.
type expr struct {
	kind    exprKind
	fn      string  // call: function name
	target  *expr   // call: receiver of x.f(…)
	args    []*expr // call arguments; list elements; map keys and values; message field values
	name    string  // ident name; selected field; message type
	operand *expr   // select: x of x.name
	lit     any     // literal: string, []byte, int64, uint64, float64, bool or nullValue
	// compound marks the nodes cel-go's visitor counts towards its nesting
	// limit: ternaries, binary relations and arithmetic, selections, member
	// calls and indexing.
	compound bool
}

type nullValue struct{}

// maxRecursion is cel-go's default maxRecursionDepth, used both for the
// nesting of each grammar rule while parsing and for the visitor's nesting
// of compound nodes.
const maxRecursion = 250

// rule names a rule of CEL.g4, for the per-rule nesting count.
type rule int

const (
	ruleStart rule = iota
	ruleExpr
	ruleConditionalOr
	ruleConditionalAnd
	ruleRelation
	ruleCalc
	ruleUnary
	ruleMember
	rulePrimary
	ruleExprList
	ruleListInit
	ruleFieldInitializerList
	ruleOptField
	ruleMapInitializerList
	ruleEscapeIdent
	ruleOptExpr
	ruleLiteral
	numRules
)

// reservedIDs may not name a variable or a global function (cel-go's
// reservedIds; true, false, null and in are tokens of their own).
var reservedIDs = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "for": true,
	"function": true, "if": true, "import": true, "let": true, "loop": true, "package": true,
	"namespace": true, "return": true, "var": true, "void": true, "while": true,
}

// parser is a recursive-descent recogniser of CEL.g4 with ANTLR's choices
// where the grammar is ambiguous ("-1" is a literal, not a negation; "--1"
// negates twice). Owned by one Parse call.
type parser struct {
	toks []token
	pos  int
	// depth counts, per rule, the invocations in progress, as cel-go's
	// recursion listener counts ANTLR's enter and exit events: an operator
	// or postfix of a left-recursive rule (relation, calc, member) exits
	// and re-enters its context, so chains do not add up. cel-go fails an
	// expression when any count exceeds maxRecursion.
	depth [numRules]int
}

// parseFailure carries a parse error through panics to parseCEL.
type parseFailure struct{ err error }

func (p *parser) fail(format string, args ...any) {
	panic(parseFailure{fmt.Errorf(format, args...)})
}

// parseCEL parses src as a CEL expression with cel-go's default options and
// no macros, and applies cel-go's checks made while building the tree.
func parseCEL(src []rune) (root *expr, err error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(parseFailure)
			if !ok {
				panic(r)
			}
			root, err = nil, f.err
		}
	}()
	root = p.start()
	if compoundDepth(root) > maxRecursion {
		return nil, fmt.Errorf("max recursion depth exceeded")
	}
	return root, nil
}

// compoundDepth is the largest number of compound nodes on a path from e
// down, which is how deep cel-go's visitor recurses.
func compoundDepth(e *expr) int {
	d := 0
	for _, c := range e.children() {
		d = max(d, compoundDepth(c))
	}
	if e.compound {
		d++
	}
	return d
}

func (e *expr) children() []*expr {
	var out []*expr
	if e.target != nil {
		out = append(out, e.target)
	}
	if e.operand != nil {
		out = append(out, e.operand)
	}
	return append(out, e.args...)
}

func (p *parser) tok() tokKind       { return p.toks[p.pos].kind }
func (p *parser) peek(k int) tokKind { return p.toks[min(p.pos+k, len(p.toks)-1)].kind }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) expect(k tokKind) token {
	if p.tok() != k {
		p.syntaxError("expecting " + tokNames[k])
	}
	return p.next()
}

func (p *parser) syntaxError(what string) {
	t := p.toks[p.pos]
	p.fail("Syntax error: at offset %d: unexpected %s, %s", t.pos, t, what)
}

// enter starts an invocation of rule r; leave ends it.
func (p *parser) enter(r rule) {
	p.depth[r]++
	if p.depth[r] > maxRecursion {
		p.fail("expression recursion limit exceeded: %d", maxRecursion)
	}
}

func (p *parser) leave(r rule) { p.depth[r]-- }

func call(fn string, compound bool, args ...*expr) *expr {
	return &expr{kind: kindCall, fn: fn, args: args, compound: compound}
}

// start: expr EOF
func (p *parser) start() *expr {
	p.enter(ruleStart)
	defer p.leave(ruleStart)
	e := p.expr()
	p.expect(tEOF)
	return e
}

// expr: conditionalOr ('?' conditionalOr ':' expr)?
func (p *parser) expr() *expr {
	p.enter(ruleExpr)
	defer p.leave(ruleExpr)
	e := p.conditionalOr()
	if p.tok() != tQuestion {
		return e
	}
	p.next()
	ifTrue := p.conditionalOr()
	p.expect(tColon)
	return call(opConditional, true, e, ifTrue, p.expr())
}

// conditionalOr: conditionalAnd ('||' conditionalAnd)*
func (p *parser) conditionalOr() *expr {
	p.enter(ruleConditionalOr)
	defer p.leave(ruleConditionalOr)
	return p.chain(tOr, opLogicalOr, p.conditionalAnd)
}

// conditionalAnd: relation ('&&' relation)*
func (p *parser) conditionalAnd() *expr {
	p.enter(ruleConditionalAnd)
	defer p.leave(ruleConditionalAnd)
	return p.chain(tAnd, opLogicalAnd, func() *expr { return p.relation(0) })
}

// chain parses term (op term)* into one call of fn over the terms in order
// (cel-go balances them into a tree whose in-order walk is the same).
func (p *parser) chain(op tokKind, fn string, term func() *expr) *expr {
	e := term()
	if p.tok() != op {
		return e
	}
	terms := []*expr{e}
	for p.tok() == op {
		p.next()
		terms = append(terms, term())
	}
	return call(fn, false, terms...)
}

func isRelation(k tokKind) bool {
	return k == tLt || k == tLe || k == tGe || k == tGt || k == tEq || k == tNe || k == tIn
}

// relation[prec]: calc ({prec <= 1}? relop relation[2])*
func (p *parser) relation(prec int) *expr {
	p.enter(ruleRelation)
	defer p.leave(ruleRelation)
	e := p.calc(0)
	for isRelation(p.tok()) && prec <= 1 {
		op := p.next()
		e = call(binaryOps[op.kind], true, e, p.relation(2))
	}
	return e
}

// calc[prec]: unary ({prec <= 2}? ('*'|'/'|'%') calc[3] | {prec <= 1}? ('+'|'-') calc[2])*
func (p *parser) calc(prec int) *expr {
	p.enter(ruleCalc)
	defer p.leave(ruleCalc)
	e := p.unary()
	for {
		var next int
		switch k := p.tok(); {
		case (k == tStar || k == tSlash || k == tPercent) && prec <= 2:
			next = 3
		case (k == tPlus || k == tMinus) && prec <= 1:
			next = 2
		default:
			return e
		}
		op := p.next()
		e = call(binaryOps[op.kind], true, e, p.calc(next))
	}
}

// unary: member | '!'+ member | '-'+ member
func (p *parser) unary() *expr {
	p.enter(ruleUnary)
	defer p.leave(ruleUnary)
	var op tokKind
	switch k := p.tok(); {
	case k == tExclam:
		op = tExclam
	case k == tMinus && (p.peek(1) == tInt || p.peek(1) == tFloat):
		// Both "member" (a negative literal) and "'-'+ member" match;
		// ANTLR takes the first alternative.
		return p.member()
	case k == tMinus:
		op = tMinus
	default:
		return p.member()
	}
	n := 0
	for p.tok() == op { // ANTLR's greedy loop: a later '-' is not a sign
		p.next()
		n++
	}
	m := p.member()
	if n%2 == 0 {
		return m
	}
	if op == tExclam {
		return call(opLogicalNot, false, m)
	}
	return call(opNegate, false, m)
}

// member[prec]: primary ('.' '?'? escapeIdent | '.' IDENTIFIER '(' exprList? ')' | '[' '?'? expr ']')*
func (p *parser) member() *expr {
	p.enter(ruleMember)
	defer p.leave(ruleMember)
	e := p.primary()
	for {
		switch p.tok() {
		case tDot:
			p.next()
			if p.tok() == tIdent && p.peek(1) == tLParen {
				name := p.next().text
				p.next()
				args := p.args(tRParen)
				p.expect(tRParen)
				e = &expr{kind: kindCall, fn: name, target: e, args: args, compound: true}
				continue
			}
			optional := p.tok() == tQuestion
			if optional {
				p.next()
			}
			name := p.escapeIdent()
			if optional {
				p.fail("unsupported syntax '.?'")
			}
			e = &expr{kind: kindSelect, operand: e, name: name, compound: true}
		case tLBracket:
			p.next()
			optional := p.tok() == tQuestion
			if optional {
				p.next()
			}
			index := p.expr()
			p.expect(tRBracket)
			if optional {
				p.fail("unsupported syntax '[?'")
			}
			e = call(opIndex, true, e, index)
		default:
			return e
		}
	}
}

// escapeIdent: IDENTIFIER | ESC_IDENTIFIER (unsupported: escaped
// identifiers are off by default in cel-go)
func (p *parser) escapeIdent() string {
	p.enter(ruleEscapeIdent)
	defer p.leave(ruleEscapeIdent)
	switch p.tok() {
	case tIdent:
		return p.next().text
	case tEscIdent:
		p.fail("unsupported syntax: '`'")
	}
	p.syntaxError("expecting an identifier")
	return ""
}

// primary: '.'? IDENTIFIER | '.'? IDENTIFIER '(' exprList? ')' | '(' expr ')'
//
//	| '[' listInit? ','? ']' | '{' mapInitializerList? ','? '}'
//	| '.'? IDENTIFIER ('.' IDENTIFIER)* '{' fieldInitializerList? ','? '}' | literal
func (p *parser) primary() *expr {
	p.enter(rulePrimary)
	defer p.leave(rulePrimary)
	switch p.tok() {
	case tDot, tIdent:
		return p.identOrCall()
	case tLParen:
		p.next()
		e := p.expr()
		p.expect(tRParen)
		return e
	case tLBracket:
		p.next()
		return p.collection(kindList, tRBracket, p.listInit)
	case tLBrace:
		p.next()
		return p.collection(kindMap, tRBrace, p.mapInit)
	case tMinus, tInt, tUint, tFloat, tString, tBytes, tTrue, tFalse, tNull:
		return p.literal()
	}
	p.syntaxError("expecting an expression")
	return nil
}

// identOrCall parses the primaries that start with an optional '.' and an
// identifier: a variable, a global call or a message construction.
func (p *parser) identOrCall() *expr {
	prefix := ""
	if p.tok() == tDot {
		p.next()
		prefix = "."
	}
	id := p.expect(tIdent).text
	if p.tok() == tLParen {
		if reservedIDs[id] {
			p.fail("reserved identifier: %s", id)
		}
		p.next()
		args := p.args(tRParen)
		p.expect(tRParen)
		return call(prefix+id, false, args...)
	}
	// A message type name is a dotted chain followed by '{'.
	k := 0
	for p.peek(k) == tDot && p.peek(k+1) == tIdent {
		k += 2
	}
	if p.peek(k) == tLBrace {
		parts := []string{id}
		for range k / 2 {
			p.next()
			parts = append(parts, p.next().text)
		}
		p.next()
		e := p.collection(kindStruct, tRBrace, p.fieldInit)
		e.name = prefix + strings.Join(parts, ".")
		return e
	}
	if reservedIDs[id] {
		p.fail("reserved identifier: %s", id)
	}
	return &expr{kind: kindIdent, name: prefix + id}
}

// args parses an optional exprList: expr (',' expr)*
func (p *parser) args(end tokKind) []*expr {
	if p.tok() == end {
		return nil
	}
	p.enter(ruleExprList)
	defer p.leave(ruleExprList)
	out := []*expr{p.expr()}
	for p.tok() == tComma {
		p.next()
		out = append(out, p.expr())
	}
	return out
}

// listInit: optExpr (',' optExpr)*  — a ',' before ']' is the list's own.
func (p *parser) listInit() []*expr {
	p.enter(ruleListInit)
	defer p.leave(ruleListInit)
	out := []*expr{p.optExpr()}
	for p.tok() == tComma && p.peek(1) != tRBracket {
		p.next()
		out = append(out, p.optExpr())
	}
	return out
}

// collection parses the rest of a list, map or message literal after its
// opening bracket: init? ','? and the closing token end.
func (p *parser) collection(kind exprKind, end tokKind, init func() []*expr) *expr {
	e := &expr{kind: kind}
	if p.tok() != end && p.tok() != tComma {
		e.args = init()
	}
	if p.tok() == tComma {
		p.next()
	}
	p.expect(end)
	return e
}

// mapInitializerList: optExpr ':' expr (',' optExpr ':' expr)*
func (p *parser) mapInit() []*expr { return p.entries(ruleMapInitializerList, p.optExpr) }

// fieldInitializerList: optField ':' expr (',' optField ':' expr)*
func (p *parser) fieldInit() []*expr {
	return p.entries(ruleFieldInitializerList, func() *expr { p.optField(); return nil })
}

// entries parses key ':' expr (',' key ':' expr)* under rule r — a ',' before
// '}' is the literal's own — and returns the keys key returns (a message
// field's name is not an expression) and the values, in order.
func (p *parser) entries(r rule, key func() *expr) []*expr {
	p.enter(r)
	defer p.leave(r)
	var out []*expr
	for {
		if k := key(); k != nil {
			out = append(out, k)
		}
		p.expect(tColon)
		out = append(out, p.expr())
		if p.tok() != tComma || p.peek(1) == tRBrace {
			return out
		}
		p.next()
	}
}

// optField: '?'? escapeIdent
func (p *parser) optField() {
	p.enter(ruleOptField)
	defer p.leave(ruleOptField)
	optional := p.tok() == tQuestion
	if optional {
		p.next()
	}
	p.escapeIdent()
	if optional {
		p.fail("unsupported syntax '?'")
	}
}

// optExpr: '?'? expr
func (p *parser) optExpr() *expr {
	p.enter(ruleOptExpr)
	defer p.leave(ruleOptExpr)
	optional := p.tok() == tQuestion
	if optional {
		p.next()
	}
	e := p.expr()
	if optional {
		p.fail("unsupported syntax '?'")
	}
	return e
}

// literal: '-'? NUM_INT | NUM_UINT | '-'? NUM_FLOAT | STRING | BYTES | true | false | null
func (p *parser) literal() *expr {
	p.enter(ruleLiteral)
	defer p.leave(ruleLiteral)
	sign := ""
	if p.tok() == tMinus {
		p.next()
		sign = "-"
		if p.tok() != tInt && p.tok() != tFloat {
			p.syntaxError("expecting a number")
		}
	}
	t := p.next()
	e := &expr{kind: kindLiteral}
	switch t.kind {
	case tInt:
		text, base := t.text, 10
		if strings.HasPrefix(text, "0x") {
			text, base = text[2:], 16
		}
		v, err := strconv.ParseInt(sign+text, base, 64)
		if err != nil {
			p.fail("invalid int literal")
		}
		e.lit = v
	case tUint:
		text, base := t.text[:len(t.text)-1], 10
		if strings.HasPrefix(text, "0x") {
			text, base = text[2:], 16
		}
		v, err := strconv.ParseUint(text, base, 64)
		if err != nil {
			p.fail("invalid uint literal")
		}
		e.lit = v
	case tFloat:
		v, err := strconv.ParseFloat(sign+t.text, 64)
		if err != nil {
			p.fail("invalid double literal")
		}
		e.lit = v
	case tString:
		s, err := unquote(t.text, false)
		if err != nil {
			p.fail("%s", err.Error())
		}
		e.lit = s
	case tBytes:
		s, err := unquote(t.text[1:], true)
		if err != nil {
			p.fail("%s", err.Error())
		}
		e.lit = []byte(s)
	case tTrue, tFalse:
		e.lit = t.kind == tTrue
	case tNull:
		e.lit = nullValue{}
	}
	return e
}
