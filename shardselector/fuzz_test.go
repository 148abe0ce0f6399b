package shardselector

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FuzzParse feeds arbitrary expressions to Parse (the server parses the
// untrusted shardSelector query parameter with it). It must not panic;
// every error matches ErrInvalid; an accepted selector has a supported
// field and ordered ranges, and its String() parses back to itself and
// selects what apimachinery's selector built from the same text selects.
// The seed corpus is testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
	f.Add("x.shardRange(object.metadata.namespace, r'0x0000000000000000', \"\"\"0x10000000000000000\"\"\") || (shardRange(object.metadata.namespace, '\\x30x8000000000000000', '0x9000000000000000'))")
	f.Fuzz(func(t *testing.T, expr string) {
		sel, err := Parse(expr)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q): error %v does not match ErrInvalid", expr, err)
			}
			return
		}
		if (sel.Field != FieldUID && sel.Field != FieldNamespace) || len(sel.Ranges) == 0 {
			t.Fatalf("Parse(%q) = %+v", expr, sel)
		}
		for _, r := range sel.Ranges {
			if r.Start > r.Last {
				t.Fatalf("Parse(%q): range %+v", expr, r)
			}
		}
		again, err := Parse(sel.String())
		if err != nil || again.String() != sel.String() {
			t.Fatalf("Parse(%q).String() = %s does not parse back: %v", expr, sel, err)
		}
		ref, err := refSelector(sel.String())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"", "a", "default", string(types.UID(expr))} {
			obj := &testObject{ObjectMeta: metav1.ObjectMeta{UID: types.UID(v), Namespace: v}}
			want, err := ref.Matches(obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Matches(v); got != want {
				t.Fatalf("%s on %q: %v, apimachinery %v", sel, v, got, want)
			}
		}
	})
}
