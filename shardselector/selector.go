package shardselector

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/sharding"
)

// Fields a selector may hash.
const (
	FieldUID       = "object.metadata.uid"
	FieldNamespace = "object.metadata.namespace"
)

// maxEnd is the only 17-digit bound: 2^64, the exclusive end of the space.
const maxEnd = "0x10000000000000000"

// ErrInvalid is matched (errors.Is) by every error Parse returns. The
// error's text is the API server's message, without a package prefix, so
// that a server can answer exactly as kube-apiserver does.
var ErrInvalid = errors.New("shardselector: invalid shard selector")

type parseError struct{ msg string }

func (e *parseError) Error() string        { return e.msg }
func (e *parseError) Is(target error) bool { return target == ErrInvalid }

func errorf(format string, args ...any) error {
	return &parseError{msg: fmt.Sprintf(format, args...)}
}

// Range is one shardRange: the hashes h with Start <= h <= Last. The API
// server writes it as the half-open [start, end) with end = Last+1, which
// is 2^64 for Last = math.MaxUint64.
type Range struct {
	Start, Last uint64
}

// Contains reports whether h lies in the range.
func (r Range) Contains(h uint64) bool { return r.Start <= h && h <= r.Last }

// Selector is a parsed shard selector: the objects whose Hash of Field lies
// in any of Ranges. Ranges keep the expression's order and may overlap.
type Selector struct {
	Field  string
	Ranges []Range
}

// MatchesHash reports whether a field hash lies in one of the ranges.
func (s Selector) MatchesHash(h uint64) bool {
	for _, r := range s.Ranges {
		if r.Contains(h) {
			return true
		}
	}
	return false
}

// Matches reports whether an object whose Field has value is selected.
func (s Selector) Matches(value string) bool { return s.MatchesHash(Hash(value)) }

// String returns the selector as the API server echoes it in
// ListMeta.shardInfo.selector: the ranges in order, joined by " || ", each
// as shardRange(field, '0x…', '0x…') with 16 hex digits. It parses back
// to an equal Selector.
func (s Selector) String() string {
	reqs := make([]sharding.ShardRangeRequirement, len(s.Ranges))
	for i, r := range s.Ranges {
		reqs[i] = sharding.ShardRangeRequirement{Key: s.Field, Start: formatBound(r.Start), End: maxEnd}
		if r.Last != math.MaxUint64 {
			reqs[i].End = formatBound(r.Last + 1)
		}
	}
	return sharding.NewSelector(reqs...).String()
}

func formatBound(v uint64) string { return fmt.Sprintf("0x%016x", v) }

// maxCodePoints is cel-go's default expression size limit.
const maxCodePoints = 100_000

// Parse parses a shardSelector expression as kube-apiserver v1.36 does and
// returns its ranges, or an error (matching ErrInvalid) whose text is the
// API server's message. Surrounding white space (unicode.IsSpace) is
// ignored; an empty expression is an error.
func Parse(expr string) (Selector, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return Selector{}, errorf("empty shard selector is not allowed; omit the parameter for unfiltered lists")
	}
	src := []rune(expr)
	if len(src) > maxCodePoints {
		return Selector{}, errorf("CEL parse error: expression code point size exceeds limit: size: %d, limit %d", len(src), maxCodePoints)
	}
	root, err := parseCEL(src)
	if err != nil {
		return Selector{}, errorf("CEL parse error: %s", err.Error())
	}
	var reqs []requirement
	if err := walk(root, &reqs); err != nil {
		return Selector{}, err
	}
	sel := Selector{Field: reqs[0].field, Ranges: make([]Range, len(reqs))}
	for i, r := range reqs {
		if r.field != sel.Field {
			return Selector{}, errorf("all shard ranges must use the same field, got %q and %q", sel.Field, r.field)
		}
		sel.Ranges[i] = r.rng
	}
	return sel, nil
}

type requirement struct {
	field string
	rng   Range
}

