package pbwire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// FrameReader reads the frames of a protobuf watch stream: each a 4-byte
// big-endian length followed by that many bytes (a metav1.WatchEvent).
// Not safe for concurrent use.
type FrameReader struct {
	r   io.Reader
	max int
	hdr [4]byte
}

// NewFrameReader reads frames of at most max bytes from r.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	return &FrameReader{r: r, max: max}
}

// Next reads the next frame into buf, reallocating it when it is too small,
// and returns the frame. It returns io.EOF when the stream ends between
// frames, io.ErrUnexpectedEOF when it ends inside one, an error wrapping
// ErrFrameTooLarge (before reading or allocating anything of the frame's
// size) when a frame is longer than max, and any other error of the
// underlying reader unchanged.
func (f *FrameReader) Next(buf []byte) ([]byte, error) {
	if _, err := io.ReadFull(f.r, f.hdr[:]); err != nil {
		return nil, err // io.EOF before the first byte, else io.ErrUnexpectedEOF or the reader's error
	}
	n := binary.BigEndian.Uint32(f.hdr[:])
	if uint64(n) > uint64(f.max) {
		return nil, fmt.Errorf("%w: %d bytes, maximum %d", ErrFrameTooLarge, n, f.max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(f.r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// NotCanonicalError is returned by ReadList when the list's envelope is not
// in the canonical shape, or the handler's Kind declined it, before any item
// was handed on. Prefix holds every byte ReadList consumed, so that the
// caller can decode Prefix followed by the rest of the stream another way.
type NotCanonicalError struct {
	Prefix []byte
}

func (e *NotCanonicalError) Error() string { return "pbwire: list envelope not in canonical form" }

// ErrDecline, returned by ListHandler.Kind, makes ReadList return a
// NotCanonicalError.
var ErrDecline = errors.New("pbwire: list kind declined")

// ListHandler receives the parts of a list as ReadList finds them. Its
// methods run on ReadList's goroutine.
type ListHandler interface {
	// Kind is called once, before anything else, with the envelope's type.
	// ErrDecline makes ReadList stop with a NotCanonicalError.
	Kind(apiVersion, kind []byte) error
	// ListMeta receives the bytes of a metav1.ListMeta, valid during the
	// call only. It may be called several times (the fields merge) or not
	// at all.
	ListMeta(b []byte) error
	// Alloc returns a buffer of length n for the next item.
	Alloc(n int) []byte
	// Item receives an item's message in a buffer from Alloc; the handler
	// owns it from then on.
	Item(b []byte) error
}

// Field numbers of a list message (every Kubernetes XxxList) and of
// runtime.Unknown.
const (
	fieldListMeta  = 1
	fieldItems     = 2
	fieldTypeMeta  = 1
	fieldRaw       = 2
	fieldEncoding  = 3
	fieldMediaType = 4
)

// ReadList reads an enveloped list message — Magic, then a runtime.Unknown
// whose raw field is an XxxList — from br as it arrives, handing each item
// to h before reading the next. Items and the list's metadata longer than
// max bytes are an error wrapping ErrFrameTooLarge. The canonical envelope
// (TypeMeta, then raw) is required; otherwise, or when h.Kind declines, it
// returns a *NotCanonicalError before any item. Inside the list, fields may
// come in any order and unknown fields are skipped; after it, an unknown
// field is skipped but a second TypeMeta or raw field is an error (it would
// replace what was already handed on). A stream that ends inside a field is
// io.ErrUnexpectedEOF.
func ReadList(br *bufio.Reader, max int, h ListHandler) error {
	s := stream{br: br, record: true}
	var magic [4]byte
	if err := s.full(magic[:]); err != nil {
		return eofIsUnexpected(err)
	}
	if string(magic[:]) != Magic {
		return s.notCanonical()
	}
	tag, err := s.uvarint()
	if err != nil {
		return eofIsUnexpected(err)
	}
	if tag != fieldTypeMeta<<3|wtBytes {
		return s.notCanonical()
	}
	tm, err := s.bytes(max, nil)
	if err != nil {
		return err
	}
	apiVersion, kind, ok := parseTypeMeta(tm)
	if !ok {
		return s.notCanonical()
	}
	if err := h.Kind(apiVersion, kind); err != nil {
		if err == ErrDecline {
			return s.notCanonical()
		}
		return err
	}
	if tag, err = s.uvarint(); err != nil {
		return eofIsUnexpected(err)
	}
	if tag != fieldRaw<<3|wtBytes {
		return s.notCanonical()
	}
	rawLen, err := s.length()
	if err != nil {
		return err
	}
	s.record, s.prefix = false, nil
	if err := readListMessage(&s, s.n+rawLen, max, h); err != nil {
		return err
	}
	// The rest of the envelope.
	for {
		num, wt, err := s.tag()
		if err == io.EOF && s.atBoundary {
			return nil
		}
		switch {
		case err != nil:
			return eofIsUnexpected(err)
		case num == fieldTypeMeta || num == fieldRaw:
			return fmt.Errorf("pbwire: list envelope repeats field %d after the list", num)
		case (num == fieldEncoding || num == fieldMediaType) && wt != wtBytes:
			return fmt.Errorf("pbwire: wrong wire type %d for field %d of the envelope", wt, num)
		}
		if err := s.skip(wt, -1); err != nil {
			return err
		}
	}
}

// readListMessage reads the fields of a list message up to stream offset
// end.
func readListMessage(s *stream, end int64, max int, h ListHandler) error {
	for s.n < end {
		num, wt, err := s.tag()
		switch {
		case err != nil:
			return eofIsUnexpected(err)
		case (num == fieldListMeta || num == fieldItems) && wt != wtBytes:
			return fmt.Errorf("pbwire: wrong wire type %d for field %d of the list", wt, num)
		case num == fieldListMeta:
			b, err := s.boundedBytes(end, max, nil)
			if err != nil {
				return err
			}
			if err := h.ListMeta(b); err != nil {
				return err
			}
		case num == fieldItems:
			b, err := s.boundedBytes(end, max, h.Alloc)
			if err != nil {
				return err
			}
			if err := h.Item(b); err != nil {
				return err
			}
		default:
			if err := s.skip(wt, end); err != nil {
				return err
			}
		}
	}
	if s.n > end {
		return io.ErrUnexpectedEOF // a field of the list ran past its end
	}
	return nil
}

// stream reads protobuf values from a bufio.Reader, counting the bytes it
// consumed and, while record is set, keeping them in prefix.
type stream struct {
	br         *bufio.Reader
	n          int64
	record     bool
	prefix     []byte
	atBoundary bool // the last uvarint hit EOF before its first byte
	scratch    []byte
}

func (s *stream) notCanonical() error { return &NotCanonicalError{Prefix: s.prefix} }

func (s *stream) full(b []byte) error {
	k, err := io.ReadFull(s.br, b)
	s.n += int64(k)
	if s.record {
		s.prefix = append(s.prefix, b[:k]...)
	}
	return err
}

func (s *stream) uvarint() (uint64, error) {
	var v uint64
	s.atBoundary = false
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errOverflow
		}
		c, err := s.br.ReadByte()
		if err != nil {
			if err == io.EOF && shift == 0 {
				s.atBoundary = true
				return 0, io.EOF
			}
			return 0, eofIsUnexpected(err)
		}
		s.n++
		if s.record {
			s.prefix = append(s.prefix, c)
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// tag reads a field's tag, refusing an end-group tag and field numbers
// below 1 as the generated unmarshalers do.
func (s *stream) tag() (int32, int, error) {
	tag, err := s.uvarint()
	if err != nil {
		return 0, 0, err
	}
	num, wt := int32(tag>>3), int(tag&7)
	switch {
	case wt == wtEnd:
		return 0, 0, errEndGroup
	case num <= 0:
		return 0, 0, fmt.Errorf("pbwire: illegal tag %d (wire type %d)", num, tag)
	}
	return num, wt, nil
}

// length reads a length prefix.
func (s *stream) length() (int64, error) {
	n, err := s.uvarint()
	if err != nil {
		return 0, eofIsUnexpected(err)
	}
	if int64(n) < 0 {
		return 0, errNegative
	}
	return int64(n), nil
}

// bytes reads a length-prefixed value of at most max bytes into a buffer
// from alloc, or into scratch space valid until the next call if alloc is
// nil.
func (s *stream) bytes(max int, alloc func(int) []byte) ([]byte, error) {
	return s.boundedBytes(-1, max, alloc)
}

// boundedBytes is bytes for a value that must end by stream offset end
// (none if end < 0).
func (s *stream) boundedBytes(end int64, max int, alloc func(int) []byte) ([]byte, error) {
	n, err := s.length()
	if err != nil {
		return nil, err
	}
	if end >= 0 && n > end-s.n {
		return nil, io.ErrUnexpectedEOF
	}
	if n > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes, maximum %d", ErrFrameTooLarge, n, max)
	}
	var b []byte
	if alloc != nil {
		b = alloc(int(n))
	} else {
		if cap(s.scratch) < int(n) {
			s.scratch = make([]byte, n)
		}
		b = s.scratch[:n]
	}
	if err := s.full(b); err != nil {
		return nil, eofIsUnexpected(err)
	}
	return b, nil
}

// skip skips a value of wire type wt, which must end by stream offset end
// (none if end < 0).
func (s *stream) skip(wt int, end int64) error {
	discard := func(n int64) error {
		if end >= 0 && n > end-s.n {
			return io.ErrUnexpectedEOF
		}
		for n > 0 {
			k, err := s.br.Discard(int(min(n, 1<<20)))
			s.n += int64(k)
			n -= int64(k)
			if err != nil {
				return eofIsUnexpected(err)
			}
		}
		return nil
	}
	switch wt {
	case wtVarint:
		_, err := s.uvarint()
		return eofIsUnexpected(err)
	case wtFixed64:
		return discard(8)
	case wtFixed32:
		return discard(4)
	case wtBytes:
		n, err := s.length()
		if err != nil {
			return err
		}
		return discard(n)
	case wtStart:
		for depth := 1; depth > 0; {
			tag, err := s.uvarint()
			if err != nil {
				return eofIsUnexpected(err)
			}
			switch wt := int(tag & 7); wt {
			case wtStart:
				depth++
			case wtEnd:
				depth--
			default:
				if err := s.skip(wt, end); err != nil {
					return err
				}
			}
		}
		return nil
	default:
		return fmt.Errorf("pbwire: illegal wire type %d", wt)
	}
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
