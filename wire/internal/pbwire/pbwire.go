// Package pbwire reads Kubernetes protobuf encodings at the wire level: the
// length-prefixed frames of a watch stream, the "k8s\x00" envelope
// (runtime.Unknown) around an object, a metav1.WatchEvent, the items of a
// list read from a stream, and the excision of metadata.managedFields from
// an object's bytes.
//
// Everything here follows the generated (gogo) unmarshalers of k8s.io/api
// and k8s.io/apimachinery: fields may come in any order and repeat, unknown
// fields are skipped with the same validation, and an embedded message that
// repeats is merged. Functions named Parse… accept only the canonical shape
// the API server writes and report ok=false for anything else, so that the
// caller can fall back to apimachinery's decoder for that input.
package pbwire

import (
	"errors"
	"fmt"
	"io"
)

// Magic is the prefix of an enveloped protobuf object.
const Magic = "k8s\x00"

// Wire types.
const (
	wtVarint  = 0
	wtFixed64 = 1
	wtBytes   = 2
	wtStart   = 3
	wtEnd     = 4
	wtFixed32 = 5
)

var (
	// ErrFrameTooLarge reports a frame, item or object longer than the
	// configured maximum; nothing of that size was allocated.
	ErrFrameTooLarge = errors.New("pbwire: frame larger than the maximum frame size")
	errOverflow      = errors.New("pbwire: varint overflows 64 bits")
	errNegative      = errors.New("pbwire: negative length")
	errEndGroup      = errors.New("pbwire: end group without start group")
)

// uvarint decodes a varint at b[i:] the way the generated unmarshalers do:
// at most 10 bytes, bits beyond 64 dropped.
func uvarint(b []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, 0, errOverflow
		}
		if i >= len(b) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
}

// next reads the field at b[i:]. Groups are skipped as a whole, as the
// generated code's skip function does; an end-group tag outside a group is
// an error.
func next(b []byte, i int) (Field, error) {
	// Most fields of an object have a tag of one or two bytes and are
	// either length-delimited with a length of one or two bytes, or a
	// varint of one byte: read those here, with the result nextSlow gives
	// them.
	if i+1 < len(b) {
		t, j := int(b[i]), i+1 // the tag, and where it ends
		if t >= 0x80 {
			if b[j] >= 0x80 {
				return nextSlow(b, i) // a tag of three bytes or more
			}
			t, j = t&0x7f|int(b[j])<<7, j+1
		}
		if t < 0x4000 && t >= 1<<3 && j < len(b) { // field number ≥ 1
			switch t & 7 {
			case wtBytes:
				if n := int(b[j]); n < 0x80 {
					if end := j + 1 + n; end <= len(b) {
						return Field{Num: int32(t >> 3), WireType: wtBytes, Start: i, LenAt: j, Val: j + 1, End: end}, nil
					}
				} else if j+1 < len(b) && b[j+1] < 0x80 {
					if end := j + 2 + (n & 0x7f) + int(b[j+1])<<7; end <= len(b) {
						return Field{Num: int32(t >> 3), WireType: wtBytes, Start: i, LenAt: j, Val: j + 2, End: end}, nil
					}
				}
			case wtVarint:
				if b[j] < 0x80 {
					return Field{Num: int32(t >> 3), WireType: wtVarint, Start: i, LenAt: j, Val: j, End: j + 1}, nil
				}
			}
		}
	}
	return nextSlow(b, i)
}

// nextSlow is next for any field.
func nextSlow(b []byte, i int) (Field, error) {
	f := Field{Start: i}
	tag, i, err := uvarint(b, i)
	if err != nil {
		return f, err
	}
	f.Num, f.WireType, f.LenAt = int32(tag>>3), int(tag&7), i
	if f.WireType == wtEnd {
		return f, errEndGroup
	}
	if f.Num <= 0 {
		return f, fmt.Errorf("pbwire: illegal tag %d (wire type %d)", f.Num, tag)
	}
	if f.WireType != wtBytes {
		f.Val = i
		f.End, err = skipValue(b, i, f.WireType)
		return f, err
	}
	n, i, err := uvarint(b, i)
	if err != nil {
		return f, err
	}
	if int(n) < 0 {
		return f, errNegative
	}
	f.Val = i
	f.End, err = bound(b, i, int(n))
	return f, err
}

// skipValue returns the end of a value of wire type wt starting at b[i:].
func skipValue(b []byte, i, wt int) (int, error) {
	switch wt {
	case wtVarint:
		_, j, err := uvarint(b, i)
		return j, err
	case wtFixed64:
		return bound(b, i, 8)
	case wtFixed32:
		return bound(b, i, 4)
	case wtBytes:
		n, j, err := uvarint(b, i)
		if err != nil {
			return 0, err
		}
		if int(n) < 0 {
			return 0, errNegative
		}
		return bound(b, j, int(n))
	case wtStart:
		depth := 1
		for depth > 0 {
			tag, j, err := uvarint(b, i)
			if err != nil {
				return 0, err
			}
			switch wt := int(tag & 7); wt {
			case wtStart:
				depth++
				i = j
			case wtEnd:
				depth--
				i = j
			default:
				if i, err = skipValue(b, j, wt); err != nil {
					return 0, err
				}
			}
		}
		return i, nil
	default:
		return 0, fmt.Errorf("pbwire: illegal wire type %d", wt)
	}
}

func bound(b []byte, i, n int) (int, error) {
	if i+n < 0 {
		return 0, errNegative
	}
	if i+n > len(b) {
		return 0, io.ErrUnexpectedEOF
	}
	return i + n, nil
}

// appendVarint appends v as a varint.
func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
