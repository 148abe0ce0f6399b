package cborwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// randomValue builds a random value of nested maps, arrays, strings,
// byte strings, integers, floats, booleans, nil and tags.
func randomValue(r *rand.Rand, depth int) any {
	k := r.Intn(10)
	if depth > 4 && k >= 7 {
		k = r.Intn(7)
	}
	switch k {
	case 0:
		return r.Int63() >> r.Intn(63)
	case 1:
		return -r.Int63() >> r.Intn(63)
	case 2:
		return strings.Repeat("x", r.Intn(300))
	case 3:
		return bytes.Repeat([]byte{byte(r.Intn(256))}, r.Intn(5000))
	case 4:
		return r.Float64()
	case 5:
		return []any{nil, true, false}[r.Intn(3)]
	case 6:
		return cbor.Tag{Number: uint64(r.Intn(100000)), Content: randomValue(r, depth+1)}
	case 7:
		a := make([]any, r.Intn(30))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for i := range r.Intn(30) {
			m[strings.Repeat("k", i+1)] = randomValue(r, depth+1)
		}
		return m
	}
}

// indefinite re-encodes b's top-level array, map or string with an
// indefinite length (strings as two chunks), when it is one.
func indefinite(b []byte) []byte {
	major, ai, arg, n, err := head(b)
	if err != nil || ai == aiIndefinite {
		return b
	}
	switch major {
	case majorArray, majorMap:
		return append(append([]byte{major<<5 | aiIndefinite}, b[n:]...), breakCode)
	case majorBytes, majorText:
		half := arg / 2
		out := []byte{major<<5 | aiIndefinite}
		out = append(appendHead(out, major, half), b[n:n+int(half)]...)
		out = append(appendHead(out, major, arg-half), b[n+int(half):]...)
		return append(out, breakCode)
	}
	return b
}

// TestLenMatchesEncoder: for random well-formed items (fxamacker/cbor's
// encoding, and the same with an indefinite-length top level), Len is the
// item's length, every proper prefix is short, and ReadItem reads a
// sequence of them back through a reader with a small buffer.
func TestLenMatchesEncoder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var seq [][]byte
	for i := range 300 {
		b, err := cbor.Marshal(randomValue(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			b = indefinite(b)
		}
		if err := cbor.Wellformed(b); err != nil && !strings.Contains(err.Error(), "exceeded max") {
			t.Fatalf("test item not well-formed: %v", err)
		}
		n, err := Len(b, len(b))
		if err != nil || n != len(b) {
			t.Fatalf("item %d: Len = %d, %v; want %d", i, n, err, len(b))
		}
		for _, cut := range []int{0, 1, len(b) / 2, len(b) - 1} {
			if cut >= len(b) {
				continue
			}
			if _, err := Len(b[:cut], len(b)); err != io.ErrUnexpectedEOF {
				t.Fatalf("item %d cut at %d of %d: %v, want unexpected EOF", i, cut, len(b), err)
			}
		}
		if _, err := Len(b, len(b)-1); !errors.Is(err, ErrTooLarge) && len(b) > 1 {
			t.Fatalf("item %d with a maximum of one byte less: %v, want ErrTooLarge", i, err)
		}
		seq = append(seq, b)
	}
	br := bufio.NewReaderSize(bytes.NewReader(bytes.Join(seq, nil)), 16)
	for i, want := range seq {
		got, err := ReadItem(br, 1<<26, nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("ReadItem %d: %d bytes, %v; want %d bytes", i, len(got), err, len(want))
		}
	}
	if _, err := ReadItem(br, 1<<26, nil); err != io.EOF {
		t.Fatalf("after the last item: %v, want EOF", err)
	}
}

