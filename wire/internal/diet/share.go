package diet

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sharing: pods whose parts are identical get the same slices and structs
// for them — for replicas of one template that is most of the spec. A part
// is keyed by its complete protobuf encoding, so only equal values are
// shared. WithSharing (part of WithDiet) shares parts that hold no map:
// owner references, containers' env, ports, args, probes and security
// contexts, volume sources, tolerations. Volume mounts are not shared: the
// service account token's volume has a random name per pod
// (kube-api-access-xxxxx), so they would only fill the cache.
// WithSharedValues (opt-in) also shares parts holding maps: resource
// requirements, node selector, affinity.
//
// Aliasing contract: objects from the cache must not be modified in place
// (client-go's rule too; copy with DeepCopy first). A change to a shared
// slice element or struct shows in every pod sharing it, and is a data race
// with other readers. A shared map is worse: two goroutines writing to it
// at once stop the program (fatal error: concurrent map writes), which is
// why maps are shared only on request.

// The cache of shared values of each interner, two-way set-associative,
// starts at minSharedSlots slots when the first part is cached and doubles,
// up to maxSharedSlots, when it turns over: when store was called for as
// many parts as a quarter of its slots since it last grew, and for at least
// one in 128 of the parts looked up meanwhile. It must hold the parts of
// every template in use at once. The pods of a list arrive grouped by
// namespace, so a few templates' parts at a time would do; the pods a watch
// creates come in any order, and with too small a cache their parts miss
// and are not shared. On loadgen's 100k pods (5000 templates, ~13k distinct
// parts) pods decoded in a random order took 13.3 KB each with a fixed 4096
// slots, against 12.2 KB in list order; so an informer whose cache a list
// filled grew by ~100 MiB as churn replaced its pods. Growing, the cache
// reaches 32Ki slots in list order and 64Ki in a random order, and the pods
// take 12.1 and 12.2 KB (TestSharingOrderIndependent checks the sharing).
// A cache that fits is seldom stored to, so an informer of few templates
// keeps the smallest (56 KiB) however long it runs; the largest is 3.5 MiB,
// with 1 MiB of seen hashes.
const (
	minSharedSlots = 1 << 10
	maxSharedSlots = 1 << 16
)

type sharedSlot struct {
	kind  uint16 // 0: keyed by sharePod; else the sharedPart's (shareproto.go)
	key   string
	val   any
	used  bool   // as internSlot.used: a second chance for values that repeat
	stamp uint64 // when it was stored (interner.clock)
}

// hash returns the hash of a part's key for values of kind.
func (t *interner) hash(kind uint16, key []byte) uint64 {
	return partHash(kind, unsafe.String(unsafe.SliceData(key), len(key)))
}

func partHash(kind uint16, key string) uint64 { return hashKey(key) + uint64(kind)*0x9e3779b97f4a7c15 }

// ways returns the two slots a key hashed h may use: the cache is two-way
// set-associative, so two parts that hash alike do not evict each other
// pod after pod.
func (t *interner) ways(h uint64) (*sharedSlot, *sharedSlot) {
	i := h & uint64(len(t.shared)-1) &^ 1
	return &t.shared[i], &t.shared[i+1]
}

// grow doubles the cache of shared values and the table of seen hashes,
// keeping their entries.
func (t *interner) grow() {
	old, seen := t.shared, t.seen
	t.shared, t.seen, t.lookups, t.stores = make([]sharedSlot, 2*len(old)), make([]uint64, 2*len(seen)), 0, 0
	for _, slot := range old {
		if slot.val != nil {
			a, b := t.ways(partHash(slot.kind, slot.key))
			if a.val != nil {
				a = b
			}
			*a = slot
		}
	}
	for _, h := range seen {
		if h != 0 {
			t.seenBefore(h)
		}
	}
}

// lookup returns the value cached under kind and key, if any, and the
// key's hash (for store).
func (t *interner) lookup(kind uint16, key []byte) (any, uint64, bool) {
	h := t.hash(kind, key)
	t.lookups++
	if t.shared == nil {
		return nil, h, false
	}
	a, b := t.ways(h)
	for _, slot := range [2]*sharedSlot{a, b} {
		if slot.kind == kind && slot.val != nil && slot.key == string(key) {
			slot.used = true
			return slot.val, h, true
		}
	}
	return nil, h, false
}

// seenBefore reports whether a part not found in the cache, hashed h, was
// seen lately, and remembers it if not. A part is cached only from its
// second sighting on, so that the parts seen once — most misses: owner
// references, env lists and volume sources unique to one pod — cost no
// copy of their bytes, no boxed value and no slot that a repeated part
// could use; each template pays for that with one pod that does not share
// its part. The table holds hashes alone: a hash that collides makes a part
// cached one sighting early, never shared with a different part (the cache
// compares whole keys). It is two-way set-associative, each set holding its
// two latest misses, so that two parts of one template falling in one set
// do not evict each other pod after pod and stay uncached for good.
func (t *interner) seenBefore(h uint64) bool {
	h |= 1 // never 0, the empty slot
	if t.seen == nil {
		t.seen = make([]uint64, 2*minSharedSlots)
	}
	set := t.seen[(h>>32)&uint64(len(t.seen)-1)&^1:][:2]
	if set[0] == h || set[1] == h {
		return true
	}
	set[0], set[1] = h, set[0]
	return false
}

