package cborwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

var errUnexpectedEOF = io.ErrUnexpectedEOF

// ReadItem appends the next data item of r (at most max bytes) to dst and
// returns it: a frame of a CBOR sequence. It returns io.EOF if r ends
// before the item's first byte and io.ErrUnexpectedEOF if it ends inside
// it. An item found whole in r's buffer is scanned there and copied once.
func ReadItem(r *bufio.Reader, max int, dst []byte) ([]byte, error) {
	start := len(dst)
	s := newScanner(max)
	for {
		if _, err := r.Peek(1); err != nil {
			if err == io.EOF && len(dst) > start {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
		buf, _ := r.Peek(r.Buffered())
		var n int
		var err error
		had := len(dst) - start
		if had == 0 {
			n, err = s.scan(buf) // the item's bytes so far are buf's
		} else {
			dst = append(dst, buf...)
			n, err = s.scan(dst[start:])
		}
		switch {
		case err == nil && had == 0:
			dst = append(dst, buf[:n]...)
			r.Discard(n)
			return dst, nil
		case err == nil:
			dst = dst[:start+n]
			r.Discard(n - had)
			return dst, nil
		case err != errShort:
			return dst[:start], err
		case had == 0:
			dst = append(dst, buf...)
		}
		r.Discard(len(buf))
	}
}

// ListHandler receives the parts of a list as ReadList finds them. Its
// methods run on ReadList's goroutine.
type ListHandler interface {
	// Member receives each top-level member other than items: its key, and
	// the bytes of its key and of its value (one data item each), valid
	// during the call only. ErrDecline, before the first item, makes
	// ReadList return a *NotCanonicalError.
	Member(key string, keyItem, value []byte) error
	// Array is called when items is an array (not null), before its first
	// element.
	Array()
	// Alloc returns a buffer for the next item (its length is ignored).
	Alloc() []byte
	// Item receives an item's bytes in a buffer from Alloc; the handler owns
	// it from then on.
	Item(b []byte) error
}

// ErrDecline, returned by ListHandler.Member, makes ReadList return a
// *NotCanonicalError.
var ErrDecline = errors.New("cborwire: list declined")

// NotCanonicalError is returned by ReadList, before any item was handed on,
// when the list is not in a shape it streams or the handler declined it.
// Body reads the whole input again from its first byte.
type NotCanonicalError struct {
	Reason string
	Body   io.Reader
}

func (e *NotCanonicalError) Error() string {
	return "cborwire: list not in canonical form: " + e.Reason
}

// ReadList reads a list body — a map, optionally under the self-described
// tag, whose keys are strings (byte strings, as the API server's encoder
// writes them, or text strings), with an "items" array (or null) among them —
// from r as it arrives, handing each element of items to h before reading
// the next, and checks that nothing follows the map. Until the first item
// it keeps what it read, so that a body it does not stream (another
// top-level type or tag, a key that is not a definite string, items that are
// not an array, a declined member) comes back as a *NotCanonicalError to
// be decoded another way; after the first item such a body is an error.
func ReadList(r *bufio.Reader, max int, h ListHandler) error {
	l := listReader{r: r, max: max, held: []byte{}}
	err := l.read(h)
	var nc *NotCanonicalError
	if errors.As(err, &nc) {
		nc.Body = io.MultiReader(bytes.NewReader(l.held), r)
	}
	return err
}

type listReader struct {
	r    *bufio.Reader
	max  int
	held []byte // what was read, until the first item (then nil)
	buf  []byte // scratch for keys and members
}

// head reads a head (and keeps it while holding).
func (l *listReader) head() (major, ai byte, arg uint64, err error) {
	b, err := l.r.Peek(9)
	if len(b) == 0 {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, 0, err
	}
	major, ai, arg, n, err := head(b)
	if err == errShort {
		return 0, 0, 0, io.ErrUnexpectedEOF
	}
	if err != nil {
		return 0, 0, 0, err
	}
	if l.held != nil {
		l.held = append(l.held, b[:n]...)
	}
	l.r.Discard(n)
	return major, ai, arg, nil
}

// item reads a whole data item into l.buf (and keeps it while holding).
func (l *listReader) item() ([]byte, error) {
	var err error
	if l.buf, err = ReadItem(l.r, l.max, l.buf[:0]); err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && l.held != nil {
		l.held = append(l.held, l.buf...)
	}
	return l.buf, err
}

// atBreak reads the break that ends an indefinite-length container, if it
// comes next.
func (l *listReader) atBreak() (bool, error) {
	b, err := l.r.Peek(1)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	if b[0] != breakCode {
		return false, nil
	}
	if l.held != nil {
		l.held = append(l.held, breakCode)
	}
	l.r.Discard(1)
	return true, nil
}

func (l *listReader) decline(reason string) error {
	if l.held == nil {
		return fmt.Errorf("cborwire: list %s after its items", reason)
	}
	return &NotCanonicalError{Reason: reason}
}

func (l *listReader) read(h ListHandler) error {
	major, ai, arg, err := l.head()
	if err != nil {
		return err
	}
	if major == majorTag && arg == 55799 && ai == 25 {
		if major, ai, arg, err = l.head(); err != nil {
			return err
		}
	}
	if major != majorMap {
		return l.decline(fmt.Sprintf("top-level major type %d", major))
	}
	indefinite := ai == aiIndefinite
	itemsSeen := false
	for i := uint64(0); indefinite || i < arg; i++ {
		if indefinite {
			if end, err := l.atBreak(); err != nil || end {
				if err != nil {
					return err
				}
				break
			}
		}
		kb, err := l.item()
		if err != nil {
			return err
		}
		key, ok := Text(kb)
		if !ok {
			return l.decline("a key that is not a definite-length string")
		}
		if key != "items" {
			kb = bytes.Clone(kb)
			v, err := l.item()
			if err != nil {
				return err
			}
			if err := h.Member(key, kb, v); err != nil {
				if err == ErrDecline {
					return l.decline(fmt.Sprintf("member %q", key))
				}
				return err
			}
			continue
		}
		if itemsSeen {
			return errors.New("cborwire: list has two items members")
		}
		itemsSeen = true
		if err := l.items(h); err != nil {
			return err
		}
	}
	if _, err := l.r.Peek(1); err != io.EOF {
		if err == nil {
			return errors.New("cborwire: data after the list")
		}
		return err
	}
	return nil
}

// items reads the value of items: an array, or null.
func (l *listReader) items(h ListHandler) error {
	b, err := l.r.Peek(1)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if b[0] == 0xf6 { // null
		l.r.Discard(1)
		if l.held != nil {
			l.held = append(l.held, 0xf6)
		}
		return nil
	}
	major, ai, arg, err := l.head()
	if err != nil {
		return err
	}
	if major != majorArray {
		return l.decline(fmt.Sprintf("items of major type %d", major))
	}
	l.held = nil // items from here on are handed on
	h.Array()
	indefinite := ai == aiIndefinite
	for i := uint64(0); indefinite || i < arg; i++ {
		if indefinite {
			if end, err := l.atBreak(); err != nil || end {
				return err
			}
		}
		item, err := ReadItem(l.r, l.max, h.Alloc()[:0])
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		if err := h.Item(item); err != nil {
			return err
		}
	}
	return nil
}

// ParseWatchEvent splits one watch frame — a map, optionally under the
// self-described tag, of exactly the keys "type" (with a string value) and
// "object", strings as Text reads them — into its type and its object's
// bytes. Any other shape gives
// ok=false, meaning "decode it some other way".
func ParseWatchEvent(b []byte) (typ string, object []byte, ok bool) {
	b = bytes.TrimPrefix(b, SelfDescribed)
	major, ai, arg, n, err := head(b)
	if err != nil || major != majorMap || ai == aiIndefinite || arg != 2 {
		return "", nil, false
	}
	b = b[n:]
	var seenT, seenO bool
	for range 2 {
		key, rest, ok := text(b)
		if !ok {
			return "", nil, false
		}
		m, err := Len(rest, len(rest))
		if err != nil {
			return "", nil, false
		}
		switch key {
		case "type":
			if seenT {
				return "", nil, false
			}
			if typ, _, ok = text(rest[:m]); !ok {
				return "", nil, false
			}
			seenT = true
		case "object":
			if seenO {
				return "", nil, false
			}
			seenO, object = true, rest[:m]
		default:
			return "", nil, false
		}
		b = rest[m:]
	}
	if len(b) != 0 {
		return "", nil, false
	}
	return typ, object, true
}

// Text decodes b, one definite-length string: a byte string (what the API
// server's encoder writes for Go strings, map keys and field names alike)
// or a text string.
func Text(b []byte) (string, bool) {
	v, rest, ok := text(b)
	return v, ok && len(rest) == 0
}

// text decodes a definite-length byte or text string at b[0] and returns it
// with the bytes after it.
func text(b []byte) (string, []byte, bool) {
	major, ai, arg, n, err := head(b)
	if err != nil || (major != majorText && major != majorBytes) || ai == aiIndefinite || arg > uint64(len(b)-n) {
		return "", nil, false
	}
	end := n + int(arg)
	return string(b[n:end]), b[end:], true
}

// EncodeMap encodes a map of entries, each an encoded key followed by its
// encoded value, under the self-described tag.
func EncodeMap(entries [][]byte) []byte {
	out := append([]byte(nil), SelfDescribed...)
	out = appendHead(out, majorMap, uint64(len(entries)))
	for _, e := range entries {
		out = append(out, e...)
	}
	return out
}

// appendHead appends the shortest head of major type major with argument
// arg.
func appendHead(b []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(b, m|byte(arg))
	case arg <= 0xff:
		return append(b, m|24, byte(arg))
	case arg <= 0xffff:
		return append(b, m|25, byte(arg>>8), byte(arg))
	case arg <= 0xffffffff:
		return append(b, m|26, byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
	}
	return append(b, m|27, byte(arg>>56), byte(arg>>48), byte(arg>>40), byte(arg>>32),
		byte(arg>>24), byte(arg>>16), byte(arg>>8), byte(arg))
}

// DropManagedFields removes the "managedFields" entry of the "metadata" map
// of the object b (a map, optionally under the self-described tag), in
// place, and returns the shortened object; b unchanged if it has none. The
// entry's value is skipped without being decoded. ok=false (b unchanged)
// unless b is exactly one well-formed item and the keys on the way are
// definite-length strings.
func DropManagedFields(b []byte) (out []byte, ok bool) {
	if n, err := Len(b, len(b)); err != nil || n != len(b) {
		return b, false
	}
	meta := -1
	top := 0
	if bytes.HasPrefix(b, SelfDescribed) {
		top = len(SelfDescribed)
	}
	if !entries(b, top, func(key string, _, val, _ int) bool {
		if key == "metadata" {
			meta = val
		}
		return meta < 0
	}) {
		return b, false
	}
	if meta < 0 {
		return b, true
	}
	at, end := -1, -1
	if !entries(b, meta, func(key string, a, _, e int) bool {
		if key == "managedFields" {
			at, end = a, e
		}
		return at < 0
	}) {
		return b, meta >= 0 && b[meta]>>5 != majorMap // metadata not a map: the decoder reports it
	}
	if at < 0 {
		return b, true
	}
	_, ai, arg, hn, _ := head(b[meta:])
	if ai == aiIndefinite { // no count to change
		return append(b[:at], b[end:]...), true
	}
	// Rewrite metadata's head for one entry less (it may get shorter) and
	// close the gaps.
	out = appendHead(b[:meta], majorMap, arg-1)
	out = append(out, b[meta+hn:at]...)
	return append(out, b[end:]...), true
}

// entries calls fn with each entry of the map at b[pos:] (b is well-formed):
// its key and the offsets where the entry and its value start and where it
// ends, until fn returns false. It reports false if the item there is not a
// map whose keys, up to where fn stopped, are definite-length strings.
func entries(b []byte, pos int, fn func(key string, at, val, end int) bool) bool {
	major, ai, arg, n, err := head(b[pos:])
	if err != nil || major != majorMap {
		return false
	}
	p := pos + n
	for i := uint64(0); ai != aiIndefinite && i < arg || ai == aiIndefinite && b[p] != breakCode; i++ {
		key, rest, isText := text(b[p:])
		if !isText {
			return false
		}
		val := len(b) - len(rest)
		vn, _ := Len(rest, len(rest))
		if !fn(key, p, val, val+vn) {
			return true
		}
		p = val + vn
	}
	return true
}