// TestMalformed: bytes that are not a well-formed item give a SyntaxError
// (or ErrTooLarge), as fxamacker/cbor refuses them.
func TestMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"reserved additional information":    {0x1c},
		"break alone":                        {0xff},
		"break in a definite array":          {0x82, 0x01, 0xff},
		"indefinite integer":                 {0x1f},
		"indefinite tag":                     {0xdf, 0x01},
		"chunk of another type":              {0x5f, 0x61, 'a', 0xff},
		"indefinite chunk":                   {0x5f, 0x5f, 0xff, 0xff},
		"simple value in two bytes below 32": {0xf8, 0x10},
	} {
		if cbor.Wellformed(b) == nil {
			t.Fatalf("%s: fxamacker/cbor accepts % x", name, b)
		}
		var se *SyntaxError
		if _, err := Len(b, 100); !errors.As(err, &se) {
			t.Errorf("%s: Len(% x) = %v, want a SyntaxError", name, b, err)
		}
	}
	for name, b := range map[string][]byte{
		"string longer than the maximum": {0x5a, 0xff, 0xff, 0xff, 0xff},
		"array longer than the maximum":  {0x9b, 0, 0, 0, 1, 0, 0, 0, 0},
		"map longer than the maximum":    {0xba, 0x7f, 0xff, 0xff, 0xff},
	} {
		if _, err := Len(b, 1<<20); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: Len(% x) = %v, want ErrTooLarge", name, b, err)
		}
	}
	deep := append(bytes.Repeat([]byte{0x81}, MaxDepth+1), 0x01)
	if _, err := Len(deep, len(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("%d nested arrays: %v, want a nesting error", MaxDepth+1, err)
	}
}

type recorder struct {
	members []string
	items   [][]byte
	arrays  int
	decline string
}

func (r *recorder) Member(key string, keyItem, value []byte) error {
	if key == r.decline {
		return ErrDecline
	}
	r.members = append(r.members, key+"="+string(value))
	return nil
}
func (r *recorder) Array()              { r.arrays++ }
func (r *recorder) Alloc() []byte       { return nil }
func (r *recorder) Item(b []byte) error { r.items = append(r.items, b); return nil }

// TestReadList: the shapes a list body takes, and what ReadList makes of
// each: members and items handed on, or a NotCanonicalError whose Body
// reads the whole input again, or an error.
func TestReadList(t *testing.T) {
	const tag = "\xd9\xd9\xf7"
	for _, tc := range []struct {
		name, body, decline string
		members             []string
		items               int
		arrays              int
		notCanonical, err   string
	}{
		{name: "sorted keys, byte strings", body: tag + "\xa4\x44kind\x47PodList\x45items\x82\x01\xa0\x48metadata\xa0\x4aapiVersion\x42v1",
			members: []string{"kind=\x47PodList", "metadata=\xa0", "apiVersion=\x42v1"}, items: 2, arrays: 1},
		{name: "text keys, indefinite map and items, no tag", body: "\xbf\x65items\x9f\x01\x02\x03\xff\x64kind\x64List\xff",
			members: []string{"kind=\x64List"}, items: 3, arrays: 1},
		{name: "null items", body: tag + "\xa1\x45items\xf6", arrays: 0},
		{name: "empty items", body: tag + "\xa1\x45items\x80", arrays: 1},
		{name: "declined kind", body: tag + "\xa2\x44kind\x46Status\x45items\x80", decline: "kind", notCanonical: "member \"kind\""},
		{name: "declined after the items", body: tag + "\xa2\x45items\x80\x44kind\x46Status", decline: "kind", arrays: 1, err: "after its items"},
		{name: "not a map", body: tag + "\x82\x01\x02", notCanonical: "top-level major type 4"},
		{name: "integer key", body: "\xa1\x01\x02", notCanonical: "not a definite-length string"},
		{name: "items not an array", body: "\xa1\x45items\x01", notCanonical: "items of major type 0"},
		{name: "two items", body: "\xa2\x45items\x80\x45items\x80", arrays: 1, err: "two items"},
		{name: "data after the list", body: "\xa0\x01", err: "data after"},
		{name: "truncated item", body: "\xa1\x45items\x82\x01\x62a", arrays: 1, items: 1, err: "unexpected EOF"},
		{name: "truncated head", body: "\xa1\x45items\x9b\x00", err: "unexpected EOF"},
		{name: "malformed item", body: "\xa1\x45items\x81\x1c", arrays: 1, err: "reserved additional information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{decline: tc.decline}
			err := ReadList(bufio.NewReaderSize(strings.NewReader(tc.body), 16), 1<<10, h)
			var nc *NotCanonicalError
			switch {
			case tc.notCanonical != "":
				if !errors.As(err, &nc) || !strings.Contains(nc.Reason, tc.notCanonical) {
					t.Fatalf("err = %v, want NotCanonicalError %q", err, tc.notCanonical)
				}
				if all, _ := io.ReadAll(nc.Body); string(all) != tc.body {
					t.Fatalf("Body reads % x, want the whole input % x", all, tc.body)
				}
				return
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			}
			if len(h.items) != tc.items || h.arrays != tc.arrays || strings.Join(h.members, ",") != strings.Join(tc.members, ",") {
				t.Fatalf("members %q, %d items, %d arrays; want %q, %d, %d", h.members, len(h.items), h.arrays, tc.members, tc.items, tc.arrays)
			}
		})
	}
}