// store caches v under kind and key, hashed h, in the way that is empty,
// or else not used since it was stored, the older one first; if both were
// used, the older one gets a second chance instead (its use is forgotten)
// and v is not cached.
func (t *interner) store(kind uint16, key []byte, h uint64, v any) {
	if t.shared == nil {
		t.shared = make([]sharedSlot, minSharedSlots)
	}
	if t.stores++; t.stores >= len(t.shared)/4 && 128*t.stores >= t.lookups && len(t.shared) < maxSharedSlots {
		t.grow()
	}
	a, b := t.ways(h)
	if b.stamp < a.stamp {
		a, b = b, a // a is the older
	}
	slot := a
	switch {
	case a.val == nil || !a.used:
	case b.val == nil || !b.used:
		slot = b
	default:
		a.used = false
		return
	}
	t.clock++
	if slot.val == nil {
		t.counts.shared.Add(1)
	}
	slot.kind, slot.key, slot.val, slot.used, slot.stamp = kind, string(key), v, false, t.clock
}

// share returns a value equal to v that earlier pods may already hold —
// the one cached under the same key with the same type — or returns v,
// cached under key if its key was seen before (seenBefore). key must
// encode v's content completely.
func share[T any](t *interner, key []byte, v T) T {
	x, h, ok := t.lookup(0, key)
	if ok {
		if y, ok := x.(T); ok {
			if detectMutations {
				checkUnmodified(t.sharing, fmt.Sprintf("shared %T", y), v, y)
			}
			return y
		}
	}
	if t.seenBefore(h) {
		t.store(0, key, h, v)
	}
	return v
}

// message is a generated protobuf message type.
type message[E any] interface {
	*E
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// appendMsg appends e's encoding, length-prefixed, to b.
func appendMsg[E any, P message[E]](b []byte, e *E) ([]byte, bool) {
	p := P(e)
	n := p.Size()
	b = binary.AppendUvarint(b, uint64(n))
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	_, err := p.MarshalToSizedBuffer(b[start:])
	return b, err == nil
}

// shareSlice shares a non-empty slice of messages.
func shareSlice[E any, P message[E]](t *interner, s []E) []E {
	if len(s) == 0 {
		return s
	}
	b := t.key[:0]
	ok := true
	for i := range s {
		if b, ok = appendMsg[E, P](b, &s[i]); !ok {
			return s
		}
	}
	t.key = b
	return share(t, b, s)
}

// sharePtr shares a message behind a non-nil pointer.
func sharePtr[E any, P message[E]](t *interner, e *E) *E {
	if e == nil {
		return e
	}
	b, ok := appendMsg[E, P](t.key[:0], e)
	if !ok {
		return e
	}
	t.key = b
	return share(t, b, e)
}

// shareStrings shares a non-empty slice of strings.
func shareStrings(t *interner, s []string) []string {
	if len(s) == 0 {
		return s
	}
	b := t.key[:0]
	for _, x := range s {
		b = binary.AppendUvarint(b, uint64(len(x)))
		b = append(b, x...)
	}
	t.key = b
	return share(t, b, s)
}

// sharePod shares the identical map-free parts of a pod with earlier pods,
// and with maps also the parts that hold maps.
func sharePod(t *interner, p *corev1.Pod, withMaps bool) {
	if detectMutations {
		t.sharing = p
		defer func() { t.sharing = nil }()
	}
	p.OwnerReferences = shareSlice[metav1.OwnerReference](t, p.OwnerReferences)
	p.Finalizers = shareStrings(t, p.Finalizers)
	s := &p.Spec
	s.Tolerations = shareSlice[corev1.Toleration](t, s.Tolerations)
	s.ImagePullSecrets = shareSlice[corev1.LocalObjectReference](t, s.ImagePullSecrets)
	s.SecurityContext = sharePtr(t, s.SecurityContext)
	for i := range s.Volumes {
		v := &s.Volumes[i].VolumeSource
		v.Projected = sharePtr(t, v.Projected)
		v.ConfigMap = sharePtr(t, v.ConfigMap)
		v.Secret = sharePtr(t, v.Secret)
		v.DownwardAPI = sharePtr(t, v.DownwardAPI)
		v.EmptyDir = sharePtr(t, v.EmptyDir)
		v.HostPath = sharePtr(t, v.HostPath)
		v.PersistentVolumeClaim = sharePtr(t, v.PersistentVolumeClaim)
	}
	if withMaps {
		s.Affinity = sharePtr(t, s.Affinity)
		if len(s.NodeSelector) > 0 {
			b := t.key[:0]
			for _, k := range slices.Sorted(maps.Keys(s.NodeSelector)) {
				b = binary.AppendUvarint(b, uint64(len(k)))
				b = append(b, k...)
				b = binary.AppendUvarint(b, uint64(len(s.NodeSelector[k])))
				b = append(b, s.NodeSelector[k]...)
			}
			t.key = b
			s.NodeSelector = share(t, b, s.NodeSelector)
		}
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Command = shareStrings(t, c.Command)
			c.Args = shareStrings(t, c.Args)
			c.Ports = shareSlice[corev1.ContainerPort](t, c.Ports)
			c.EnvFrom = shareSlice[corev1.EnvFromSource](t, c.EnvFrom)
			c.Env = shareSlice[corev1.EnvVar](t, c.Env)
			c.LivenessProbe = sharePtr(t, c.LivenessProbe)
			c.ReadinessProbe = sharePtr(t, c.ReadinessProbe)
			c.StartupProbe = sharePtr(t, c.StartupProbe)
			c.Lifecycle = sharePtr(t, c.Lifecycle)
			c.SecurityContext = sharePtr(t, c.SecurityContext)
			if withMaps {
				if b, ok := appendMsg(t.key[:0], &c.Resources); ok {
					t.key = b
					c.Resources = share(t, b, c.Resources)
				}
			}
		}
	}
	p.Status.HostIPs = shareSlice[corev1.HostIP](t, p.Status.HostIPs)
}
