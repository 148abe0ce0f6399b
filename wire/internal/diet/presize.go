package diet

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// Decoding protobuf pods with exact-size slices, with or without the
// diet. The generated unmarshalers append the occurrences of a repeated
// field one by one, so a slice grows by doubling: every array but the last
// is garbage, and the last has up to half its capacity unused, which
// compaction then copies away. On apisim's pods that is about 11 KB allocated per pod for
// about 4 KB kept, and garbage makes the collector run more often while a
// cache fills. unmarshalPod counts each message's repeated fields first and
// allocates their slices (and maps) at their final size, so the appends
// fill them in place and compaction finds nothing to do.
//
// Elements of a list are appended zeroed by the generated code, which
// would discard slices allocated in them beforehand; so a pod's containers
// are decoded one by one, each into its element with its own slices sized,
// and the rest of the spec in the runs of fields between them (decoding a
// message's bytes in consecutive runs is decoding the whole: each field
// is applied in order to the same struct).

// errPodShape: the pod message has a shape unmarshalPod does not decode
// field by field (a top-level field other than metadata, spec and status
// once each); the plain unmarshaler decodes it.
var errPodShape = errors.New("diet: pod message not in the shape unmarshalPod decodes")

// DecodePod decodes the protobuf pod message b into p, a new Pod, with
// exact-size slices, without the rest of the diet: the codec's decode of
// pods when they are not shared (ProtoPod). If that fails it decodes b
// again with the generated unmarshaler, whose result and error are
// client-go's.
func DecodePod(p *corev1.Pod, b []byte) error {
	if unmarshalPod(p, b, metaStrings{}) == nil {
		return nil
	}
	*p = corev1.Pod{}
	return p.Unmarshal(b)
}

