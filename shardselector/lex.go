package shardselector

import "fmt"

// tokKind is a token of cel-go's lexer (parser/gen/CEL.g4). Keywords and
// operators are their own kinds; WHITESPACE and COMMENT are dropped.
type tokKind uint8

const (
	tEOF      tokKind = iota
	tEq               // ==
	tNe               // !=
	tIn               // in
	tLt               // <
	tLe               // <=
	tGe               // >=
	tGt               // >
	tAnd              // &&
	tOr               // ||
	tLBracket         // [
	tRBracket         // ]
	tLBrace           // {
	tRBrace           // }
	tLParen           // (
	tRParen           // )
	tDot              // .
	tComma            // ,
	tMinus            // -
	tExclam           // !
	tQuestion         // ?
	tColon            // :
	tPlus             // +
	tStar             // *
	tSlash            // /
	tPercent          // %
	tTrue             // true
	tFalse            // false
	tNull             // null
	tFloat            // NUM_FLOAT
	tInt              // NUM_INT
	tUint             // NUM_UINT
	tString           // STRING
	tBytes            // BYTES
	tIdent            // IDENTIFIER
	tEscIdent         // ESC_IDENTIFIER (`…`)
)

var tokNames = [...]string{
	tEOF: "<EOF>", tEq: "'=='", tNe: "'!='", tIn: "'in'", tLt: "'<'", tLe: "'<='", tGe: "'>='", tGt: "'>'",
	tAnd: "'&&'", tOr: "'||'", tLBracket: "'['", tRBracket: "']'", tLBrace: "'{'", tRBrace: "'}'",
	tLParen: "'('", tRParen: "')'", tDot: "'.'", tComma: "','", tMinus: "'-'", tExclam: "'!'",
	tQuestion: "'?'", tColon: "':'", tPlus: "'+'", tStar: "'*'", tSlash: "'/'", tPercent: "'%'",
	tTrue: "'true'", tFalse: "'false'", tNull: "'null'", tFloat: "a double literal", tInt: "an int literal",
	tUint: "a uint literal", tString: "a string literal", tBytes: "a bytes literal", tIdent: "an identifier",
	tEscIdent: "an escaped identifier",
}

type token struct {
	kind tokKind
	text string
	pos  int // code point offset
}

func (t token) String() string {
	if t.kind == tEOF {
		return tokNames[tEOF]
	}
	return fmt.Sprintf("%q", t.text)
}

// lex splits src into tokens the way cel-go's ANTLR lexer does: at each
// position the longest token wins, ties going to the rule defined first
// ('in', 'true', 'false', 'null' before IDENTIFIER). The last token is tEOF.
func lex(src []rune) ([]token, error) {
	var toks []token
	at := func(i int) rune {
		if i < len(src) {
			return src[i]
		}
		return -1
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
			continue
		case c == '/' && at(i+1) == '/': // COMMENT, to the end of the line
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		}
		kind, n := tEOF, 0
		switch {
		case isDigit(c) || (c == '.' && isDigit(at(i+1))):
			kind, n = lexNumber(src, i)
		case c == '\'' || c == '"':
			if n = lexString(src, i); n > 0 {
				kind = tString
			}
		case isLetter(c) || c == '_':
			kind, n = lexWord(src, i)
		case c == '`':
			n = 1
			for at(i+n) >= 0 && isEscIdentRune(at(i+n)) {
				n++
			}
			if n > 1 && at(i+n) == '`' {
				kind, n = tEscIdent, n+1
			} else {
				n = 0
			}
		default:
			kind, n = lexOperator(c, at(i+1))
		}
		if n == 0 {
			return nil, fmt.Errorf("Syntax error: token recognition error at: %q", string(src[i:min(i+1, len(src))]))
		}
		toks = append(toks, token{kind: kind, text: string(src[i : i+n]), pos: i})
		i += n
	}
	return append(toks, token{kind: tEOF, pos: len(src)}), nil
}

func isDigit(c rune) bool    { return c >= '0' && c <= '9' }
func isHexDigit(c rune) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }
func isLetter(c rune) bool   { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func isEscIdentRune(c rune) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '-' || c == '/' || c == ' '
}

var (
	twoRuneOps = map[[2]rune]tokKind{
		{'=', '='}: tEq, {'!', '='}: tNe, {'<', '='}: tLe, {'>', '='}: tGe, {'&', '&'}: tAnd, {'|', '|'}: tOr,
	}
	oneRuneOps = map[rune]tokKind{
		'<': tLt, '>': tGt, '[': tLBracket, ']': tRBracket, '{': tLBrace, '}': tRBrace, '(': tLParen,
		')': tRParen, '.': tDot, ',': tComma, '-': tMinus, '!': tExclam, '?': tQuestion, ':': tColon,
		'+': tPlus, '*': tStar, '/': tSlash, '%': tPercent,
	}
)

func lexOperator(c, next rune) (tokKind, int) {
	if k, ok := twoRuneOps[[2]rune{c, next}]; ok {
		return k, 2
	}
	if k, ok := oneRuneOps[c]; ok {
		return k, 1
	}
	return tEOF, 0
}

