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
