package pbwire

import "slices"

// Field is one field of a message, with offsets into the bytes it was read
// from: the field starts at Start, its value (for WireBytes, the content
// after the length prefix) at Val, and it ends at End. LenAt is where the
// length prefix of a WireBytes field starts (the end of the tag).
type Field struct {
	Num        int32
	WireType   int
	Start, End int
	LenAt, Val int
}

// WireBytes is the wire type of length-delimited fields: strings, bytes,
// embedded messages, packed repeated fields.
const WireBytes = wtBytes

// NextField reads the field at b[i:], validating it as the generated
// unmarshalers do (see next). To read the fields of an embedded message
// with offsets into the outer bytes, pass the outer bytes cut at the
// message's end.
func NextField(b []byte, i int) (Field, error) {
	return next(b, i)
}

// Cutter removes spans from a message's bytes and rewrites the length
// prefixes of the embedded messages that enclose them. The caller walks
// the message with NextField and reports, with offsets into the whole
// message, each embedded message it enters (Open) and leaves (Close), and
// each span to remove (Cut) inside the innermost open one; spans must not
// overlap. AppendTo then writes the shortened message. A Cutter is reused
// across messages (Reset) and is not safe for concurrent use.
type Cutter struct {
	edits []edit
	cut   int // bytes removed so far
}

// edit replaces b[start:end]: with nothing (a cut, length < 0), or with
// the varint length (an open message's length prefix).
type edit struct {
	start, end int
	length     int
	cutBefore  int // for an open message: c.cut when it was opened
}

// Reset forgets every edit.
func (c *Cutter) Reset() { c.edits, c.cut = c.edits[:0], 0 }

// Cuts reports whether any span was cut.
func (c *Cutter) Cuts() bool { return c.cut > 0 }

// Open records that the walk enters the embedded message f (a WireBytes
// field) and returns the token to Close it with.
func (c *Cutter) Open(f Field) int {
	c.edits = append(c.edits, edit{start: f.LenAt, end: f.Val, length: f.End - f.Val, cutBefore: c.cut})
	return len(c.edits) - 1
}

// Close records that the walk left the message opened with token: its
// length prefix is rewritten if anything inside it was cut.
func (c *Cutter) Close(token int) {
	e := &c.edits[token]
	inside := c.cut - e.cutBefore
	if inside == 0 {
		e.end = e.start // nothing to rewrite: an empty edit
		return
	}
	e.length -= inside
	c.cut += (e.end - e.start) - varintLen(uint64(e.length))
}

// Cut removes b[start:end].
func (c *Cutter) Cut(start, end int) {
	c.edits = append(c.edits, edit{start: start, end: end, length: -1})
	c.cut += end - start
}

// AppendTo appends b with the edits applied to dst. The edits are applied
// in the order of their offsets, whatever order they were recorded in.
func (c *Cutter) AppendTo(dst, b []byte) []byte {
	slices.SortStableFunc(c.edits, func(x, y edit) int { return x.start - y.start })
	pos := 0
	for _, e := range c.edits {
		if e.end == e.start {
			continue
		}
		dst = append(dst, b[pos:e.start]...)
		if e.length >= 0 {
			dst = appendVarint(dst, uint64(e.length))
		}
		pos = e.end
	}
	return append(dst, b[pos:]...)
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
