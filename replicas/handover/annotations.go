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
// slot claimed, none synced — so that a peer that cannot be read blocks
// activations instead of allowing double dispatch, and is never handed a
// slot.
func Decode(annotations map[string]string, slots int) (Published, error) {
	synced, err1 := decodeBits(annotations, AnnotationSynced, slots)
	claimed, err2 := decodeBits(annotations, AnnotationClaimed, slots)
	if err := errors.Join(err1, err2); err != nil {
		p := Published{Synced: make([]bool, slots), Claimed: make([]bool, slots)}
		for s := range p.Claimed {
			p.Claimed[s] = true
		}
		return p, err
	}
	return Published{Synced: synced, Claimed: claimed}, nil
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
