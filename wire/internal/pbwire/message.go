package pbwire

import "bytes"

// ParseUnknown splits an enveloped object — Magic followed by a
// runtime.Unknown — into its apiVersion, kind and raw message. It accepts
// the canonical shape only: TypeMeta (apiVersion, kind) and raw at most once
// each, contentEncoding and contentType (which apimachinery ignores) in any
// number, nothing else. ok=false means "decode it some other way", not
// "invalid".
func ParseUnknown(b []byte) (apiVersion, kind, raw []byte, ok bool) {
	if !bytes.HasPrefix(b, []byte(Magic)) {
		return nil, nil, nil, false
	}
	b = b[len(Magic):]
	var seenMeta, seenRaw bool
	for i := 0; i < len(b); {
		f, err := next(b, i)
		if err != nil {
			return nil, nil, nil, false
		}
		i = f.End
		switch {
		case f.Num == 1 && f.WireType == wtBytes && !seenMeta:
			seenMeta = true
			if apiVersion, kind, ok = parseTypeMeta(b[f.Val:f.End]); !ok {
				return nil, nil, nil, false
			}
		case f.Num == 2 && f.WireType == wtBytes && !seenRaw:
			seenRaw = true
			raw = b[f.Val:f.End]
		case (f.Num == 3 || f.Num == 4) && f.WireType == wtBytes:
		default:
			return nil, nil, nil, false
		}
	}
	return apiVersion, kind, raw, seenMeta && seenRaw
}

func parseTypeMeta(b []byte) (apiVersion, kind []byte, ok bool) {
	var seenV, seenK bool
	for i := 0; i < len(b); {
		f, err := next(b, i)
		if err != nil {
			return nil, nil, false
		}
		i = f.End
		switch {
		case f.Num == 1 && f.WireType == wtBytes && !seenV:
			seenV, apiVersion = true, b[f.Val:f.End]
		case f.Num == 2 && f.WireType == wtBytes && !seenK:
			seenK, kind = true, b[f.Val:f.End]
		default:
			return nil, nil, false
		}
	}
	return apiVersion, kind, true
}

// ParseWatchEvent splits a metav1.WatchEvent message (one watch frame) into
// its type and the raw bytes of its object (an enveloped object). Canonical
// shape only: type and object at most once each, the object holding at most
// one raw field and nothing else; ok=false otherwise.
func ParseWatchEvent(b []byte) (typ, object []byte, ok bool) {
	var seenT, seenO bool
	for i := 0; i < len(b); {
		f, err := next(b, i)
		if err != nil {
			return nil, nil, false
		}
		i = f.End
		switch {
		case f.Num == 1 && f.WireType == wtBytes && !seenT:
			seenT, typ = true, b[f.Val:f.End]
		case f.Num == 2 && f.WireType == wtBytes && !seenO:
			seenO = true
			ext := b[f.Val:f.End]
			for j := 0; j < len(ext); {
				g, err := next(ext, j)
				if err != nil || g.Num != 1 || g.WireType != wtBytes || object != nil {
					return nil, nil, false
				}
				object, j = ext[g.Val:g.End], g.End
			}
		default:
			return nil, nil, false
		}
	}
	return typ, object, seenT && seenO && object != nil
}

// Field numbers of the metadata and of ObjectMeta.managedFields in every
// Kubernetes object message.
const (
	fieldMetadata      = 1
	fieldManagedFields = 17
)

// DropManagedFields removes every managedFields entry (ObjectMeta field 17)
// from the metadata (field 1) of the object message b, in place, rewriting
// the metadata's length prefix, and returns the shortened message. The
// managedFields bytes are skipped, not decoded: malformed content inside
// them is not detected. An error means b is not a well-formed message (its
// full decode fails as well); b is then left unchanged.
func DropManagedFields(b []byte) ([]byte, error) {
	// Pass 1: validate, and find whether there is anything to drop.
	found := false
	for i := 0; i < len(b); {
		f, err := next(b, i)
		if err != nil {
			return b, err
		}
		if f.Num == fieldMetadata && f.WireType == wtBytes {
			_, drop, err := keptLen(b[f.Val:f.End])
			if err != nil {
				return b, err
			}
			found = found || drop
		}
		i = f.End
	}
	if !found {
		return b, nil
	}
	// Pass 2: compact in place. Every write lands at or before the bytes it
	// replaces, so no unread byte is overwritten.
	w := 0
	for i := 0; i < len(b); {
		f, _ := next(b, i)
		i = f.End
		if f.Num != fieldMetadata || f.WireType != wtBytes {
			w += copy(b[w:], b[f.Start:f.End])
			continue
		}
		meta := b[f.Val:f.End]
		kept, _, _ := keptLen(meta)
		w += copy(b[w:], b[f.Start:f.LenAt])
		w = len(appendVarint(b[:w], uint64(kept)))
		for j := 0; j < len(meta); {
			g, _ := next(meta, j)
			j = g.End
			if g.Num != fieldManagedFields || g.WireType != wtBytes {
				w += copy(b[w:], meta[g.Start:g.End])
			}
		}
	}
	return b[:w], nil
}

// keptLen returns the length of the ObjectMeta message meta without its
// managedFields, and whether it has any.
func keptLen(meta []byte) (int, bool, error) {
	kept, drop := 0, false
	for j := 0; j < len(meta); {
		g, err := next(meta, j)
		if err != nil {
			return 0, false, err
		}
		j = g.End
		if g.Num == fieldManagedFields && g.WireType == wtBytes {
			drop = true
		} else {
			kept += g.End - g.Start
		}
	}
	return kept, drop, nil
}
