package diet

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// Sharing before decoding (protobuf pods). A shared part is keyed by its
// bytes as they arrive — the run of its field's occurrences in the
// enclosing message — so a pod's bytes are looked up before they are
// unmarshalled: a part found in the cache is cut out of the bytes, the
// rest is unmarshalled, compacted and interned, and the cached value is
// put in its place. A hit costs a hash and a compare, and no decoding,
// allocation, interning or compaction. A part not found is decoded with
// the pod and cached, under a copy of its bytes, once its pod is done
// changing it. Equal bytes decode to equal values, so only equal values
// are shared; non-canonical encodings only miss.
//
// Only the shapes the generated unmarshalers decode field by field are
// looked up: a repeated part whose occurrences follow each other, a
// singular part that occurs once, inside messages that occur once (or are
// list elements). A pod with the metadata, spec or status message twice
// (merged by the unmarshaler) is shared after decoding (sharePod) instead.

// sharedPart is a field of a pod's message, or of a message inside it,
// whose decoded value pods with the same bytes share.
type sharedPart struct {
	kind     uint16 // unique per part, never 0 (see sharedSlot)
	field    int32
	repeated bool
	maps     bool // holds a map: shared with WithSharedValues only
	get      func(p *corev1.Pod, i int) any
	set      func(p *corev1.Pod, i int, v any)
}

// part makes the sharedPart of field in the message that at finds (the
// i-th of its list, for list elements), whose value f points to.
func part[P, T any](at func(*corev1.Pod, int) *P, field int32, repeated, maps bool, f func(*P) *T) *sharedPart {
	return &sharedPart{
		field: field, repeated: repeated, maps: maps,
		get: func(p *corev1.Pod, i int) any { return *f(at(p, i)) },
		set: func(p *corev1.Pod, i int, v any) { *f(at(p, i)) = v.(T) },
	}
}

// shareScope is a message whose fields the walk looks into: the parts it
// may share and the embedded messages that hold more.
type shareScope struct {
	parts    []*sharedPart
	children []shareChild
	// byNum maps a field number below maxScopeField to its part k (k+1)
	// or child k (-k-1); 0: neither. Filled by podScope's numbering.
	byNum [maxScopeField]int8
}

type shareChild struct {
	field int32
	list  bool // repeated: the i-th occurrence is element i
	scope *shareScope
}

// maxParts and maxChildren bound a scope's parts and children (the walk
// keeps their spans and counts in arrays).
const (
	maxParts      = 12
	maxChildren   = 4
	maxScopeField = 64 // field numbers of parts and children are below
)

