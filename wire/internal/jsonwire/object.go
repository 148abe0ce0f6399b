package jsonwire

// member is one member of an object in a byte slice: its key (unescaped,
// valid until the next scan), where the member starts (its key's quote) and
// where its value starts and ends.
type member struct {
	key        []byte
	start      int
	vstart     int
	vend       int
	firstValue byte
}

// eachMember scans the object at the scanner's position (in memory),
// calling fn for each member after its value was validated; fn returns
// false to stop early (eachMember then returns ok=false). It returns the
// index just past the object.
func eachMember(s *Scanner, fn func(m member) bool) (int, bool) {
	if err := s.Expect('{', ""); err != nil {
		return 0, false
	}
	if err := s.enter(); err != nil {
		return 0, false
	}
	c, err := s.Peek()
	if err != nil {
		return 0, false
	}
	if c == '}' {
		s.pos++
		s.depth--
		return s.pos, true
	}
	for {
		if c != '"' {
			return 0, false
		}
		var m member
		m.start = s.pos
		if m.key, err = s.str(true); err != nil {
			return 0, false
		}
		if err := s.Expect(':', ""); err != nil {
			return 0, false
		}
		if m.firstValue, err = s.Peek(); err != nil {
			return 0, false
		}
		m.vstart = s.pos
		if err := s.value(); err != nil {
			return 0, false
		}
		m.vend = s.pos
		if !fn(m) {
			return 0, false
		}
		if c, err = s.Peek(); err != nil {
			return 0, false
		}
		s.pos++
		switch c {
		case ',':
			if c, err = s.Peek(); err != nil {
				return 0, false
			}
		case '}':
			s.depth--
			return s.pos, true
		default:
			return 0, false
		}
	}
}

// ParseWatchEvent splits one JSON watch frame into its type and the bytes
// of its object. Canonical shape only — an object with exactly the members
// "type" (a string) and "object" (an object), once each, and nothing after
// it — otherwise ok=false, meaning "decode it some other way".
func ParseWatchEvent(b []byte) (typ string, object []byte, ok bool) {
	s := NewBytesScanner(b)
	var seenT, seenO bool
	_, ok = eachMember(s, func(m member) bool {
		switch string(m.key) {
		case "type":
			if seenT || m.firstValue != '"' {
				return false
			}
			seenT = true
			typ, _, _ = unquote(b[m.vstart:m.vend])
		case "object":
			if seenO || m.firstValue != '{' {
				return false
			}
			seenO, object = true, b[m.vstart:m.vend]
		default:
			return false
		}
		return true
	})
	if !ok || !seenT || !seenO {
		return "", nil, false
	}
	if eof, err := s.AtEOF(); err != nil || !eof {
		return "", nil, false
	}
	return typ, object, true
}

// Inspect reads the kind and apiVersion of the JSON object b and, with
// dropManagedFields, removes every "managedFields" member of its
// "metadata" object in place, returning the shortened object. The
// managedFields values are validated but not decoded. ok=false (b
// unchanged) unless b is exactly one valid object whose kind and apiVersion
// members, if present, are strings appearing once, with no other key that
// encoding/json's case-insensitive matching could take for them, and at
// most one metadata member.
func Inspect(b []byte, dropManagedFields bool) (out []byte, apiVersion, kind string, ok bool) {
	s := NewBytesScanner(b)
	var seenV, seenK, seenM bool
	var metaStart, metaEnd int
	var kept [][2]int // members of metadata to keep
	dropped := false
	_, ok = eachMember(s, func(m member) bool {
		switch string(m.key) {
		case "kind", "apiVersion":
			v, _, isString := unquote(b[m.vstart:m.vend])
			if !isString {
				return false
			}
			if string(m.key) == "kind" {
				if seenK {
					return false
				}
				seenK, kind = true, v
			} else {
				if seenV {
					return false
				}
				seenV, apiVersion = true, v
			}
		case "metadata":
			if seenM {
				return false
			}
			seenM = true
			if !dropManagedFields || m.firstValue != '{' {
				return true
			}
			metaStart, metaEnd = m.vstart, m.vend
			ms := NewBytesScanner(b[:m.vend])
			ms.pos = m.vstart
			_, ok := eachMember(ms, func(mm member) bool {
				if string(mm.key) == "managedFields" {
					dropped = true
				} else {
					kept = append(kept, [2]int{mm.start, mm.vend})
				}
				return true
			})
			return ok
		default:
			if looksLike(string(m.key), "kind", "apiVersion") {
				return false
			}
		}
		return true
	})
	if !ok {
		return b, "", "", false
	}
	if eof, err := s.AtEOF(); err != nil || !eof {
		return b, "", "", false
	}
	if !dropped {
		return b, apiVersion, kind, true
	}
	// Rewrite metadata as '{' kept members joined by ',' '}', then move the
	// rest of the object up. Each write lands at or before what it copies.
	w := metaStart + 1
	for i, k := range kept {
		if i > 0 {
			b[w] = ','
			w++
		}
		w += copy(b[w:], b[k[0]:k[1]])
	}
	b[w] = '}'
	w++
	w += copy(b[w:], b[metaEnd:])
	return b[:w], apiVersion, kind, true
}