// unmarshalPod decodes the pod message b into p, a new Pod, as
// p.Unmarshal(b) does, making the strings of its label and annotation maps
// as ms says. On an error p is partly decoded: decode b into a new Pod
// with p.Unmarshal for the error client-go reports.
func unmarshalPod(p *corev1.Pod, b []byte, ms metaStrings) error {
	var seen [4]bool
	for i := 0; i < len(b); {
		f, err := pbwire.NextField(b, i)
		if err != nil {
			return err
		}
		i = f.End
		if f.WireType != pbwire.WireBytes || f.Num < 1 || f.Num > 3 || seen[f.Num] {
			return errPodShape
		}
		seen[f.Num] = true
		v := b[f.Val:f.End]
		switch f.Num {
		case 1:
			err = unmarshalMeta(&p.ObjectMeta, v, ms)
		case 2:
			err = unmarshalSpec(&p.Spec, v)
		case 3:
			err = unmarshalStatus(&p.Status, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// counts counts the fields of a message of wire type bytes by field
// number, for the numbers below maxCounted.
type counts [maxCounted]int32

const maxCounted = 48

func count(b []byte) (counts, error) {
	var n counts
	for i := 0; i < len(b); {
		f, err := pbwire.NextField(b, i)
		if err != nil {
			return n, err
		}
		i = f.End
		if f.WireType == pbwire.WireBytes && f.Num < maxCounted {
			n[f.Num]++
		}
	}
	return n, nil
}

// sized gives *s a capacity of n, if n > 0 and *s is still nil.
func sized[T any](s *[]T, n int32) {
	if n > 0 && *s == nil {
		*s = make([]T, 0, n)
	}
}

// sizedMap makes *m with room for n entries, if n > 0 and *m is still nil.
func sizedMap[K comparable, V any](m *map[K]V, n int32) {
	if n > 0 && *m == nil {
		*m = make(map[K]V, n)
	}
}

// metaStrings says how unmarshalMeta makes the strings of the label and
// annotation maps: interned straight from the bytes by t (label keys and
// values, annotation keys, and annotation values with annotationValues) —
// a string already cached costs no allocation, and the maps need no second
// pass — or, with t nil, allocated as the generated unmarshaler does.
type metaStrings struct {
	t                *interner
	annotationValues bool
}

func unmarshalMeta(m *metav1.ObjectMeta, b []byte, ms metaStrings) error {
	n, err := count(b)
	if err != nil {
		return err
	}
	sizedMap(&m.Labels, n[11])
	sizedMap(&m.Annotations, n[12])
	sized(&m.OwnerReferences, n[13])
	sized(&m.Finalizers, n[14])
	sized(&m.ManagedFields, n[17])
	if ms.t == nil {
		return m.Unmarshal(b)
	}
	// The map entries (fields 11 and 12) are decoded here, the runs of
	// other fields between them by the generated unmarshaler.
	run := 0
	for i := 0; i < len(b); {
		f, _ := pbwire.NextField(b, i) // count read every field
		i = f.End
		if f.WireType != pbwire.WireBytes || (f.Num != 11 && f.Num != 12) {
			continue
		}
		if run < f.Start {
			if err := m.Unmarshal(b[run:f.Start]); err != nil {
				return err
			}
		}
		run = f.End
		if f.Num == 11 {
			err = ms.entry(m.Labels, b[f.Val:f.End], true)
		} else {
			err = ms.entry(m.Annotations, b[f.Val:f.End], ms.annotationValues)
		}
		if err != nil {
			return err
		}
	}
	return m.Unmarshal(b[run:])
}

// entry decodes a map entry message b (key: field 1, value: field 2, both
// optional, a later occurrence replacing an earlier one, other fields
// skipped, as the generated unmarshalers read it) into m, interning the
// key, and the value if values. A key or value of another wire type than
// bytes is a shape left to the generated unmarshaler (errPodShape).
func (ms metaStrings) entry(m map[string]string, b []byte, values bool) error {
	var k, v string
	for i := 0; i < len(b); {
		f, err := pbwire.NextField(b, i)
		if err != nil {
			return err
		}
		i = f.End
		if f.Num != 1 && f.Num != 2 {
			continue
		}
		if f.WireType != pbwire.WireBytes {
			return errPodShape
		}
		switch val := b[f.Val:f.End]; {
		case f.Num == 1:
			k = ms.t.canonicalBytes(val)
		case values:
			v = ms.t.canonicalBytes(val)
		default:
			v = string(val)
		}
	}
	m[k] = v
	return nil
}

func unmarshalStatus(s *corev1.PodStatus, b []byte) error {
	n, err := count(b)
	if err != nil {
		return err
	}
	sized(&s.Conditions, n[2])
	sized(&s.ContainerStatuses, n[8])
	sized(&s.InitContainerStatuses, n[10])
	sized(&s.PodIPs, n[12])
	sized(&s.HostIPs, n[16])
	return s.Unmarshal(b)
}

// unmarshalSpec decodes the containers and init containers (fields 2 and
// 20) one by one, and the fields between them as runs.
func unmarshalSpec(s *corev1.PodSpec, b []byte) error {
	n, err := count(b)
	if err != nil {
		return err
	}
	sized(&s.Volumes, n[1])
	sized(&s.Containers, n[2])
	sizedMap(&s.NodeSelector, n[7])
	sized(&s.ImagePullSecrets, n[15])
	sized(&s.InitContainers, n[20])
	sized(&s.Tolerations, n[22])
	sized(&s.TopologySpreadConstraints, n[33])
	run := 0
	for i := 0; i < len(b); {
		f, _ := pbwire.NextField(b, i) // count read every field
		i = f.End
		var list *[]corev1.Container
		switch {
		case f.WireType != pbwire.WireBytes:
			continue
		case f.Num == 2:
			list = &s.Containers
		case f.Num == 20:
			list = &s.InitContainers
		default:
			continue
		}
		if err := s.Unmarshal(b[run:f.Start]); err != nil {
			return err
		}
		run = f.End
		*list = append(*list, corev1.Container{})
		if err := unmarshalContainer(&(*list)[len(*list)-1], b[f.Val:f.End]); err != nil {
			return err
		}
	}
	return s.Unmarshal(b[run:])
}

func unmarshalContainer(c *corev1.Container, b []byte) error {
	n, err := count(b)
	if err != nil {
		return err
	}
	sized(&c.Command, n[3])
	sized(&c.Args, n[4])
	sized(&c.Ports, n[6])
	sized(&c.Env, n[7])
	sized(&c.VolumeMounts, n[9])
	sized(&c.EnvFrom, n[19])
	sized(&c.VolumeDevices, n[21])
	sized(&c.ResizePolicy, n[23])
	return c.Unmarshal(b)
}