// walk appends the requirements of e, an _||_ tree of shardRange calls, in
// order; the first invalid one ends the walk.
func walk(e *expr, reqs *[]requirement) error {
	if e.kind != kindCall {
		return errorf("unexpected expression kind %d; expected shardRange() call or || operator", e.kind)
	}
	switch e.fn {
	case opLogicalOr:
		for _, t := range e.args {
			if err := walk(t, reqs); err != nil {
				return err
			}
		}
		return nil
	case "shardRange":
		field, r, err := shardRange(e)
		if err != nil {
			return err
		}
		*reqs = append(*reqs, requirement{field, r})
		return nil
	}
	return errorf("unsupported function %q; only shardRange() and || are allowed", e.fn)
}

// shardRange validates one shardRange(path, 'start', 'end') call.
func shardRange(call *expr) (string, Range, error) {
	if len(call.args) != 3 {
		return "", Range{}, errorf("shardRange() requires exactly 3 arguments, got %d", len(call.args))
	}
	path, err := fieldPath(call.args[0])
	if err != nil {
		return "", Range{}, errorf("shardRange() first argument: %s", err.Error())
	}
	if path != FieldUID && path != FieldNamespace {
		return "", Range{}, errorf("unsupported field path %q; supported: object.metadata.uid, object.metadata.namespace", path)
	}
	start, err := hexBound(call.args[1], "hexStart")
	if err != nil {
		return "", Range{}, err
	}
	end, err := hexBound(call.args[2], "hexEnd")
	if err != nil {
		return "", Range{}, err
	}
	// Both are 18 characters, or the 19-character 2^64: comparing lengths,
	// then text, is comparing values (sharding.HexLess).
	if !sharding.HexLess(start, end) {
		return "", Range{}, errorf("shard range start %s must be less than end %s", start, end)
	}
	r := Range{Start: mustHex(start), Last: math.MaxUint64}
	if end != maxEnd {
		r.Last = mustHex(end) - 1
	}
	return path, r, nil
}

func mustHex(s string) uint64 {
	v, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil {
		panic("shardselector: validated bound does not parse: " + s)
	}
	return v
}

// fieldPath joins an identifier and its selections (object.metadata.uid).
func fieldPath(e *expr) (string, error) {
	switch e.kind {
	case kindIdent:
		return e.name, nil
	case kindSelect:
		operand, err := fieldPath(e.operand)
		if err != nil {
			return "", err
		}
		return operand + "." + e.name, nil
	}
	return "", fmt.Errorf("expected field path (e.g. object.metadata.uid), got expression kind %d", e.kind)
}

// hexBound checks a bound literal the way the API server does, in the same
// order, and returns its text.
func hexBound(e *expr, name string) (string, error) {
	if e.kind != kindLiteral {
		return "", errorf("%s must be a string literal (e.g. '0xff'), got expression kind %d", name, e.kind)
	}
	s, ok := e.lit.(string)
	if !ok {
		return "", errorf("%s must be a string literal, got %s", name, literalType(e.lit))
	}
	if !strings.HasPrefix(s, "0x") {
		return "", errorf("%s must have '0x' prefix, got %q", name, s)
	}
	hex := s[2:]
	if hex == "" {
		return "", errorf("%s: hex value is required after '0x'", name)
	}
	if len(hex) > 17 {
		return "", errorf("%s: hex value too long (%d chars, max 17): %q", name, len(hex), hex)
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", errorf("%s: invalid hex character %q in %q", name, string(c), s)
		}
	}
	if len(hex) == 17 {
		if s != maxEnd {
			return "", errorf("%s: 17-digit hex value must be '0x10000000000000000' (2^64), got %q", name, s)
		}
	} else if len(hex) != 16 {
		padded := "0x" + strings.Repeat("0", 16-len(hex)) + hex
		return "", errorf("%s must be a 0x-prefixed 16-digit hex value, got %q (did you mean %q?)", name, s, padded)
	}
	return s, nil
}

// literalType names a literal's Go type as cel-go's ref.Val.Value() has it
// (the API server prints it with %T).
func literalType(v any) string {
	switch v.(type) {
	case nullValue:
		return "structpb.NullValue"
	case []byte:
		return "[]uint8"
	}
	return fmt.Sprintf("%T", v)
}
