package diet

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"weak"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// Sharing with the previous version of the same pod (protobuf pods, with
// WithSharing).
//
// Most updates of a pod leave its spec alone — the kubelet writes the
// status, controllers write labels and annotations — and many leave the
// status alone too. versions remembers, per pod key, the pod decoded last
// (by a weak pointer) and digests of the bytes its spec and status were
// decoded from. A pod whose spec (or status) bytes have the digest its
// previous version's had, while that version is still in memory, takes
// that version's spec (status) instead of decoding it: the bytes are cut
// before the rest is unmarshalled, as the cross-pod parts are
// (shareproto.go), and the value is copied in afterwards — a shallow copy,
// whose slices and pointers the two versions share, with the maps in it
// copied unless WithSharedValues (unshareSpecMaps, unshareStatusMaps). An
// update that changes an annotation then decodes the pod's metadata only;
// a relist reuses what did not change since the watch saw it.
//
// A digest is 128 bits: two maphash sums under seeds drawn at random when
// the ListerWatcher is made. Different bytes get the same digest with a
// probability of about 2⁻¹²⁸ per comparison (the seeds are not known
// outside the process; maphash resists no one who knows them, and the
// bytes come from the API server, which is trusted with the objects
// anyway).
//
// The table holds, per key seen, 8 bytes of key hash, the two digests and
// a weak pointer (which keeps nothing alive): a version that leaves memory
// — deleted, replaced by a newer one, or by a transform's copy — is
// collected, and its entry is removed by the next sweep of its stripe,
// which runs once the stripe has taken in half its size in new keys. The
// table is therefore bounded by the keys its stripes held at their last
// sweep plus what they added since. Keys are verified against the previous
// version itself, so two keys with the same hash only miss.
//
// Concurrency: decoders look up and store under the mutex of the key's
// stripe. A pod is stored after it is completely decoded, and a decoder
// that loads it under the same mutex reads its spec and status only after
// that (the mutex orders the two). Two versions of one key decoded at once
// store in either order; an older one left in the table costs a miss, not
// a wrong value, since digests are of the stored version's own bytes.
type versions struct {
	seeds   [2]maphash.Seed
	stripes [versionStripes]versionStripe
}

const versionStripes = 16

type versionStripe struct {
	mu    sync.Mutex
	m     map[uint64]version // by keyHash
	added int                // keys added since the last sweep
	_     [64]byte           // keeps stripes' mutexes off each other's cache lines
}

// version is what the table keeps of a pod.
type version struct {
	pod          weak.Pointer[corev1.Pod]
	spec, status digest
}

type digest struct {
	a, b uint64
	ok   bool // the part was present once (zero: nothing to compare)
}

// sweepMin is how many keys a stripe adds before its first sweep.
const sweepMin = 256

// keyHash hashes a pod's namespace/name. A variable so that tests can make
// keys collide.
var keyHash = func(seed maphash.Seed, key []byte) uint64 { return maphash.Bytes(seed, key) }

func newVersions() *versions {
	v := &versions{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}
	for i := range v.stripes {
		v.stripes[i].m = map[uint64]version{}
	}
	return v
}

func (v *versions) digest(b []byte) digest {
	return digest{maphash.Bytes(v.seeds[0], b), maphash.Bytes(v.seeds[1], b), true}
}

func (v *versions) stripe(h uint64) *versionStripe { return &v.stripes[h>>60] }

// load returns the live previous version stored under key (hashed h), and
// its digests.
func (v *versions) load(h uint64, ns, name []byte) (*corev1.Pod, version) {
	s := v.stripe(h)
	s.mu.Lock()
	e, ok := s.m[h]
	s.mu.Unlock()
	if !ok {
		return nil, version{}
	}
	p := e.pod.Value()
	if p == nil || p.Namespace != string(ns) || p.Name != string(name) {
		return nil, version{}
	}
	return p, e
}

// store remembers p, whose spec and status bytes had the digests given, as
// the latest version of the key hashed h.
func (v *versions) store(h uint64, p *corev1.Pod, spec, status digest) {
	e := version{pod: weak.Make(p), spec: spec, status: status}
	s := v.stripe(h)
	s.mu.Lock()
	if _, ok := s.m[h]; !ok {
		s.added++
		if s.added >= sweepMin && s.added >= len(s.m)/2 {
			s.sweep()
		}
	}
	s.m[h] = e
	s.mu.Unlock()
}

