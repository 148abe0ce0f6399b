package diet

import (
	"bytes"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// Decoding a pod like another (DecodePodLike): the old object of an update
// that a store keeps encoded (package compact) is decoded right after the
// new one, and most updates leave the spec, and often the status, as they
// were. Where a pod's spec (status) message is byte for byte the other's,
// it is cut from the bytes before they are decoded and the other's spec
// (status) is copied in afterwards, as a pod shares with its previous
// version (versions.go): a shallow copy sharing slices and pointers, with
// the maps copied.

var likeBufs = sync.Pool{New: func() any { return new([]byte) }}

// DecodePodLike decodes the protobuf pod message b into p, a new Pod, as
// DecodePod does, except that a spec or status message of b that is byte
// for byte the one in likeBytes — the message like was decoded from — is
// not decoded: p takes like's. like and likeBytes are only read; like must
// not be modified afterwards (it is shared, as any cached object). Under
// KUBE_CACHE_MUTATION_DETECTOR b is decoded whole and the shared part
// checked against like's (checkUnmodified).
func DecodePodLike(p *corev1.Pod, b []byte, like *corev1.Pod, likeBytes []byte) error {
	var useSpec, useStat bool
	var spec, status pbwire.Field
	if like != nil {
		var ok bool
		if spec, status, ok = specStatus(b); ok {
			if lspec, lstatus, ok := specStatus(likeBytes); ok {
				useSpec = spec.End > 0 && lspec.End > 0 && bytes.Equal(b[spec.Val:spec.End], likeBytes[lspec.Val:lspec.End])
				useStat = status.End > 0 && lstatus.End > 0 && bytes.Equal(b[status.Val:status.End], likeBytes[lstatus.Val:lstatus.End])
			}
		}
	}
	if !useSpec && !useStat {
		return DecodePod(p, b)
	}
	if detectMutations {
		if err := DecodePod(p, b); err != nil {
			return err
		}
		if useSpec {
			checkUnmodified(p, "spec of the pod it was decoded like", &p.Spec, &like.Spec)
		}
		if useStat {
			checkUnmodified(p, "status of the pod it was decoded like", &p.Status, &like.Status)
		}
	} else {
		var c pbwire.Cutter
		if useSpec {
			c.Cut(spec.Start, spec.End)
		}
		if useStat {
			c.Cut(status.Start, status.End)
		}
		bp := likeBufs.Get().(*[]byte)
		cut := c.AppendTo((*bp)[:0], b)
		err := DecodePod(p, cut)
		*bp = cut[:0]
		likeBufs.Put(bp)
		if err != nil { // not a shape to cut: the whole message, and its error
			*p = corev1.Pod{}
			return DecodePod(p, b)
		}
	}
	if useSpec {
		p.Spec = like.Spec
		unshareSpecMaps(&p.Spec)
	}
	if useStat {
		p.Status = like.Status
		unshareStatusMaps(&p.Status)
	}
	return nil
}

// specStatus finds the spec (field 2) and status (field 3) of the pod
// message b (a zero Field where absent); ok is false unless b reads as a
// pod message with at most one of each, of the bytes wire type.
func specStatus(b []byte) (spec, status pbwire.Field, ok bool) {
	for i := 0; i < len(b); {
		f, err := pbwire.NextField(b, i)
		if err != nil {
			return spec, status, false
		}
		i = f.End
		switch f.Num {
		case 2, 3:
			if f.WireType != pbwire.WireBytes {
				return spec, status, false
			}
			at := &spec
			if f.Num == 3 {
				at = &status
			}
			if at.End > 0 {
				return spec, status, false
			}
			*at = f
		}
	}
	return spec, status, true
}
