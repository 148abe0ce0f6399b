package pbscan

import "testing"

func TestField(t *testing.T) {
	// Field 1 "one" and field 2 "two", both length-delimited (wire type 2).
	msg := []byte("\x0a\x03one\x12\x03two")
	for _, tc := range []struct {
		name string
		b    []byte
		num  uint64
		want string
		ok   bool
	}{
		{"first", msg, 1, "one", true},
		{"second", msg, 2, "two", true},
		{"absent", msg, 3, "", false},
		{"cut short", msg[:len(msg)-1], 2, "", false},
		{"not length-delimited", []byte{0x08, 7}, 1, "", false},
	} {
		got, ok := Field(tc.b, tc.num)
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("%s: Field = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