// sweep removes the entries whose pod was collected. REQUIRES: s.mu held.
func (s *versionStripe) sweep() {
	maps.DeleteFunc(s.m, func(_ uint64, e version) bool { return e.pod.Value() == nil })
	s.added = 0
}

// reusePlan is what the lookup of one pod found: its key and digests, and
// the previous version whose spec and status it takes. Scratch of one
// interner, reused pod after pod.
type reusePlan struct {
	h                uint64
	spec, status     digest
	prev             *corev1.Pod
	useSpec, useStat bool
	cutter           pbwire.Cutter
	key, buf         []byte
	keyed            bool
}

func (rp *reusePlan) reset() {
	rp.prev, rp.useSpec, rp.useStat, rp.keyed = nil, false, false, false
	rp.spec, rp.status = digest{}, digest{}
	rp.cutter.Reset()
	if cap(rp.buf) > maxKeptBuf {
		rp.buf = nil
	}
}

// plan looks the pod message b up in v and returns the bytes to
// unmarshal: b, or b without the spec and status that the previous
// version has (in rp.buf). A pod whose metadata, spec or status occurs
// more than once (merged by the unmarshaler) or that has no name is
// neither looked up nor stored.
func (rp *reusePlan) plan(v *versions, b []byte) []byte {
	rp.reset()
	var meta, spec, status pbwire.Field
	var n [4]int
	for i := 0; i < len(b); {
		g, err := pbwire.NextField(b, i)
		if err != nil {
			return b // the unmarshaler reports it
		}
		i = g.End
		if g.Num >= 1 && g.Num <= 3 {
			n[g.Num]++
			if g.WireType != pbwire.WireBytes {
				return b
			}
			switch g.Num {
			case 1:
				meta = g
			case 2:
				spec = g
			case 3:
				status = g
			}
		}
	}
	if n[1] != 1 || n[2] > 1 || n[3] > 1 {
		return b
	}
	ns, name, ok := podKey(b[:meta.End], meta.Val)
	if !ok {
		return b
	}
	rp.key = append(append(append(rp.key[:0], ns...), '/'), name...)
	rp.h, rp.keyed = keyHash(v.seeds[0], rp.key), true
	if n[2] == 1 {
		rp.spec = v.digest(b[spec.Val:spec.End])
	}
	if n[3] == 1 {
		rp.status = v.digest(b[status.Val:status.End])
	}
	prev, e := v.load(rp.h, ns, name)
	if prev == nil {
		return b
	}
	if rp.spec.ok && rp.spec == e.spec {
		rp.useSpec = true
		rp.cutter.Cut(spec.Start, spec.End)
	}
	if rp.status.ok && rp.status == e.status {
		rp.useStat = true
		rp.cutter.Cut(status.Start, status.End)
	}
	if !rp.useSpec && !rp.useStat {
		return b
	}
	rp.prev = prev
	if detectMutations { // decoded too, and checked in finish (mutation.go)
		return b
	}
	rp.buf = rp.cutter.AppendTo(rp.buf[:0], b)
	return rp.buf
}

// podKey returns the namespace and name in the metadata message
// b[i:] (the last occurrence of each, as the unmarshaler keeps); ok is
// false for a pod without a name or with metadata it cannot read.
func podKey(b []byte, i int) (ns, name []byte, ok bool) {
	for i < len(b) {
		g, err := pbwire.NextField(b, i)
		if err != nil {
			return nil, nil, false
		}
		i = g.End
		if g.WireType != pbwire.WireBytes {
			continue
		}
		switch g.Num {
		case 1:
			name = b[g.Val:g.End]
		case 3:
			ns = b[g.Val:g.End]
		}
	}
	return ns, name, len(name) > 0
}

// decodedAll tells finish that p was decoded from the whole message, not
// from what plan returned (the fallback after an error): nothing is
// reused, and p is stored.
func (rp *reusePlan) decodedAll() { rp.prev, rp.useSpec, rp.useStat = nil, false, false }