// podScope describes the pod message (field numbers from k8s.io/api's
// generated.proto).
var podScope = func() *shareScope {
	meta := func(p *corev1.Pod, _ int) *metav1.ObjectMeta { return &p.ObjectMeta }
	spec := func(p *corev1.Pod, _ int) *corev1.PodSpec { return &p.Spec }
	status := func(p *corev1.Pod, _ int) *corev1.PodStatus { return &p.Status }
	volume := func(p *corev1.Pod, i int) *corev1.Volume { return &p.Spec.Volumes[i] }
	containers := func(at func(*corev1.Pod, int) *corev1.Container) *shareScope {
		type c = corev1.Container
		return &shareScope{parts: []*sharedPart{
			part(at, 3, true, false, func(c *c) *[]string { return &c.Command }),
			part(at, 4, true, false, func(c *c) *[]string { return &c.Args }),
			part(at, 6, true, false, func(c *c) *[]corev1.ContainerPort { return &c.Ports }),
			part(at, 7, true, false, func(c *c) *[]corev1.EnvVar { return &c.Env }),
			part(at, 19, true, false, func(c *c) *[]corev1.EnvFromSource { return &c.EnvFrom }),
			part(at, 10, false, false, func(c *c) **corev1.Probe { return &c.LivenessProbe }),
			part(at, 11, false, false, func(c *c) **corev1.Probe { return &c.ReadinessProbe }),
			part(at, 22, false, false, func(c *c) **corev1.Probe { return &c.StartupProbe }),
			part(at, 12, false, false, func(c *c) **corev1.Lifecycle { return &c.Lifecycle }),
			part(at, 15, false, false, func(c *c) **corev1.SecurityContext { return &c.SecurityContext }),
			part(at, 8, false, true, func(c *c) *corev1.ResourceRequirements { return &c.Resources }),
		}}
	}
	pod := &shareScope{children: []shareChild{
		{1, false, &shareScope{parts: []*sharedPart{
			part(meta, 13, true, false, func(m *metav1.ObjectMeta) *[]metav1.OwnerReference { return &m.OwnerReferences }),
			part(meta, 14, true, false, func(m *metav1.ObjectMeta) *[]string { return &m.Finalizers }),
		}}},
		{2, false, &shareScope{
			parts: []*sharedPart{
				part(spec, 22, true, false, func(s *corev1.PodSpec) *[]corev1.Toleration { return &s.Tolerations }),
				part(spec, 15, true, false, func(s *corev1.PodSpec) *[]corev1.LocalObjectReference { return &s.ImagePullSecrets }),
				part(spec, 14, false, false, func(s *corev1.PodSpec) **corev1.PodSecurityContext { return &s.SecurityContext }),
				part(spec, 18, false, true, func(s *corev1.PodSpec) **corev1.Affinity { return &s.Affinity }),
				part(spec, 7, true, true, func(s *corev1.PodSpec) *map[string]string { return &s.NodeSelector }),
			},
			children: []shareChild{
				{1, true, &shareScope{parts: []*sharedPart{
					part(volume, 2, false, false, func(v *corev1.Volume) *corev1.VolumeSource { return &v.VolumeSource }),
				}}},
				{2, true, containers(func(p *corev1.Pod, i int) *corev1.Container { return &p.Spec.Containers[i] })},
				{20, true, containers(func(p *corev1.Pod, i int) *corev1.Container { return &p.Spec.InitContainers[i] })},
			},
		}},
		{3, false, &shareScope{parts: []*sharedPart{
			part(status, 16, true, false, func(s *corev1.PodStatus) *[]corev1.HostIP { return &s.HostIPs }),
		}}},
	}}
	kind := uint16(0)
	var number func(*shareScope)
	number = func(s *shareScope) {
		if len(s.parts) > maxParts || len(s.children) > maxChildren {
			panic("diet: a share scope has more than maxParts parts or maxChildren children")
		}
		for k, p := range s.parts {
			kind++
			p.kind = kind
			s.index(p.field, int8(k+1))
		}
		for k, c := range s.children {
			s.index(c.field, int8(-k-1))
			number(c.scope)
		}
	}
	number(pod)
	return pod
}()

// sharePlan is what the walk of one pod's bytes found: the parts cached
// (hits, cut from the bytes) and the parts to cache once the pod is
// decoded (misses seen before; see seenBefore). Scratch of one interner, reused pod after pod.
type sharePlan struct {
	cutter pbwire.Cutter
	hits   []partUse
	misses []partUse
	buf    []byte // the pod's bytes without the hits
}

type partUse struct {
	part       *sharedPart
	idx        int
	val        any    // hits: the cached value
	start, end int    // misses: the part's bytes
	hash       uint64 // misses: their hash
}

func (pl *sharePlan) reset() {
	pl.cutter.Reset()
	clear(pl.hits) // drop the references to cached values
	pl.hits, pl.misses = pl.hits[:0], pl.misses[:0]
	if cap(pl.buf) > maxKeptBuf {
		pl.buf = nil // a rare large pod's scratch is not kept
	}
}

// maxKeptBuf bounds the scratch an interner keeps between pods.
const maxKeptBuf = 1 << 20