// lexWord lexes an IDENTIFIER, a keyword, or a string or bytes literal with
// an r/R or b/B prefix, whichever is longest.
func lexWord(src []rune, i int) (tokKind, int) {
	n := 1
	for i+n < len(src) && (isLetter(src[i+n]) || isDigit(src[i+n]) || src[i+n] == '_') {
		n++
	}
	kind := tIdent
	switch string(src[i : i+n]) {
	case "in":
		kind = tIn
	case "true":
		kind = tTrue
	case "false":
		kind = tFalse
	case "null":
		kind = tNull
	}
	switch src[i] {
	case 'r', 'R':
		if s := lexString(src, i); s > n {
			return tString, s
		}
	case 'b', 'B':
		if s := lexString(src, i+1); s > 0 && s+1 > n {
			return tBytes, s + 1
		}
	}
	return kind, n
}

// lexNumber lexes NUM_FLOAT, NUM_INT or NUM_UINT at src[i], the longest.
func lexNumber(src []rune, i int) (tokKind, int) {
	at := func(j int) rune {
		if j < len(src) {
			return src[j]
		}
		return -1
	}
	digits := func(j int) int { // end of a run of digits starting at j
		for isDigit(at(j)) {
			j++
		}
		return j
	}
	exponent := func(j int) int { // end of EXPONENT at j, or j if none
		if at(j) != 'e' && at(j) != 'E' {
			return j
		}
		k := j + 1
		if at(k) == '+' || at(k) == '-' {
			k++
		}
		if !isDigit(at(k)) {
			return j
		}
		return digits(k)
	}
	bestKind, best := tEOF, 0
	consider := func(kind tokKind, end int) {
		if end-i > best {
			bestKind, best = kind, end-i
		}
	}
	if src[i] == '.' { // '.' DIGIT+ EXPONENT?
		consider(tFloat, exponent(digits(i+1)))
		return bestKind, best
	}
	j := digits(i)
	if at(j) == '.' && isDigit(at(j+1)) { // DIGIT+ '.' DIGIT+ EXPONENT?
		consider(tFloat, exponent(digits(j+1)))
	}
	if e := exponent(j); e > j { // DIGIT+ EXPONENT
		consider(tFloat, e)
	}
	consider(tInt, j)
	if at(j) == 'u' || at(j) == 'U' {
		consider(tUint, j+1)
	}
	if src[i] == '0' && at(i+1) == 'x' && isHexDigit(at(i+2)) {
		k := i + 2
		for isHexDigit(at(k)) {
			k++
		}
		consider(tInt, k)
		if at(k) == 'u' || at(k) == 'U' {
			consider(tUint, k+1)
		}
	}
	return bestKind, best
}

// lexString returns the length of the longest STRING at src[i] (which is a
// quote, or r/R before one), or 0.
func lexString(src []rune, i int) int {
	start := i
	raw := false
	if i < len(src) && (src[i] == 'r' || src[i] == 'R') {
		raw = true
		i++
	}
	if i >= len(src) || (src[i] != '\'' && src[i] != '"') {
		return 0
	}
	q := src[i]
	best := 0
	// Single-quoted form: no line breaks.
	if end := scanBody(src, i+1, raw, true, func(j int) int {
		if src[j] == q {
			return 1
		}
		return 0
	}); end > 0 {
		best = end - start
	}
	// Triple-quoted form, ended by the first closing triple (non-greedy).
	if i+2 < len(src) && src[i+1] == q && src[i+2] == q {
		if end := scanBody(src, i+3, raw, false, func(j int) int {
			if j+2 < len(src) && src[j] == q && src[j+1] == q && src[j+2] == q {
				return 3
			}
			return 0
		}); end > 0 {
			best = max(best, end-start)
		}
	}
	return best
}

// scanBody returns the end (exclusive) of a string literal whose body starts
// at src[j] and which closes where closing returns the closing quotes'
// length, or -1 if it does not close: at the end of input, at a line break
// if singleLine, or at a backslash that starts no escape unless raw.
func scanBody(src []rune, j int, raw, singleLine bool, closing func(j int) int) int {
	for j < len(src) {
		if n := closing(j); n > 0 {
			return j + n
		}
		switch c := src[j]; {
		case singleLine && (c == '\n' || c == '\r'):
			return -1
		case c == '\\' && !raw:
			n := escapeLen(src, j)
			if n == 0 {
				return -1
			}
			j += n
		default:
			j++
		}
	}
	return -1
}

// escapeLen returns the length of the ESC_SEQ at src[j] (a backslash), or
// 0 if there is none.
func escapeLen(src []rune, j int) int {
	at := func(k int) rune {
		if k < len(src) {
			return src[k]
		}
		return -1
	}
	hexRun := func(from, n int) bool {
		for k := from; k < from+n; k++ {
			if !isHexDigit(at(k)) {
				return false
			}
		}
		return true
	}
	switch c := at(j + 1); c {
	case 'a', 'b', 'f', 'n', 'r', 't', 'v', '"', '\'', '\\', '?', '`':
		return 2
	case '0', '1', '2', '3':
		if at(j+2) >= '0' && at(j+2) <= '7' && at(j+3) >= '0' && at(j+3) <= '7' {
			return 4
		}
	case 'x', 'X':
		if hexRun(j+2, 2) {
			return 4
		}
	case 'u':
		if hexRun(j+2, 4) {
			return 6
		}
	case 'U':
		if hexRun(j+2, 8) {
			return 10
		}
	}
	return 0
}
