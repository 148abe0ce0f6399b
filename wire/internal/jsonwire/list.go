package jsonwire

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ListHandler receives the parts of a list as ReadList finds them. Its
// methods run on ReadList's goroutine.
type ListHandler interface {
	// Kind is called once: before the first item, or at the end of a list
	// without items, with the apiVersion and kind members read so far.
	// ErrDecline makes ReadList stop with a *NotCanonicalError (possible only
	// before the first item).
	Kind(apiVersion, kind string) error
	// Member receives each top-level member other than items, its value's
	// bytes valid during the call only.
	Member(key string, value []byte) error
	// Alloc returns a buffer of length n for the next item.
	Alloc(n int) []byte
	// Item receives an item's bytes in a buffer from Alloc; the handler owns
	// it from then on.
	Item(b []byte) error
}

// ErrDecline, returned by ListHandler.Kind, makes ReadList return a
// *NotCanonicalError.
var ErrDecline = errors.New("jsonwire: list kind declined")

// NotCanonicalError is returned by ReadList, before any item was handed on,
// when the list is not in a shape it streams, or when the handler's Kind
// declined it. Body reads the whole input again from its first byte.
type NotCanonicalError struct {
	Reason string
	Body   io.Reader
}

func (e *NotCanonicalError) Error() string {
	return "jsonwire: list not in canonical form: " + e.Reason
}

// ReadList reads a list object — {"kind":…,"apiVersion":…,"metadata":…,
// "items":[…]} with members in any order — from s as it arrives, handing
// each element of items to h before reading the next, and checks that
// nothing but whitespace follows the object. Until the first item it keeps
// what it read, so that a list it does not stream (a key that differs from
// kind, apiVersion, items or metadata only in case, which encoding/json
// would match; non-string kind; or a declined kind) comes back as a
// *NotCanonicalError to be decoded another way. After the first item such a
// member or a second items is an error. Kind and apiVersion members after
// the first item reach only Member.
func ReadList(s *Scanner, h ListHandler) error {
	s.Hold()
	defer s.Release()
	if err := s.Expect('{', "looking for beginning of value"); err != nil {
		return err
	}
	s.depth = 1
	var apiVersion, kind string
	kindCalled, itemsSeen := false, false
	callKind := func() error {
		kindCalled = true
		err := h.Kind(apiVersion, kind)
		if err == ErrDecline {
			return &NotCanonicalError{Reason: fmt.Sprintf("kind %q, apiVersion %q", kind, apiVersion), Body: s.Held()}
		}
		return err
	}
	decline := func(reason string) error {
		if itemsSeen {
			return fmt.Errorf("jsonwire: list %s after its items", reason)
		}
		return &NotCanonicalError{Reason: reason, Body: s.Held()}
	}
	c, err := s.Peek()
	if err != nil {
		return err
	}
	if c == '}' {
		s.pos++
	}
	for c != '}' {
		if c != '"' {
			return s.unexpected(c, "looking for beginning of object key string")
		}
		keyb, err := s.str(true)
		if err != nil {
			return err
		}
		key := string(keyb)
		if err := s.Expect(':', "after object key"); err != nil {
			return err
		}
		switch key {
		case "items":
			if itemsSeen {
				return errors.New("jsonwire: list has two items members")
			}
			if err := callKind(); err != nil {
				return err
			}
			itemsSeen = true
			s.Release()
			if err := readItems(s, h); err != nil {
				return err
			}
		case "kind", "apiVersion":
			start, end, err := s.Span()
			if err != nil {
				return err
			}
			v, isNull, isString := unquote(s.buf[start:end])
			err = h.Member(key, s.buf[start:end])
			s.Unpin()
			if err != nil {
				return err
			}
			if !isString && !isNull {
				return decline(key + " is not a string")
			}
			if !isNull && !kindCalled {
				if key == "kind" {
					kind = v
				} else {
					apiVersion = v
				}
			}
		default:
			if looksLike(key, "kind", "apiVersion", "items", "metadata") {
				return decline(fmt.Sprintf("member %q", key))
			}
			start, end, err := s.Span()
			if err != nil {
				return err
			}
			err = h.Member(key, s.buf[start:end])
			s.Unpin()
			if err != nil {
				return err
			}
		}
		if c, err = s.Peek(); err != nil {
			return err
		}
		s.pos++
		switch c {
		case ',':
			if c, err = s.Peek(); err != nil {
				return err
			}
		case '}':
		default:
			s.pos--
			return s.unexpected(c, "after object key:value pair")
		}
	}
	if !kindCalled {
		if err := callKind(); err != nil {
			return err
		}
	}
	s.Release()
	if eof, err := s.AtEOF(); err != nil {
		return err
	} else if !eof {
		return s.unexpected(s.buf[s.pos], "after top-level value")
	}
	return nil
}

func readItems(s *Scanner, h ListHandler) error {
	c, err := s.Peek()
	if err != nil {
		return err
	}
	if c == 'n' {
		return s.literal("null")
	}
	if c != '[' {
		return fmt.Errorf("jsonwire: list items is not an array (starts with %s)", quoteChar(c))
	}
	s.pos++
	if c, err = s.Peek(); err != nil {
		return err
	}
	if c == ']' {
		s.pos++
		return nil
	}
	s.depth++ // the array
	defer func() { s.depth-- }()
	for {
		b, err := s.Capture(h.Alloc)
		if err != nil {
			return err
		}
		if err := h.Item(b); err != nil {
			return err
		}
		if c, err = s.Peek(); err != nil {
			return err
		}
		s.pos++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			s.pos--
			return s.unexpected(c, "after array element")
		}
	}
}

// unquote returns the value of a JSON string literal b as encoding/json
// would decode it into a Go string, or reports null or a non-string.
func unquote(b []byte) (v string, isNull, isString bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", string(b) == "null", false
	}
	return string(appendUnescaped(nil, b[1:len(b)-1])), false, true
}

// looksLike reports whether key might match one of names under
// encoding/json's case-insensitive field matching without being equal to
// it: equal under Unicode case folding, or non-ASCII of a length that case
// folding could reach (conservative: such keys are handled by the exact
// decoder).
func looksLike(key string, names ...string) bool {
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	for _, n := range names {
		if key == n {
			return false
		}
		if strings.EqualFold(key, n) || (!ascii && len(key) <= 4*len(n)) {
			return true
		}
	}
	return false
}

// ReadValue returns the next top-level value of a stream of concatenated
// values (a JSON watch stream), framed as json.Decoder frames it, in a
// buffer from alloc. It returns io.EOF when only whitespace is left,
// io.ErrUnexpectedEOF when the input ends inside a value, a *SyntaxError for
// invalid JSON, ErrTooLarge for a value over the maximum, and any other
// error of the underlying reader unchanged.
func ReadValue(s *Scanner, alloc func(int) []byte) ([]byte, error) {
	if eof, err := s.AtEOF(); err != nil || eof {
		if eof {
			return nil, io.EOF
		}
		return nil, err
	}
	return s.Capture(alloc)
}
