// Command gen records kube-apiserver v1.36.3's verdict on shard selector
// expressions in ../golden.json.gz, for the shardselector package's tests:
// for each expression either the parsed field, ranges and String(), or
// the error message, from k8s.io/apiserver/pkg/sharding.Parse; and FNV-1a
// hashes from k8s.io/apimachinery/pkg/sharding.HashField.
//
// The expressions are hand-written cases, nesting-limit boundaries,
// deterministic random mutations of valid selectors, and random CEL
// expressions used as receivers and arguments of shardRange.
//
//	cd shardselector/testdata/gen && go run . | gzip -9n > ../golden.json.gz
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apiserver/pkg/sharding"
)

type entry struct {
	Expr   string      `json:"expr"`
	Error  string      `json:"error,omitempty"`
	Field  string      `json:"field,omitempty"`
	Ranges [][2]string `json:"ranges,omitempty"`
	String string      `json:"string,omitempty"`
}

type hash struct {
	Value string `json:"value"`
	Hash  string `json:"hash"`
}

type golden struct {
	Source string  `json:"source"`
	Hashes []hash  `json:"hashes"`
	Cases  []entry `json:"cases"`
}

const (
	lo  = "'0x0000000000000000'"
	mid = "'0x8000000000000000'"
	hi  = "'0x10000000000000000'"
)

func sr(field, a, b string) string { return "shardRange(" + field + ", " + a + ", " + b + ")" }

