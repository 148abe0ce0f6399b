package shardselector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

// knownHashes are FNV-1a 64 values as the API server computes them
// (k8s.io/apimachinery/pkg/sharding/hash.go: HashField, called by
// sharding.Selector.Matches in selector.go, which kube-apiserver v1.36.3's
// storage and watch cache use), printed with HashField itself.
var knownHashes = []struct {
	value string
	hash  uint64
}{
	{"", 0xcbf29ce484222325},
	{"a", 0xaf63dc4c8601ec8c},
	{"default", 0xebada5168620c5fe},
	{"kube-system", 0xdf65c7bc1d82b35e},
	{"test-uid-123", 0xd0ba679834556c0b},
	{"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", 0x93754b7248a00eb9},
	{"0f0e1d2c-3b4a-4958-8776-a5b4c3d2e1f0", 0xe48aa55e0ae6c812},
}

func TestHashKnownValues(t *testing.T) {
	for _, c := range knownHashes {
		if got := Hash(c.value); got != c.hash {
			t.Errorf("Hash(%q) = %#016x, want %#016x", c.value, got, c.hash)
		}
	}
	g := loadGolden(t)
	if len(g.Hashes) < 50 {
		t.Fatalf("golden file has %d hashes", len(g.Hashes))
	}
	for _, h := range g.Hashes {
		if got := fmt.Sprintf("%016x", Hash(h.Value)); got != h.Hash {
			t.Errorf("Hash(%q) = %s; the API server's HashField gives %s", h.Value, got, h.Hash)
		}
	}
}

// TestHashMatchesAPIMachinery compares Hash with apimachinery's HashField
// on random strings, bytes beyond ASCII included.
func TestHashMatchesAPIMachinery(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got, want := fmt.Sprintf("%016x", Hash(string(b))), sharding.HashField(string(b)); got != want {
			t.Fatalf("Hash(%q) = %s, HashField %s", b, got, want)
		}
	}
}

type testObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (o *testObject) DeepCopyObject() runtime.Object {
	return &testObject{o.TypeMeta, *o.ObjectMeta.DeepCopy()}
}

// TestMatchesLikeAPIMachinery checks Selector.Matches against
// apimachinery's sharding.Selector.Matches (which the API server's watch
// cache and storage call) built from our String(), for random selectors and
// objects, both fields.
func TestMatchesLikeAPIMachinery(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bound := func() uint64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.MaxUint64
		}
		return r.Uint64()
	}
	for range 300 {
		field := []string{FieldUID, FieldNamespace}[r.IntN(2)]
		sel := Selector{Field: field}
		for range 1 + r.IntN(4) {
			a, b := bound(), bound()
			sel.Ranges = append(sel.Ranges, Range{Start: min(a, b), Last: max(a, b)})
		}
		parsed, err := Parse(sel.String())
		if err != nil {
			t.Fatalf("Parse(%s): %v", sel, err)
		}
		if parsed.String() != sel.String() {
			t.Fatalf("round trip %s -> %s", sel, parsed)
		}
		ref, err := refSelector(sel.String())
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			obj := &testObject{ObjectMeta: metav1.ObjectMeta{
				UID:       types.UID(fmt.Sprintf("%08x-%04x-%04x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xffff)),
				Namespace: fmt.Sprintf("ns-%d", r.IntN(1000)),
			}}
			want, err := ref.Matches(obj)
			if err != nil {
				t.Fatal(err)
			}
			value := string(obj.UID)
			if field == FieldNamespace {
				value = obj.Namespace
			}
			if got := parsed.Matches(value); got != want {
				t.Fatalf("%s on %s: Matches %v, apimachinery %v", sel, value, got, want)
			}
		}
	}
}

// refSelector builds apimachinery's selector from the canonical form (as
// the API server's parser would produce it).
func refSelector(s string) (sharding.Selector, error) {
	var reqs []sharding.ShardRangeRequirement
	for part := range strings.SplitSeq(s, " || ") {
		var req sharding.ShardRangeRequirement
		part = strings.NewReplacer("shardRange(", "", ")", "", "'", "", ",", "").Replace(part)
		if _, err := fmt.Sscan(part, &req.Key, &req.Start, &req.End); err != nil {
			return nil, err
		}
		reqs = append(reqs, req)
	}
	return sharding.NewSelector(reqs...), nil
}

// TestUnionCoversOnce: a union of ranges that partitions the space selects
// every hash exactly once across the shards built from it.
func TestUnionCoversOnce(t *testing.T) {
	const shards = 7
	var sels []Selector
	step := uint64(math.MaxUint64/shards + 1)
	for i := range uint64(shards) {
		r := Range{Start: i * step, Last: math.MaxUint64}
		if i < shards-1 {
			r.Last = (i+1)*step - 1
		}
		sel, err := Parse(Selector{Field: FieldUID, Ranges: []Range{r}}.String())
		if err != nil {
			t.Fatal(err)
		}
		sels = append(sels, sel)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 10000 {
		h := r.Uint64()
		if r.IntN(10) == 0 {
			h = []uint64{0, math.MaxUint64, step, step - 1}[r.IntN(4)]
		}
		n := 0
		for _, s := range sels {
			if s.MatchesHash(h) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("hash %#x selected by %d shards", h, n)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"", "empty shard selector is not allowed; omit the parameter for unfiltered lists"},
		{strings.Repeat("x", maxCodePoints+1), "CEL parse error: expression code point size exceeds limit: size: 100001, limit 100000"},
		{"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
			`hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)`},
	} {
		_, err := Parse(tc.expr)
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%.40q) = %v; want %q matching ErrInvalid", tc.expr, err, tc.want)
		}
	}
	// Surrounding space does not count towards the limit (it is trimmed first).
	valid := "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
	if _, err := Parse(strings.Repeat(" ", maxCodePoints) + valid + "\n"); err != nil {
		t.Errorf("padded selector: %v", err)
	}
}

func TestRange(t *testing.T) {
	sel := Selector{Field: FieldUID, Ranges: []Range{{Start: 0, Last: 0x7fffffffffffffff}, {Start: 0xc000000000000000, Last: math.MaxUint64}}}
	want := "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || " +
		"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
	if sel.String() != want {
		t.Errorf("String() = %s", sel)
	}
	for h, in := range map[uint64]bool{0: true, 0x7fffffffffffffff: true, 0x8000000000000000: false, 0xbfffffffffffffff: false, 0xc000000000000000: true, math.MaxUint64: true} {
		if sel.MatchesHash(h) != in {
			t.Errorf("MatchesHash(%#x) = %v", h, !in)
		}
	}
}
