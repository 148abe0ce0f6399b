package handover

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// Annotation keys under which Published is written into a Lease.
const (
	AnnotationSynced  = "shardinformer.io/slots-synced"
	AnnotationClaimed = "shardinformer.io/slots-claimed"
)

// ErrAnnotation is matched by every error of Decode.
var ErrAnnotation = errors.New("handover: malformed slot annotation")

// ErrSlotCount is matched by the errors of Decode for annotations written
// for another slot count: both well-formed bitmaps of one length, another
// one than the slot count's, or of its length with a bit set beyond the
// last slot. It matches ErrAnnotation too.
var ErrSlotCount = fmt.Errorf("%w: written for another slot count", ErrAnnotation)

// Encode returns p as Lease annotations: per key, a bitmap of the slots in
// lowercase hex, slot s being bit s%8 of byte s/8.
func (p Published) Encode() map[string]string {
	return map[string]string{AnnotationSynced: encodeBits(p.Synced), AnnotationClaimed: encodeBits(p.Claimed)}
}

func encodeBits(bits []bool) string {
	b := make([]byte, (len(bits)+7)/8)
	for s, on := range bits {
		if on {
			b[s/8] |= 1 << (s % 8)
		}
	}
	return hex.EncodeToString(b)
}

// Decode reads what a peer published for slots slots (hex digits of
// either case). Annotations are
// written by other processes, so they are untrusted: a missing key, bad
// hex, a wrong length or a bit set beyond the last slot is an error, and
// the Published returned with it is the conservative reading — every
// slot claimed, none synced. How long a reader holds a peer to that
// reading is the shell's rule (package runner: for a bounded time, or,
// for ErrSlotCount, while the peer is live).
func Decode(annotations map[string]string, slots int) (Published, error) {
	synced, err1 := decodeBits(annotations, AnnotationSynced, slots)
	claimed, err2 := decodeBits(annotations, AnnotationClaimed, slots)
	if err := errors.Join(err1, err2); err != nil {
		p := Published{Synced: make([]bool, slots), Claimed: make([]bool, slots)}
		for s := range p.Claimed {
			p.Claimed[s] = true
		}
		if otherSlotCount(annotations) {
			err = fmt.Errorf("%w: %w", ErrSlotCount, err)
		}
		return p, err
	}
	return Published{Synced: synced, Claimed: claimed}, nil
}

// otherSlotCount reports whether both annotations are non-empty hex of one
// length: when Decode refused them, they were written for another slot
// count.
func otherSlotCount(annotations map[string]string) bool {
	a, ok1 := annotations[AnnotationSynced]
	b, ok2 := annotations[AnnotationClaimed]
	if !ok1 || !ok2 || len(a) != len(b) || a == "" {
		return false
	}
	_, err1 := hex.DecodeString(a)
	_, err2 := hex.DecodeString(b)
	return err1 == nil && err2 == nil
}

func decodeBits(annotations map[string]string, key string, slots int) ([]bool, error) {
	v, ok := annotations[key]
	if !ok {
		return nil, fmt.Errorf("%w: %s missing", ErrAnnotation, key)
	}
	if want := (slots + 7) / 8 * 2; len(v) != want {
		return nil, fmt.Errorf("%w: %s has %d hex digits, want %d for %d slots", ErrAnnotation, key, len(v), want, slots)
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrAnnotation, key, err)
	}
	bits := make([]bool, slots)
	for i, x := range b {
		for j := range 8 {
			if x&(1<<j) == 0 {
				continue
			}
			s := i*8 + j
			if s >= slots {
				return nil, fmt.Errorf("%w: %s sets slot %d of %d", ErrAnnotation, key, s, slots)
			}
			bits[s] = true
		}
	}
	return bits, nil
}