// plan walks the pod message b and looks its parts up. It returns the
// bytes to unmarshal — b, or b without the hits in pl.buf — and false if
// b has a shape the walk does not follow (the plan is then empty).
func (pl *sharePlan) plan(t *interner, b []byte, maps bool) ([]byte, bool) {
	pl.reset()
	if !pl.walk(t, b, pbwire.Field{End: len(b)}, podScope, 0, maps, false) {
		pl.reset()
		return b, false
	}
	if !pl.cutter.Cuts() {
		return b, true
	}
	pl.buf = pl.cutter.AppendTo(pl.buf[:0], b)
	return pl.buf, true
}

// walk looks into the message b[f.Val:f.End], the idx-th of its list
// (embedded: its length prefix is rewritten when anything in it is cut).
func (pl *sharePlan) walk(t *interner, b []byte, f pbwire.Field, sc *shareScope, idx int, maps, embedded bool) bool {
	token := 0
	if embedded {
		token = pl.cutter.Open(f)
	}
	type span struct {
		start, end, n int
		bad           bool
	}
	var spans [maxParts]span
	var seen [maxChildren]int // occurrences per child
	last := int32(0)
	for i := f.Val; i < f.End; {
		g, err := pbwire.NextField(b[:f.End], i)
		if err != nil {
			return false
		}
		i = g.End
		prev := last
		last = g.Num
		if g.WireType != pbwire.WireBytes {
			continue
		}
		k, isChild := sc.lookup(g.Num)
		if k < 0 {
			continue
		}
		if isChild {
			c := &sc.children[k]
			if !c.list && seen[k] > 0 {
				return false
			}
			if !pl.walk(t, b, g, c.scope, seen[k], maps, true) {
				return false
			}
			seen[k]++
			continue
		}
		s := &spans[k]
		if s.n == 0 {
			s.start = g.Start
		} else if prev != g.Num || !sc.parts[k].repeated {
			s.bad = true
		}
		s.end = g.End
		s.n++
	}
	for k, p := range sc.parts {
		s := spans[k]
		if s.n == 0 || s.bad || (p.maps && !maps) {
			continue
		}
		v, h, ok := t.lookup(p.kind, b[s.start:s.end])
		switch {
		case ok:
			if !detectMutations { // else decoded too, and checked (mutation.go)
				pl.cutter.Cut(s.start, s.end)
			}
			pl.hits = append(pl.hits, partUse{part: p, idx: idx, val: v})
		case t.seenBefore(h):
			pl.misses = append(pl.misses, partUse{part: p, idx: idx, start: s.start, end: s.end, hash: h})
		}
	}
	if embedded {
		pl.cutter.Close(token)
	}
	return true
}

func (sc *shareScope) index(num int32, v int8) {
	if num <= 0 || num >= maxScopeField || sc.byNum[num] != 0 {
		panic("diet: a share scope's field number is out of range or used twice")
	}
	sc.byNum[num] = v
}

// lookup returns the child (k ≥ 0, child true) or part (k ≥ 0) of field
// num, or k < 0 for neither.
func (sc *shareScope) lookup(num int32) (k int, child bool) {
	if num <= 0 || num >= maxScopeField {
		return -1, false
	}
	switch v := sc.byNum[num]; {
	case v > 0:
		return int(v) - 1, false
	case v < 0:
		return int(-v) - 1, true
	}
	return -1, false
}

// finish caches the misses of the decoded pod p, whose bytes were b, and
// puts the hits in place. REQUIRES: p was decoded from what plan returned
// for b, and is compacted and interned.
func (pl *sharePlan) finish(t *interner, p *corev1.Pod, b []byte) {
	for _, m := range pl.misses {
		t.store(m.part.kind, b[m.start:m.end], m.hash, m.part.get(p, m.idx))
	}
	for _, h := range pl.hits {
		if detectMutations {
			checkUnmodified(p, fmt.Sprintf("shared %T", h.val), h.part.get(p, h.idx), h.val)
		}
		h.part.set(p, h.idx, h.val)
	}
	pl.reset()
}
