// Package jsonwire reads JSON at the byte level for package wire: a
// validating scanner that works on a stream or on bytes in memory, the
// splitting of a list body into its items as it arrives, the framing of a
// watch stream into one value per event, and in-memory inspection of an
// object (its kind, its watch-event members) and excision of
// metadata.managedFields.
//
// The scanner accepts exactly the grammar encoding/json accepts (RFC 8259,
// invalid UTF-8 inside strings allowed, nesting up to 10000 levels) and
// frames consecutive top-level values the way json.Decoder does, so that
// its verdict on a byte stream matches the decoders client-go uses.
package jsonwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// ErrTooLarge reports a value longer than the scanner's maximum; the scanner
// stops before buffering more than that.
var ErrTooLarge = errors.New("jsonwire: value larger than the maximum frame size")

// SyntaxError is a violation of the JSON grammar at stream offset Offset.
type SyntaxError struct {
	Msg    string
	Offset int64
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("jsonwire: %s (offset %d)", e.Msg, e.Offset)
}

// Scanner reads JSON values from a stream or from a byte slice. Bytes are
// buffered only while a value being captured or pinned needs them, so a
// stream's memory is bounded by its largest captured value. Not safe for
// concurrent use.
type Scanner struct {
	r        io.Reader // nil: buf[:end] is all the input
	buf      []byte
	pos, end int
	keep     int   // bytes from buf[keep] on survive a refill; -1: none
	hold     bool  // every byte from buf[0] on survives a refill (see Hold)
	max      int   // maximum length of a kept region
	base     int64 // stream offset of buf[0]
	rerr     error // sticky error of r (io.EOF at the end)
	depth    int
	scratch  []byte // unescaped strings
}

// NewScanner scans r, keeping at most max bytes of one value in memory.
func NewScanner(r io.Reader, max int) *Scanner {
	return &Scanner{r: r, buf: make([]byte, 32<<10), keep: -1, max: max}
}

// NewBytesScanner scans b, which must not change while the scanner is used.
func NewBytesScanner(b []byte) *Scanner {
	return &Scanner{buf: b, end: len(b), keep: -1, max: len(b), rerr: io.EOF}
}

// Reset makes s scan b, as NewBytesScanner(b) would, keeping its scratch
// space.
func (s *Scanner) Reset(b []byte) {
	*s = Scanner{buf: b, end: len(b), keep: -1, max: len(b), rerr: io.EOF, scratch: s.scratch[:0]}
}

// Hold keeps every byte read from now on, from the start of the buffer,
// until Release; Held returns them. A list reader holds the bytes before its
// first item so that it can hand the whole body to another decoder.
func (s *Scanner) Hold() { s.hold = true }

// Release ends Hold.
func (s *Scanner) Release() { s.hold = false }

