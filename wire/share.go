package wire

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// Sharing (WithSharedValues, opt-in): pods whose resource requirements,
// probes, security contexts, affinity, tolerations or node selector are
// identical get the same maps, slices and structs for them. This breaks
// the rule that only strings are shared, so it is only for informers whose
// handlers, transforms and readers never modify cached objects — client-go's
// contract, which not every controller keeps.

// sharedSlots is the size of the direct-mapped cache of shared values.
const sharedSlots = 1 << 12

type sharedEntry struct {
	key string
	val any
}

var sharedCache [sharedSlots]atomic.Pointer[sharedEntry]

// share returns a value equal to v that earlier pods may already hold —
// the one cached under the same key — or caches v under key and returns it.
// key must encode v's content completely, with a distinct prefix per type.
func share[T any](key string, v T) T {
	slot := &sharedCache[maphash.String(cacheSeed, key)&(sharedSlots-1)]
	if e := slot.Load(); e != nil && e.key == key {
		if t, ok := e.val.(T); ok {
			return t
		}
	}
	slot.Store(&sharedEntry{key: key, val: v})
	return v
}

type marshaler interface{ Marshal() ([]byte, error) }

// shareMsg shares a pointer to a protobuf message by its encoding.
func shareMsg[T marshaler](prefix string, v T) T {
	b, err := v.Marshal()
	if err != nil {
		return v
	}
	return share(prefix+string(b), v)
}

// sharePod shares the identical parts of a pod with earlier pods.
func sharePod(p *corev1.Pod) {
	s := &p.Spec
	if len(s.NodeSelector) > 0 {
		keys := make([]string, 0, len(s.NodeSelector))
		for k := range s.NodeSelector {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		b.WriteString("nodeSelector\x00")
		for _, k := range keys {
			b.WriteString(k)
			b.WriteByte(0)
			b.WriteString(s.NodeSelector[k])
			b.WriteByte(0)
		}
		s.NodeSelector = share(b.String(), s.NodeSelector)
	}
	if s.Affinity != nil {
		s.Affinity = shareMsg("affinity\x00", s.Affinity)
	}
	if s.SecurityContext != nil {
		s.SecurityContext = shareMsg("podSecurityContext\x00", s.SecurityContext)
	}
	if len(s.Tolerations) > 0 {
		var b strings.Builder
		b.WriteString("tolerations\x00")
		for i := range s.Tolerations {
			m, err := s.Tolerations[i].Marshal()
			if err != nil {
				return
			}
			b.Write(binary.AppendUvarint(nil, uint64(len(m))))
			b.Write(m)
		}
		s.Tolerations = share(b.String(), s.Tolerations)
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			if b, err := c.Resources.Marshal(); err == nil {
				c.Resources = share("resources\x00"+string(b), c.Resources)
			}
			for _, pr := range []**corev1.Probe{&c.LivenessProbe, &c.ReadinessProbe, &c.StartupProbe} {
				if *pr != nil {
					*pr = shareMsg("probe\x00", *pr)
				}
			}
			if c.SecurityContext != nil {
				c.SecurityContext = shareMsg("securityContext\x00", c.SecurityContext)
			}
		}
	}
}
