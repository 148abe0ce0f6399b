// Package cborwire finds the boundaries of CBOR data items (RFC 8949) in
// what the Kubernetes API server writes with the CBOR serializer — a list
// body, whose items it hands on one by one, and a watch stream, an RFC 8742
// CBOR sequence of events — without decoding them. It checks that the bytes
// are well-formed (RFC 8949 §5.3.1: heads, lengths, indefinite-length
// nesting, break codes), not that they are valid (text strings' UTF-8,
// duplicate map keys, tag contents): the decoder that receives an item does
// that, as it would for a whole body.
package cborwire

import (
	"errors"
	"fmt"
)

// Major types (RFC 8949 §3.1).
const (
	majorUint   = 0
	majorNegInt = 1
	majorBytes  = 2
	majorText   = 3
	majorArray  = 4
	majorMap    = 5
	majorTag    = 6
	majorSimple = 7
)

const (
	aiIndefinite = 31
	breakCode    = 0xff
	// MaxDepth bounds the nesting of arrays, maps, tags and indefinite
	// strings within one item: apimachinery's CBOR decoder allows 10,000
	// levels, as its JSON decoder does.
	MaxDepth = 10000
)

// SelfDescribed is the head of tag 55799, which the API server's encoder
// writes before every top-level data item (RFC 8949 §3.4.6).
var SelfDescribed = []byte{0xd9, 0xd9, 0xf7}

// errShort: the bytes end inside the item.
var errShort = errors.New("cborwire: short")

// ErrTooLarge: an item is, or says it is, larger than the maximum.
var ErrTooLarge = errors.New("cborwire: data item larger than the maximum frame size")

// SyntaxError reports bytes that are not a well-formed data item.
type SyntaxError struct {
	Offset int // within the item
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("cborwire: malformed CBOR at byte %d of a data item: %s", e.Offset, e.Msg)
}

// level is an open container of the item being scanned.
type level struct {
	left   int64 // items still to read in it; -1: indefinite, until a break
	chunks int8  // for an indefinite-length string: its major type (chunks must match); else -1
}

// scanner finds the end of one data item in a byte slice that may grow
// between calls (the same bytes, more of them): scan resumes where it
// stopped.
type scanner struct {
	max   int
	pos   int     // the next head to read (may lie beyond the bytes, inside a string)
	left  int64   // items still to read at the current level; -1: indefinite
	chunk int8    // the current level's string major type, or -1
	stack []level // the enclosing levels
}

func newScanner(max int) scanner { return scanner{max: max, left: 1, chunk: -1} }

// head decodes the head at b[0]: major type, additional information, the
// argument, and the head's length; errShort if b ends inside it.
func head(b []byte) (major, ai byte, arg uint64, n int, err error) {
	if len(b) == 0 {
		return 0, 0, 0, 0, errShort
	}
	major, ai = b[0]>>5, b[0]&0x1f
	switch {
	case ai < 24:
		return major, ai, uint64(ai), 1, nil
	case ai <= 27:
		size := 1 << (ai - 24)
		if len(b) < 1+size {
			return 0, 0, 0, 0, errShort
		}
		for _, c := range b[1 : 1+size] {
			arg = arg<<8 | uint64(c)
		}
		return major, ai, arg, 1 + size, nil
	case ai == aiIndefinite:
		return major, ai, 0, 1, nil
	}
	return 0, 0, 0, 0, &SyntaxError{Msg: fmt.Sprintf("reserved additional information %d", ai)}
}

// scan continues over b, which holds the item from its first byte, and
// returns its length once it is complete; errShort while it is not.
func (s *scanner) scan(b []byte) (int, error) {
	for {
		if s.left == 0 {
			if len(s.stack) == 0 {
				switch {
				case s.pos > s.max:
					return 0, ErrTooLarge
				case s.pos > len(b): // the last string ends beyond b
					return 0, errShort
				}
				return s.pos, nil
			}
			top := s.stack[len(s.stack)-1]
			s.stack = s.stack[:len(s.stack)-1]
			s.left, s.chunk = top.left, top.chunks
			continue
		}
		if s.pos >= len(b) {
			if s.pos > s.max {
				return 0, ErrTooLarge
			}
			return 0, errShort
		}
		if b[s.pos] == breakCode {
			if s.left != -1 {
				return 0, &SyntaxError{s.pos, "break outside an indefinite-length item"}
			}
			s.pos++
			s.left = 0
			continue
		}
		if c := b[s.pos]; s.chunk >= 0 && (c>>5 != byte(s.chunk) || c&0x1f == aiIndefinite) {
			return 0, &SyntaxError{s.pos, "a chunk of an indefinite-length string is not a definite string of its type"}
		}
		major, ai, arg, n, err := head(b[s.pos:])
		if err != nil {
			if se, ok := err.(*SyntaxError); ok {
				se.Offset = s.pos
			}
			return 0, err
		}
		at := s.pos
		s.pos += n
		if s.left > 0 {
			s.left--
		}
		if ai == aiIndefinite {
			switch major {
			case majorBytes, majorText:
				s.open(-1, int8(major))
			case majorArray, majorMap:
				s.open(-1, -1)
			default:
				return 0, &SyntaxError{at, fmt.Sprintf("indefinite length for major type %d", major)}
			}
			if err := s.depth(at); err != nil {
				return 0, err
			}
			continue
		}
		switch major {
		case majorBytes, majorText:
			if arg > uint64(s.max) {
				return 0, ErrTooLarge
			}
			s.pos += int(arg)
		case majorArray, majorMap:
			if major == majorMap {
				if arg > uint64(s.max)/2 {
					return 0, ErrTooLarge
				}
				arg *= 2
			}
			if arg > uint64(s.max) { // every item takes a byte at least
				return 0, ErrTooLarge
			}
			if arg > 0 {
				s.open(int64(arg), -1)
				if err := s.depth(at); err != nil {
					return 0, err
				}
			}
		case majorTag:
			s.open(1, -1)
			if err := s.depth(at); err != nil {
				return 0, err
			}
		case majorSimple:
			if ai == 24 && arg < 32 {
				return 0, &SyntaxError{at, fmt.Sprintf("simple value %d in two bytes", arg)}
			}
		}
		if s.pos > s.max {
			return 0, ErrTooLarge
		}
	}
}

// open enters a container of left items.
func (s *scanner) open(left int64, chunk int8) {
	s.stack = append(s.stack, level{s.left, s.chunk})
	s.left, s.chunk = left, chunk
}

func (s *scanner) depth(at int) error {
	if len(s.stack) > MaxDepth {
		return &SyntaxError{at, fmt.Sprintf("nested deeper than %d levels", MaxDepth)}
	}
	return nil
}

// Len returns the length of the data item that starts at b[0], which must
// be at most max bytes long; io.ErrUnexpectedEOF if b ends inside it.
func Len(b []byte, max int) (int, error) {
	s := newScanner(max)
	n, err := s.scan(b)
	if err == errShort {
		return 0, errUnexpectedEOF
	}
	return n, err
}