// Held returns a reader of every byte the scanner has read since Hold (when
// the buffer was empty or at its start) followed by the rest of the input.
func (s *Scanner) Held() io.Reader {
	rest := io.Reader(eofReader{})
	if s.r != nil && s.rerr == nil {
		rest = s.r
	}
	return io.MultiReader(bytes.NewReader(append([]byte(nil), s.buf[:s.end]...)), rest)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// Offset is the stream offset of the next unread byte.
func (s *Scanner) Offset() int64 { return s.base + int64(s.pos) }

// fill reads more input, compacting or growing the buffer; it reports
// whether at least one byte was added.
func (s *Scanner) fill() bool {
	if s.r == nil || s.rerr != nil {
		return false
	}
	from := s.pos
	if s.keep >= 0 && s.keep < from {
		from = s.keep
	}
	if s.hold {
		from = 0
	}
	if from > 0 {
		copy(s.buf, s.buf[from:s.end])
		s.end -= from
		s.pos -= from
		if s.keep >= 0 {
			s.keep -= from
		}
		s.base += int64(from)
	}
	if s.end == len(s.buf) {
		if (s.keep >= 0 && s.end-s.keep > s.max) || (s.hold && s.end > s.max) {
			s.rerr = ErrTooLarge
			return false
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for range 100 {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err != nil {
			s.rerr = err
		}
		if n > 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
	s.rerr = io.ErrNoProgress
	return false
}

// more makes at least one unread byte available, or returns the end-of-input
// error: inValue turns io.EOF into io.ErrUnexpectedEOF.
func (s *Scanner) more(inValue bool) error {
	if s.pos < s.end || s.fill() {
		return nil
	}
	if s.rerr == io.EOF && inValue {
		return io.ErrUnexpectedEOF
	}
	return s.rerr
}

func (s *Scanner) syntax(msg string) error {
	return &SyntaxError{Msg: msg, Offset: s.Offset()}
}

func (s *Scanner) unexpected(c byte, context string) error {
	return s.syntax(fmt.Sprintf("invalid character %s %s", quoteChar(c), context))
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return fmt.Sprintf("%q", rune(c))
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace skips whitespace and returns the next byte without consuming it.
func (s *Scanner) skipSpace(inValue bool) (byte, error) {
	for {
		for s.pos < s.end {
			if c := s.buf[s.pos]; !isSpace(c) {
				return c, nil
			}
			s.pos++
		}
		if err := s.more(inValue); err != nil {
			return 0, err
		}
	}
}

// AtEOF skips whitespace and reports whether the input ends there. A read
// error other than io.EOF is returned.
func (s *Scanner) AtEOF() (bool, error) {
	_, err := s.skipSpace(false)
	if err == io.EOF {
		return true, nil
	}
	return false, err
}

// Peek skips whitespace and returns the next byte without consuming it;
// io.ErrUnexpectedEOF at the end of input.
func (s *Scanner) Peek() (byte, error) { return s.skipSpace(true) }

// Expect skips whitespace and consumes c, or fails with a syntax error
// naming context.
func (s *Scanner) Expect(c byte, context string) error {
	got, err := s.skipSpace(true)
	if err != nil {
		return err
	}
	if got != c {
		return s.unexpected(got, context)
	}
	s.pos++
	return nil
}

// Skip validates and skips the next value.
func (s *Scanner) Skip() error {
	if _, err := s.skipSpace(true); err != nil {
		return err
	}
	return s.value()
}

// Capture validates the next value and returns a copy of its bytes in a
// buffer from alloc (make if nil). A value longer than the scanner's maximum
// is ErrTooLarge.
func (s *Scanner) Capture(alloc func(int) []byte) ([]byte, error) {
	start, end, err := s.Span()
	if err != nil {
		return nil, err
	}
	n := end - start
	var b []byte
	if alloc != nil {
		b = alloc(n)
	} else {
		b = make([]byte, n)
	}
	copy(b, s.buf[start:end])
	s.Unpin()
	return b, nil
}

// Span validates the next value and returns its position in the buffer:
// buf[start:end] (see Bytes) stays valid, pinned, until Unpin. For a
// scanner over bytes, that is simply the value's range in them.
func (s *Scanner) Span() (start, end int, err error) {
	if _, err := s.skipSpace(true); err != nil {
		return 0, 0, err
	}
	if s.keep >= 0 {
		panic("jsonwire: Span while a span is pinned")
	}
	s.keep = s.pos
	if err := s.value(); err != nil {
		s.keep = -1
		return 0, 0, err
	}
	if s.pos-s.keep > s.max {
		s.keep = -1
		return 0, 0, ErrTooLarge
	}
	return s.keep, s.pos, nil
}

// Bytes returns the scanner's buffer; buf[start:end] of a pinned Span is the
// value's bytes.
func (s *Scanner) Bytes() []byte { return s.buf }

// Unpin releases the span pinned by Span.
func (s *Scanner) Unpin() { s.keep = -1 }

// Pos is the index in Bytes of the next unread byte.
func (s *Scanner) Pos() int { return s.pos }

// value scans one value starting at s.buf[s.pos] (a non-space byte).
func (s *Scanner) value() error {
	switch c := s.buf[s.pos]; c {
	case '{':
		return s.object()
	case '[':
		return s.array()
	case '"':
		_, err := s.str(false)
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return s.number()
		}
		return s.unexpected(c, "looking for beginning of value")
	}
}

func (s *Scanner) enter() error {
	s.depth++
	if s.depth > maxDepth {
		return s.syntax("exceeded max depth")
	}
	return nil
}

func (s *Scanner) object() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.pos++ // '{'
	c, err := s.skipSpace(true)
	if err != nil {
		return err
	}
	if c == '}' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if c != '"' {
			return s.unexpected(c, "looking for beginning of object key string")
		}
		if _, err := s.str(false); err != nil {
			return err
		}
		if err := s.Expect(':', "after object key"); err != nil {
			return err
		}
		if _, err := s.skipSpace(true); err != nil {
			return err
		}
		if err := s.value(); err != nil {
			return err
		}
		if c, err = s.skipSpace(true); err != nil {
			return err
		}
		s.pos++
		switch c {
		case ',':
			if c, err = s.skipSpace(true); err != nil {
				return err
			}
		case '}':
			s.depth--
			return nil
		default:
			s.pos--
			return s.unexpected(c, "after object key:value pair")
		}
	}
}

func (s *Scanner) array() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.pos++ // '['
	c, err := s.skipSpace(true)
	if err != nil {
		return err
	}
	if c == ']' {
		s.pos++
		s.depth--
		return nil
	}
	for {
		if err := s.value(); err != nil {
			return err
		}
		if c, err = s.skipSpace(true); err != nil {
			return err
		}
		s.pos++
		switch c {
		case ',':
			if _, err = s.skipSpace(true); err != nil {
				return err
			}
		case ']':
			s.depth--
			return nil
		default:
			s.pos--
			return s.unexpected(c, "after array element")
		}
	}
}

func (s *Scanner) literal(lit string) error {
	s.pos++
	for i := 1; i < len(lit); i++ {
		if err := s.more(true); err != nil {
			return err
		}
		if c := s.buf[s.pos]; c != lit[i] {
			return s.unexpected(c, "in literal "+lit+" (expecting "+quoteChar(lit[i])+")")
		}
		s.pos++
	}
	return nil
}

// number scans a number. At the end of input a complete number ends there,
// as json.Decoder allows for a top-level value; an incomplete one is
// io.ErrUnexpectedEOF.
func (s *Scanner) number() error {
	// peek returns the next byte, or 0 at the end of input.
	peek := func() (byte, error) {
		if err := s.more(false); err != nil {
			if err == io.EOF {
				return 0, nil
			}
			return 0, err
		}
		return s.buf[s.pos], nil
	}
	digits := func() (int, error) {
		n := 0
		for {
			for s.pos < s.end {
				if c := s.buf[s.pos]; c < '0' || c > '9' {
					return n, nil
				}
				s.pos++
				n++
			}
			if err := s.more(false); err != nil {
				if err == io.EOF {
					return n, nil
				}
				return n, err
			}
		}
	}
	// need returns the error for a missing digit: c is the byte found (0
	// at the end of input).
	need := func(c byte, context string) error {
		if c == 0 && s.pos == s.end {
			return io.ErrUnexpectedEOF
		}
		return s.unexpected(c, context)
	}
	c := s.buf[s.pos]
	if c == '-' {
		s.pos++
		var err error
		if c, err = peek(); err != nil {
			return err
		}
		if c < '0' || c > '9' {
			return need(c, "in numeric literal")
		}
	}
	if c == '0' {
		s.pos++
	} else if _, err := digits(); err != nil {
		return err
	}
	c, err := peek()
	if err != nil {
		return err
	}
	if c == '.' {
		s.pos++
		n, err := digits()
		if err != nil {
			return err
		}
		if n == 0 {
			c, _ := peek()
			return need(c, "after decimal point in numeric literal")
		}
		if c, err = peek(); err != nil {
			return err
		}
	}
	if c == 'e' || c == 'E' {
		s.pos++
		if c, err = peek(); err != nil {
			return err
		}
		if c == '+' || c == '-' {
			s.pos++
		}
		n, err := digits()
		if err != nil {
			return err
		}
		if n == 0 {
			c, _ := peek()
			return need(c, "in exponent of numeric literal")
		}
	}
	return nil
}

// str scans a string starting at its opening quote. With unescape it
// returns the string's content, unescaped if it has escapes (valid until the
// next call); otherwise nil.
func (s *Scanner) str(unescape bool) ([]byte, error) {
	s.pos++ // '"'
	pinned := s.keep < 0
	if pinned {
		s.keep = s.pos // the content must survive refills until we are done
	}
	start := s.pos - s.keep // relative to keep, which refills move
	escaped := false
	for {
		for s.pos < s.end {
			c := s.buf[s.pos]
			switch {
			case c == '"':
				content := s.buf[s.keep+start : s.pos]
				s.pos++
				if pinned {
					s.keep = -1
				}
				if !unescape {
					return nil, nil
				}
				if escaped {
					s.scratch = appendUnescaped(s.scratch[:0], content)
					return s.scratch, nil
				}
				return content, nil
			case c == '\\':
				escaped = true
				if err := s.escape(); err != nil {
					return nil, s.unpin(pinned, err)
				}
			case c < 0x20:
				return nil, s.unpin(pinned, s.unexpected(c, "in string literal"))
			default:
				s.pos++
			}
		}
		if err := s.more(true); err != nil {
			return nil, s.unpin(pinned, err)
		}
	}
}

func (s *Scanner) unpin(pinned bool, err error) error {
	if pinned {
		s.keep = -1
	}
	return err
}

// escape scans an escape sequence starting at its backslash.
func (s *Scanner) escape() error {
	s.pos++
	if err := s.more(true); err != nil {
		return err
	}
	switch c := s.buf[s.pos]; c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos++
		return nil
	case 'u':
		s.pos++
		for range 4 {
			if err := s.more(true); err != nil {
				return err
			}
			if !isHex(s.buf[s.pos]) {
				return s.unexpected(s.buf[s.pos], "in \\u hexadecimal character escape")
			}
			s.pos++
		}
		return nil
	default:
		return s.unexpected(c, "in string escape code")
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