// finish puts the previous version's spec and status into the decoded pod
// p where plan reused them, and stores p as its key's latest version.
// REQUIRES: p was decoded from what plan returned, or decodedAll was
// called, and the diet is done with p.
func (rp *reusePlan) finish(v *versions, p *corev1.Pod, shareMaps bool) {
	if detectMutations && rp.useSpec {
		checkUnmodified(p, "spec of its previous version", &p.Spec, &rp.prev.Spec)
	}
	if detectMutations && rp.useStat {
		checkUnmodified(p, "status of its previous version", &p.Status, &rp.prev.Status)
	}
	if rp.useSpec {
		p.Spec = rp.prev.Spec
		if !shareMaps {
			unshareSpecMaps(&p.Spec)
		}
	}
	if rp.useStat {
		p.Status = rp.prev.Status
		if !shareMaps {
			unshareStatusMaps(&p.Status)
		}
	}
	if rp.keyed {
		v.store(rp.h, p, rp.spec, rp.status)
	}
	rp.reset()
}

// unshareSpecMaps gives s, a shallow copy of another pod's spec, its own
// copy of every map in it, and of the arrays and structs on the way to
// them; everything else stays shared. TestUnshareMaps checks that no map
// of a PodSpec filled at random stays shared.
func unshareSpecMaps(s *corev1.PodSpec) {
	s.NodeSelector = maps.Clone(s.NodeSelector)
	s.Overhead = maps.Clone(s.Overhead)
	s.Resources = unshareResources(s.Resources)
	s.Containers = unshareContainers(s.Containers)
	s.InitContainers = unshareContainers(s.InitContainers)
	if len(s.EphemeralContainers) > 0 {
		s.EphemeralContainers = slices.Clone(s.EphemeralContainers)
		for i := range s.EphemeralContainers {
			unshareRequirements(&s.EphemeralContainers[i].Resources)
		}
	}
	s.Affinity = s.Affinity.DeepCopy() // its term selectors hold maps
	if slices.ContainsFunc(s.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool { return c.LabelSelector != nil }) {
		s.TopologySpreadConstraints = slices.Clone(s.TopologySpreadConstraints)
		for i := range s.TopologySpreadConstraints {
			c := &s.TopologySpreadConstraints[i]
			c.LabelSelector = c.LabelSelector.DeepCopy()
		}
	}
	if slices.ContainsFunc(s.Volumes, volumeHasMaps) {
		s.Volumes = slices.Clone(s.Volumes)
		for i := range s.Volumes {
			if v := &s.Volumes[i]; volumeHasMaps(*v) {
				v.VolumeSource = *v.VolumeSource.DeepCopy()
			}
		}
	}
}

// volumeHasMaps reports whether v's source may hold a map.
func volumeHasMaps(v corev1.Volume) bool {
	s := v.VolumeSource
	if s.CSI != nil || s.FlexVolume != nil || s.Ephemeral != nil {
		return true
	}
	return s.Projected != nil && slices.ContainsFunc(s.Projected.Sources, func(p corev1.VolumeProjection) bool {
		return p.ClusterTrustBundle != nil || p.PodCertificate != nil
	})
}

func unshareContainers(cs []corev1.Container) []corev1.Container {
	if !slices.ContainsFunc(cs, func(c corev1.Container) bool { return c.Resources.Limits != nil || c.Resources.Requests != nil }) {
		return cs
	}
	cs = slices.Clone(cs)
	for i := range cs {
		unshareRequirements(&cs[i].Resources)
	}
	return cs
}

// unshareStatusMaps is unshareSpecMaps for a status.
func unshareStatusMaps(s *corev1.PodStatus) {
	s.AllocatedResources = maps.Clone(s.AllocatedResources)
	s.Resources = unshareResources(s.Resources)
	s.ContainerStatuses = unshareStatuses(s.ContainerStatuses)
	s.InitContainerStatuses = unshareStatuses(s.InitContainerStatuses)
	s.EphemeralContainerStatuses = unshareStatuses(s.EphemeralContainerStatuses)
}

func unshareStatuses(cs []corev1.ContainerStatus) []corev1.ContainerStatus {
	if !slices.ContainsFunc(cs, func(c corev1.ContainerStatus) bool { return c.AllocatedResources != nil || c.Resources != nil }) {
		return cs
	}
	cs = slices.Clone(cs)
	for i := range cs {
		c := &cs[i]
		c.AllocatedResources = maps.Clone(c.AllocatedResources)
		c.Resources = unshareResources(c.Resources)
	}
	return cs
}

func unshareResources(r *corev1.ResourceRequirements) *corev1.ResourceRequirements {
	if r == nil {
		return nil
	}
	c := *r
	unshareRequirements(&c)
	return &c
}

func unshareRequirements(r *corev1.ResourceRequirements) {
	r.Limits = maps.Clone(r.Limits)
	r.Requests = maps.Clone(r.Requests)
}
