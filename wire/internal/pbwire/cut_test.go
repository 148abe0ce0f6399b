package pbwire_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// msg encodes length-delimited fields: pairs of field number and value.
func msg(fields ...any) []byte {
	var b []byte
	for i := 0; i < len(fields); i += 2 {
		v := fields[i+1].([]byte)
		b = binary.AppendUvarint(b, uint64(fields[i].(int))<<3|pbwire.WireBytes)
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// TestCutter: cutting fields two messages deep rewrites both enclosing
// length prefixes, also when they get shorter (200 bytes cut: two-byte
// varints become one-byte), and edits recorded out of order apply in
// order; nothing cut leaves the bytes as they were. (A cut belongs to the
// innermost message open when it is recorded.)
func TestCutter(t *testing.T) {
	big := bytes.Repeat([]byte{'z'}, 200)
	in := msg(1, msg(1, []byte("aa"), 2, msg(3, big, 4, []byte("x")), 5, big), 2, []byte("tail"))
	want := msg(1, msg(1, []byte("aa"), 2, msg(4, []byte("x"))), 2, []byte("tail"))

	var c pbwire.Cutter
	outer, err := pbwire.NextField(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	tok := c.Open(outer)
	end := outer.End
	var fields []pbwire.Field
	for i := outer.Val; i < end; {
		f, err := pbwire.NextField(in[:end], i)
		if err != nil {
			t.Fatal(err)
		}
		fields = append(fields, f)
		i = f.End
	}
	c.Cut(fields[2].Start, fields[2].End) // recorded before the inner message, which comes first
	inner := fields[1]
	itok := c.Open(inner)
	f3, err := pbwire.NextField(in[:inner.End], inner.Val)
	if err != nil {
		t.Fatal(err)
	}
	c.Cut(f3.Start, f3.End)
	c.Close(itok)
	c.Close(tok)
	if !c.Cuts() {
		t.Fatal("Cuts() = false after cuts")
	}
	if got := c.AppendTo(nil, in); !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}

	c.Reset()
	tok = c.Open(outer)
	c.Close(tok)
	if c.Cuts() {
		t.Fatal("Cuts() = true without cuts")
	}
	if got := c.AppendTo(nil, in); !bytes.Equal(got, in) {
		t.Fatal("no cut changed the bytes")
	}
}