var seeds = []string{
	// Valid forms.
	sr("object.metadata.uid", lo, mid),
	sr("object.metadata.uid", mid, hi),
	sr("object.metadata.uid", lo, hi),
	sr("object.metadata.namespace", "'0x00000000000000aa'", "'0x00000000000000ff'"),
	sr("object.metadata.uid", lo, mid) + " || " + sr("object.metadata.uid", mid, hi),
	sr("object.metadata.uid", lo, "'0x4000000000000000'") + " || " + sr("object.metadata.uid", "'0x4000000000000000'", mid) + " || " + sr("object.metadata.uid", mid, "'0xc000000000000000'") + " || " + sr("object.metadata.uid", "'0xc000000000000000'", hi),
	sr("object.metadata.uid", "'0xc000000000000000'", hi) + " || " + sr("object.metadata.uid", lo, "'0x1000000000000000'"),
	sr("object.metadata.uid", lo, mid) + " || " + sr("object.metadata.uid", lo, mid),
	"shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')",
	"  shardRange( object.metadata.uid ,  '0x0000000000000000' ,  '0x8000000000000000' )  ",
	"\t\nshardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\r\n",
	"\vshardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\u00a0",
	"(shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'))",
	"((shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')) || (shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')))",
	"shardRange((object.metadata).uid, ('0x0000000000000000'), '0x8000000000000000')",
	"shardRange((object).metadata.uid, '0x0000000000000000', ((('0x8000000000000000'))))",
	"shardRange(object.metadata.uid, \"0x0000000000000000\", \"0x8000000000000000\")",
	"shardRange(object.metadata.uid, '''0x0000000000000000''', \"\"\"0x8000000000000000\"\"\")",
	"shardRange(object.metadata.uid, r'0x0000000000000000', R\"0x8000000000000000\")",
	"shardRange(object.metadata.uid, r'''0x0000000000000000''', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '\\x30x0000000000000000', '\\u0030x8000000000000000')",
	"shardRange(object.metadata.uid, '\\060x0000000000000000', '\\U00000030x8000000000000000')",
	"shardRange(object.metadata.uid, '0x000000000000000\\x30', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') // comment",
	"// leading comment\nshardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, // mid comment\n'0x0000000000000000', '0x8000000000000000')",
	"shardRange(object\n.metadata\n.uid, '0x0000000000000000', '0x8000000000000000')",
	"foo.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"1.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"-1.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"'x'.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"[1, 2,].shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"[,].shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"{}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"{'a': 1,}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"a.b.C{f: 1, g: 2,}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	".a.B{}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(a ? b : c).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(a + b * c > d && e in f || !g).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x[0].y.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || x.shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
	"shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
	"if.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x.if(1).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"9223372036854775807.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"-9223372036854775808.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(--9223372036854775808).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"9223372036854775808.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"18446744073709551615u.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"18446744073709551616u.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"0x7fffffffffffffff.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"0x8000000000000000.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"-0x8000000000000000.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"0xffffffffffffffffu.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"1e308.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"1e309.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(1e-400).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(.5).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(1.5e+3).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(!!-1).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(- - 1).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(b'x').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(b'\\xff\\377').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(b'\\u0041').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('\\uD800').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('\\U00110000').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('\\q').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('''a\nb''').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('a\nb').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('''abc').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(''''a'''').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(true && false || null).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"has(x).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x.all(y, y > 0).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x.?y.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x[?0].shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"[?x].shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"{?x: 1}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"A{?x: 1}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x.`y`.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"A{`x`: 1}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"x.namespace.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"namespace.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"A{namespace: 1}.shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(x.true).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(x.in).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(1 < 2 < 3 == 4 != 5 >= 6 <= 7 > 8 in 9).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(1 + 2 - 3 * 4 / 5 % 6).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(a ? b ? c : d : e ? f : g).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"f(,).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"f(a,).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(1.).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(1.a).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(0x).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(0X1).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(1u).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(-1u).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(x.5).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(rb'x').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(br'x\\y').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(r'x\\y').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(\"a\\'b\\\"c\\`d\\?e\\a\\b\\f\\n\\r\\t\\v\\\\\").shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('é').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"('\\xe9').shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(é).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"($).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(a = b).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(a & b).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(a | b).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(!-a).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(-!a).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(.a.b).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(.if).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	".if(1).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(.A{}).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(if.A{}).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"(a.b.{}).shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",

	// Errors of the walker and of the bounds.
	"",
	"   ",
	"\u00a0",
	"shardRange(object.metadata.uid, '0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '8000000000000000')",
	"shardRange(object.metadata.uid, '0x', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x')",
	"shardRange(object.metadata.name, '0x00', '0x80')",
	"shardRange(object.metadata.labels, '0x00', '0x80')",
	"shardRange(metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(.object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid(), '0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata['uid'], '0x0000000000000000', '0x8000000000000000')",
	"shardRange(f(x).uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange('object.metadata.uid', '0x0000000000000000', '0x8000000000000000')",
	"shardRange(-1, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(--1, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(---1, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(- - -1, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(!1, '0x0000000000000000', '0x8000000000000000')",
	"shardRange([], '0x0000000000000000', '0x8000000000000000')",
	"shardRange({}, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(A{}, '0x0000000000000000', '0x8000000000000000')",
	"invalidFunc(object.metadata.uid, '0x00', '0x80')",
	".shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"ShardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x000000000000000000', '0x80')",
	"shardRange(object.metadata.uid, '0x0g', '0x80')",
	"shardRange(object.metadata.uid, '0x000000000000000G', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x00000000000000é0', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x1000000000000000a')",
	"shardRange(object.metadata.uid, '0x10000000000000000', '0x10000000000000000')",
	"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0xff')",
	"shardRange(object.metadata.uid, '0X0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0xffffffffffffffff', '0x0000000000000000')",
	"shardRange(object.metadata.uid, '0xffffffffffffffff', '0x10000000000000000')",
	"shardRange(object.metadata.uid, ' 0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0', '0x8') && shardRange(object.metadata.uid, '0x8', '0xf')",
	"shardRange(object.metadata.uid, 0, 8)",
	"shardRange(object.metadata.uid, 0x0, 0x8)",
	"shardRange(object.metadata.uid, 0u, '0x8000000000000000')",
	"shardRange(object.metadata.uid, 1.5, '0x8000000000000000')",
	"shardRange(object.metadata.uid, true, '0x8000000000000000')",
	"shardRange(object.metadata.uid, null, '0x8000000000000000')",
	"shardRange(object.metadata.uid, b'0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, x, '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', x.y)",
	"shardRange(object.metadata.uid, '0x0000000000000000', ['0x8000000000000000'])",
	"shardRange(object.metadata.uid, '0x0000000000000000' + '', '0x8000000000000000')",
	"object.metadata.uid > '0x0'",
	"shardRange(object.metadata.uid, '0x0')",
	"shardRange()",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000', '0x1')",
	"shardRange(object.metadata.uid, hex(0), '0x8')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000') || shardRange(object.metadata.uid, '0x0', '0x1')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || true",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || object",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') ||",
	"|| shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')) ",
	"(shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"true ? shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') : shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
	"!shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"!!shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"--shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
	"[shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')]",
	"shardRange",
	"object.metadata.uid",
	"'0x0000000000000000'",
	"1",
	"null",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000'",
	"shardRange(object.metadata.uid, '0x0000000000000000, '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') \u00a0",
	"shardRange(object.metadata.uid,\u00a0'0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid,\v'0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid,\f'0x0000000000000000', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\x00",
	"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \xff",
	"shardRange(object.metadata.uid, '0x00000000000000\xff', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '\\x', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '\\', '0x8000000000000000')",
	"shardRange(object.metadata.uid, '0x000000000000000\\400', '0x8000000000000000')",
	"shardRange(object.metadata.uid, \"0x0000000000000000', '0x8000000000000000')",
}

// nested builds prefix^n + core + suffix^n.
func nested(prefix, core, suffix string, n int) string {
	return strings.Repeat(prefix, n) + core + strings.Repeat(suffix, n)
}

func limits() []string {
	valid := sr("object.metadata.uid", lo, mid)
	var out []string
	for _, n := range []int{83, 84, 124, 125, 126, 166, 167, 248, 249, 250, 251} {
		out = append(out,
			nested("(", valid, ")", n),
			nested("(", "x", ")", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			"x"+strings.Repeat(".a", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			"(1"+strings.Repeat(" + 1", n)+").shardRange(object.metadata.uid, "+lo+", "+mid+")",
			"(1"+strings.Repeat(" * 1 + 1", n/2)+").shardRange(object.metadata.uid, "+lo+", "+mid+")",
			"(1"+strings.Repeat(" < 1", n)+").shardRange(object.metadata.uid, "+lo+", "+mid+")",
			"("+strings.Repeat("a ? b : ", n)+"c).shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("f(", "1", ")", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("x.f(", "1", ")", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("[", "1", "]", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("x[", "1", "]", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("{1: ", "1", "}", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("A{f: ", "1", "}", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("(a.b + ", "1", ")", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("(a.b < x[", "1", "])", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("x.y.f(", "1", ")", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			nested("!(", "1", ")", n)+".shardRange(object.metadata.uid, "+lo+", "+mid+")",
			strings.Repeat("-", n)+"1 > 0 ? 1 : 2",
			strings.Repeat("!", n)+"x",
			strings.TrimSuffix(strings.Repeat(valid+" || ", n), " || "),
		)
	}
	return out
}

// randomCEL returns a random CEL expression of bounded depth: mostly valid,
// sometimes not (reserved words, optional syntax, odd literals).
func randomCEL(r *rand.Rand, depth int) string {
	atoms := []string{
		"x", "y.z", ".x", "if", "namespace", "1", "-1", "0x1F", "1u", "0x1u", "1.5", "-2.5e3", ".5", "1e9",
		"'s'", "\"s\"", "'''s'''", "r'\\s'", "b'\\xff'", "B\"x\"", "br'x'", "true", "false", "null",
		"9223372036854775808", "-9223372036854775808", "'\\u00e9'", "'\\400'", "`x`", "x.?y", "[?1]", "a..b",
	}
	if depth <= 0 || r.IntN(4) == 0 {
		return atoms[r.IntN(len(atoms))]
	}
	sub := func() string { return randomCEL(r, depth-1) }
	switch r.IntN(16) {
	case 0:
		return sub() + " " + []string{"||", "&&", "==", "!=", "<", "<=", ">", ">=", "in", "+", "-", "*", "/", "%"}[r.IntN(14)] + " " + sub()
	case 1:
		return sub() + " ? " + sub() + " : " + sub()
	case 2:
		return "(" + sub() + ")"
	case 3:
		return []string{"!", "-", "!!", "--", "- "}[r.IntN(5)] + sub()
	case 4:
		return sub() + "." + []string{"a", "b", "if", "namespace", "true", "`a`", "?a", "1"}[r.IntN(8)]
	case 5:
		return sub() + ".f(" + sub() + ", " + sub() + ")"
	case 6:
		return "g(" + sub() + ")"
	case 7:
		return sub() + "[" + sub() + "]"
	case 8:
		return "[" + sub() + ", " + sub() + []string{"", ",", ",,"}[r.IntN(3)] + "]"
	case 9:
		return "{" + sub() + ": " + sub() + []string{"", ","}[r.IntN(2)] + "}"
	case 10:
		return "a.B{f: " + sub() + []string{"", ","}[r.IntN(2)] + "}"
	case 11:
		return sub() + " // c\n"
	case 12:
		return "[]"
	case 13:
		return "{}"
	case 14:
		return sub() + sub()
	default:
		return sub()
	}
}

var fragments = []string{
	" ", "(", ")", "'", "\"", "\\", "||", "&&", "|", ".", ",", "-", "!", "?", ":", "[", "]", "{", "}",
	"0", "1", "x", "f", "F", "u", "r", "b", "`", "//", "\n", "\r", "\t", "'''", "\"\"\"",
	"0x0000000000000000", "0x10000000000000000", "shardRange", "object", "metadata", "uid", "namespace",
	"in", "true", "null", "1.5", "1e3", "\\x30", "\\u0030", "\\060", "é", "\u00a0", "\x00",
}

func mutate(r *rand.Rand, s string) string {
	b := []byte(s)
	for range 1 + r.IntN(3) {
		pos := 0
		if len(b) > 0 {
			pos = r.IntN(len(b) + 1)
		}
		switch r.IntN(4) {
		case 0, 1: // insert
			f := fragments[r.IntN(len(fragments))]
			b = append(b[:pos], append([]byte(f), b[pos:]...)...)
		case 2: // delete a span
			if len(b) > 0 {
				end := min(len(b), pos+1+r.IntN(4))
				b = append(b[:min(pos, len(b))], b[end:]...)
			}
		case 3: // replace one byte
			if pos < len(b) {
				f := fragments[r.IntN(len(fragments))]
				b = append(b[:pos], append([]byte(f), b[pos+1:]...)...)
			}
		}
	}
	return string(b)
}

func main() {
	seed := flag.Uint64("seed", 5866, "random seed")
	scale := flag.Int("scale", 1, "multiplies the number of random cases")
	flag.Parse()
	r := rand.New(rand.NewPCG(*seed, 136))
	exprs := append([]string{}, seeds...)
	exprs = append(exprs, limits()...)
	var valid []string
	for _, s := range seeds {
		if _, err := sharding.Parse(s); err == nil {
			valid = append(valid, s)
		}
	}
	for range 2500 * *scale {
		exprs = append(exprs, mutate(r, valid[r.IntN(len(valid))]))
	}
	bounds := []string{lo, mid, hi, "'0x00000000000000ff'", "\"0x0000000000000001\""}
	for range 1500 * *scale {
		recv := randomCEL(r, 4)
		b1, b2 := bounds[r.IntN(3)], bounds[r.IntN(len(bounds))]
		switch r.IntN(4) {
		case 0:
			exprs = append(exprs, "("+recv+").shardRange(object.metadata.uid, "+b1+", "+b2+")")
		case 1:
			exprs = append(exprs, recv+".shardRange(object.metadata.uid, "+b1+", "+b2+")")
		case 2:
			exprs = append(exprs, "shardRange(object.metadata.uid, "+b1+", "+b2+") || "+recv)
		default:
			exprs = append(exprs, "shardRange("+recv+", "+b1+", "+b2+")")
		}
	}

	g := golden{Source: "k8s.io/apiserver@v0.36.3/pkg/sharding.Parse, k8s.io/apimachinery@v0.36.3/pkg/sharding.HashField"}
	seen := map[string]bool{}
	for _, e := range exprs {
		if seen[e] {
			continue
		}
		seen[e] = true
		c := entry{Expr: e}
		sel, err := sharding.Parse(e)
		if err != nil {
			c.Error = err.Error()
		} else {
			for _, req := range sel.Requirements() {
				c.Field = req.Key
				c.Ranges = append(c.Ranges, [2]string{req.Start, req.End})
			}
			c.String = sel.String()
		}
		g.Cases = append(g.Cases, c)
	}
	for i := range 64 {
		v := fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, 0x8000|r.Uint32()&0x3fff, r.Uint64()&0xffffffffffff)
		switch i {
		case 0:
			v = ""
		case 1:
			v = "default"
		case 2:
			v = "kube-system"
		}
		g.Hashes = append(g.Hashes, hash{Value: v, Hash: apisharding.HashField(v)})
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(g); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
