package wire

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/shardinformer/shardinformer/wire/internal/diet"
)

// UnmarshalPod decodes b, the protobuf encoding of a Pod message (without
// the runtime.Unknown envelope, as (*corev1.Pod).Marshal writes it), into p,
// which must be a new Pod. It is the decoder the wire uses for pods the
// diet does not share: the result and the error are those of p.Unmarshal(b),
// but each slice and map of the pod is allocated at its final size instead
// of growing by doubling: on realistic pods a quarter fewer bytes
// allocated (BenchmarkUnmarshalPod). Package compact decodes the pods it
// stores with it.
func UnmarshalPod(p *corev1.Pod, b []byte) error { return diet.DecodePod(p, b) }

// UnmarshalPodLike decodes b into p, a new Pod, as UnmarshalPod does,
// except that where b's spec or status message is byte for byte the one in
// likeBytes — the encoding like was decoded from — p takes like's spec or
// status instead of decoding it: a shallow copy that shares like's slices
// and pointers, with its maps copied, as the diet shares a pod with its
// previous version. It is for decoding two versions of one pod, the old
// object of an update with the new: most updates leave the spec alone.
// like is only read, and like and p must not be modified afterwards (they
// share parts, as cached objects do). Package compact decodes an update's
// old pod with it.
func UnmarshalPodLike(p *corev1.Pod, b []byte, like *corev1.Pod, likeBytes []byte) error {
	return diet.DecodePodLike(p, b, like, likeBytes)
}