// TestParseWatchEvent: the event shapes split, and the ones left to the
// reference decoder.
func TestParseWatchEvent(t *testing.T) {
	obj := "\xa1\x44kind\x43Pod"
	for _, tc := range []struct {
		name, frame, typ string
		ok               bool
	}{
		{"tagged, byte strings", "\xd9\xd9\xf7\xa2\x44type\x45ADDED\x46object" + obj, "ADDED", true},
		{"object first, text strings", "\xa2\x66object" + obj + "\x64type\x65ADDED", "ADDED", true},
		{"a key twice", "\xa2\x44type\x45ADDED\x44type\x45ADDED", "", false},
		{"three members", "\xa3\x44type\x45ADDED\x46object\x01\x41x\x01", "", false},
		{"indefinite map", "\xbf\x44type\x45ADDED\x46object\x01\xff", "", false},
		{"type not a string", "\xa2\x44type\x01\x46object\x01", "", false},
		{"trailing bytes", "\xa2\x44type\x45ADDED\x46object\x01\x00", "", false},
		{"truncated object", "\xa2\x44type\x45ADDED\x46object\x82\x01", "", false},
	} {
		typ, object, ok := ParseWatchEvent([]byte(tc.frame))
		if ok != tc.ok || typ != tc.typ {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, typ, ok, tc.typ, tc.ok)
		}
		if ok && len(object) == 0 {
			t.Errorf("%s: no object bytes", tc.name)
		}
	}
}

// TestDropManagedFields: the entry goes, with metadata's count (a head that
// shrinks from two bytes to one at 24 entries), under the tag or not, in an
// indefinite-length map; objects without it, and bytes that are not one
// well-formed item, stay as they were.
func TestDropManagedFields(t *testing.T) {
	meta := func(n int, withMF bool) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%02d", i)] = i
		}
		if withMF {
			m["managedFields"] = []any{map[string]any{"manager": "x"}}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		obj  map[string]any
	}{
		{"23 other entries", map[string]any{"kind": "Pod", "metadata": meta(23, true), "spec": 1}},
		{"one other entry", map[string]any{"metadata": meta(1, true)}},
		{"only managedFields", map[string]any{"metadata": meta(0, true)}},
	} {
		b, err := cbor.Marshal(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{b, append(append([]byte{}, SelfDescribed...), b...)} {
			out, ok := DropManagedFields(bytes.Clone(in))
			var got map[string]any
			if !ok || cbor.Unmarshal(out, &got) != nil {
				t.Fatalf("%s: ok=%v, % x", tc.name, ok, out)
			}
			want := maps.Clone(tc.obj)
			wantMeta := maps.Clone(tc.obj["metadata"].(map[string]any))
			delete(wantMeta, "managedFields")
			want["metadata"] = wantMeta
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: got %v, want %v", tc.name, got, want)
			}
		}
	}
	indef := []byte("\xbf\x48metadata\xbf\x44name\x41a\x4dmanagedFields\x80\xff\xff")
	if out, ok := DropManagedFields(bytes.Clone(indef)); !ok || string(out) != "\xbf\x48metadata\xbf\x44name\x41a\xff\xff" {
		t.Errorf("indefinite-length metadata: ok=%v, % x", ok, out)
	}
	none := []byte("\xa1\x48metadata\xa1\x44name\x41a")
	if out, ok := DropManagedFields(bytes.Clone(none)); !ok || !bytes.Equal(out, none) {
		t.Errorf("without managedFields: ok=%v, % x", ok, out)
	}
	for _, bad := range [][]byte{none[:len(none)-1], append(bytes.Clone(none), 0), {0xa1, 0x01, 0x02}} {
		if out, ok := DropManagedFields(bytes.Clone(bad)); ok || !bytes.Equal(out, bad) {
			t.Errorf("% x: ok=%v, % x; want unchanged, not ok", bad, ok, out)
		}
	}
}
