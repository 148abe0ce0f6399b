package apisim

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// object is one version of one pod. Its identity and attributes never
// change after it is published; only its caches fill in (encodings) and
// its decoded form is released once a newer version supersedes it.
type object struct {
	key       string // "namespace/name", the tree key
	namespace string
	name      string
	rv        uint64
	rvString  string
	uid       types.UID
	created   metav1.Time
	labels    labels.Set // shared with pod.Labels; read-only
	fields    podFields

	// encodedOnly: drop pod as soon as an encoding exists (Config.EncodedOnly).
	// Set before the object is published; read-only afterwards.
	encodedOnly bool

	// pod is the decoded version. Read-only once published: it is shared by
	// every reader and never modified. The writer that supersedes this
	// version stores nil if an encoding exists (see release), so that
	// history mostly holds byte slices, not pointer-rich objects.
	pod atomic.Pointer[corev1.Pod]

	// encMu serializes filling enc, so each encoding is computed once even
	// when several watchers need it at the same moment.
	encMu sync.Mutex
	// enc[ct] is the encoding of the pod without kind/apiVersion (JSON) or
	// the bare Pod protobuf message (no envelope). Written once under encMu.
	enc [numContentTypes]atomic.Pointer[[]byte]
}

// podFields are the field-selector attributes the API server supports for pods.
type podFields struct {
	nodeName, phase, restartPolicy, schedulerName, serviceAccountName,
	podIP, nominatedNodeName, hostNetwork string
	name, namespace string
}

// Has implements fields.Fields.
func (f *podFields) Has(field string) bool {
	_, ok := f.lookup(field)
	return ok
}

// Get implements fields.Fields.
func (f *podFields) Get(field string) string {
	v, _ := f.lookup(field)
	return v
}

func (f *podFields) lookup(field string) (string, bool) {
	switch field {
	case "metadata.name":
		return f.name, true
	case "metadata.namespace":
		return f.namespace, true
	case "spec.nodeName":
		return f.nodeName, true
	case "spec.restartPolicy":
		return f.restartPolicy, true
	case "spec.schedulerName":
		return f.schedulerName, true
	case "spec.serviceAccountName":
		return f.serviceAccountName, true
	case "spec.hostNetwork":
		return f.hostNetwork, true
	case "status.phase":
		return f.phase, true
	case "status.podIP":
		return f.podIP, true
	case "status.nominatedNodeName":
		return f.nominatedNodeName, true
	}
	return "", false
}

// newObject wraps p, which the store owns from now on, as version rv.
func newObject(p *corev1.Pod, rv uint64) *object {
	o := &object{
		key:       p.Namespace + "/" + p.Name,
		namespace: p.Namespace,
		name:      p.Name,
		rv:        rv,
		rvString:  strconv.FormatUint(rv, 10),
		uid:       p.UID,
		created:   p.CreationTimestamp,
		labels:    labels.Set(p.Labels),
		fields: podFields{
			name:               p.Name,
			namespace:          p.Namespace,
			nodeName:           p.Spec.NodeName,
			phase:              string(p.Status.Phase),
			restartPolicy:      string(p.Spec.RestartPolicy),
			schedulerName:      p.Spec.SchedulerName,
			serviceAccountName: p.Spec.ServiceAccountName,
			podIP:              p.Status.PodIP,
			nominatedNodeName:  p.Status.NominatedNodeName,
			hostNetwork:        strconv.FormatBool(p.Spec.HostNetwork),
		},
	}
	p.ResourceVersion = o.rvString
	p.TypeMeta = metav1.TypeMeta{}
	o.pod.Store(p)
	return o
}

// restamped returns a version of o carrying resourceVersion rv, as the API
// server reports the final state of a deleted object (or of one that left
// a watcher's selector) with the event's resourceVersion.
func (o *object) restamped(rv uint64) *object {
	p := o.decoded()
	cp := *p // shallow: everything but the stamped fields is shared and read-only
	n := newObject(&cp, rv)
	n.encodedOnly = o.encodedOnly
	return n
}

// decoded returns the pod of this version, decoding it from one of its
// encodings if the decoded form has been released. The result is shared
// and read-only.
func (o *object) decoded() *corev1.Pod {
	if p := o.pod.Load(); p != nil {
		return p
	}
	p := &corev1.Pod{}
	var err error
	if b := o.enc[ctProtobuf].Load(); b != nil {
		err = p.Unmarshal(*b)
	} else {
		b := o.enc[ctJSON].Load()
		_, _, err = jsonSerializer.Decode(*b, nil, p)
		p.TypeMeta = metav1.TypeMeta{}
	}
	if err != nil {
		panic(fmt.Sprintf("apisim: stored encoding of %s@%d does not decode: %v", o.key, o.rv, err))
	}
	return p
}

// mutable returns a private copy of the pod of this version, for a writer
// to modify: a deep copy of the decoded form, or a fresh decode if it has
// been released.
func (o *object) mutable() *corev1.Pod {
	if p := o.pod.Load(); p != nil {
		return p.DeepCopy()
	}
	return o.decoded() // decoded afresh: already private
}

// release drops the decoded form of a superseded version if an encoding
// can stand in for it; otherwise the version keeps it (writers never pay
// for an encoding nobody asked for). Called by the superseding writer.
func (o *object) release() {
	// No lock: an encoder that loads pod == nil decodes from the encoding
	// that allowed the release; encodings are never removed.
	if o.enc[ctProtobuf].Load() != nil || o.enc[ctJSON].Load() != nil {
		o.pod.Store(nil)
	}
}

// event is one entry of the watch history: the change that produced
// resourceVersion obj.rv.
type event struct {
	typ  watch.EventType // Added, Modified or Deleted
	obj  *object         // state after the change; for Deleted the final state stamped with the deletion's RV
	prev *object         // state before the change; nil for Added

	// prevAtRV is prev stamped with obj.rv, built lazily for watchers whose
	// selector the object left with this change (they see a DELETED).
	prevAtRV atomic.Pointer[object]
}

func (e *event) prevRestamped() *object {
	if o := e.prevAtRV.Load(); o != nil {
		return o
	}
	o := e.prev.restamped(e.obj.rv)
	if e.prevAtRV.CompareAndSwap(nil, o) {
		return o
	}
	return e.prevAtRV.Load()
}

// state is one published version of the whole store.
type state struct {
	tree btree
	rv   uint64 // resourceVersion of the newest write (the store's current RV)
}

// store is the versioned object store with its watch history.
//
// Writers serialize on mu; readers take no lock: they load the current
// state (an immutable tree and its RV) and read history slots atomically.
// Lock order: store.mu, then watcher.mu. snapshots.mu is a leaf.
type store struct {
	mu struct {
		sync.Mutex
		// watchers is copied on change so writers can range over it.
		watchers []*watcher
	}

	// cur is replaced by every write, under mu.
	cur atomic.Pointer[state]

	// log[rv % len(log)] holds the event that produced rv while it is in
	// history. Slots are written under mu before cur is published, so a
	// reader that loaded cur with RV h finds events up to h, or newer ones
	// in slots that have been reused (detected by comparing obj.rv).
	log []atomic.Pointer[event]

	// minRV is the oldest resourceVersion a watch may resume from: all
	// events after it are in history. Raised by writes wrapping the log
	// and by Compact, under mu.
	minRV atomic.Uint64

	snapshots snapshotCache

	encodedOnly bool // Config.EncodedOnly

	nameSeq atomic.Uint64 // for generateName
}

// initialRV is the resourceVersion of the empty store.
const initialRV = 1

func newStore(cfg Config) *store {
	s := &store{log: make([]atomic.Pointer[event], cfg.History), encodedOnly: cfg.EncodedOnly}
	s.cur.Store(&state{rv: initialRV})
	s.minRV.Store(initialRV)
	s.snapshots.init(cfg.ListSnapshots)
	return s
}

// publishLocked makes tree the current state and ev its newest event.
// REQUIRES: s.mu held; ev.obj.rv == current rv + 1.
func (s *store) publishLocked(tree btree, ev *event) {
	ev.obj.encodedOnly = s.encodedOnly // not yet shared: published below
	rv := ev.obj.rv
	s.log[rv%uint64(len(s.log))].Store(ev)
	if n := uint64(len(s.log)); rv > n && rv-n > s.minRV.Load() {
		s.minRV.Store(rv - n)
	}
	s.cur.Store(&state{tree: tree, rv: rv})
	for _, w := range s.mu.watchers {
		w.notify(rv)
	}
}

// eventAt returns the event that produced rv, or nil if it is no longer in
// history. REQUIRES: rv <= an RV loaded from s.cur.
func (s *store) eventAt(rv uint64) *event {
	if rv <= s.minRV.Load() {
		return nil
	}
	ev := s.log[rv%uint64(len(s.log))].Load()
	if ev == nil || ev.obj.rv != rv {
		return nil
	}
	return ev
}

func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

func (s *store) create(in *corev1.Pod) (*corev1.Pod, error) {
	if in == nil {
		return nil, badRequest("apisim: nil pod")
	}
	p := in.DeepCopy()
	if err := s.prepareCreate(p); err != nil {
		return nil, err
	}
	if err := s.insert(p); err != nil {
		return nil, err
	}
	return p.DeepCopy(), nil
}

// load inserts pods the store takes ownership of. See Server.Load.
func (s *store) load(pods []*corev1.Pod) error {
	for _, p := range pods {
		if err := s.prepareCreate(p); err != nil {
			return err
		}
		if err := s.insert(p); err != nil {
			return err
		}
	}
	return nil
}

func (s *store) prepareCreate(p *corev1.Pod) error {
	if p.Name == "" && p.GenerateName != "" {
		p.Name = p.GenerateName + generatedSuffix(s.nameSeq.Add(1))
	}
	if p.Namespace == "" || p.Name == "" {
		return badRequest("pods %q: namespace and name are required", p.Name)
	}
	if p.ResourceVersion != "" {
		return badRequest("resourceVersion should not be set on objects to be created")
	}
	p.UID = uuid.NewUUID()
	if p.CreationTimestamp.IsZero() {
		p.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
	}
	return nil
}

// insert publishes p as a new object. p's RV is assigned here.
func (s *store) insert(p *corev1.Pod) error {
	key := p.Namespace + "/" + p.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	if cur.tree.Get(key) != nil {
		return apierrors.NewAlreadyExists(podsResource, p.Name)
	}
	o := newObject(p, cur.rv+1)
	s.publishLocked(cur.tree.Set(key, o), &event{typ: watch.Added, obj: o})
	return nil
}

func (s *store) update(in *corev1.Pod) (*corev1.Pod, error) {
	if in == nil {
		return nil, badRequest("apisim: nil pod")
	}
	p := in.DeepCopy()
	wantRV := p.ResourceVersion
	if _, err := s.replace(p.Namespace, p.Name, wantRV, func(*object) *corev1.Pod { return p }); err != nil {
		return nil, err
	}
	return p.DeepCopy(), nil
}

func (s *store) modify(namespace, name string, fn func(*corev1.Pod)) (uint64, error) {
	return s.replace(namespace, name, "", func(cur *object) *corev1.Pod {
		p := cur.mutable()
		fn(p)
		p.Namespace, p.Name = namespace, name
		return p
	})
}

// replace swaps the current version of namespace/name for the pod build
// returns, retrying if another writer got there first, and returns the new
// resourceVersion. build may be called more than once; the pod it returns
// becomes owned by the store.
func (s *store) replace(namespace, name, wantRV string, build func(cur *object) *corev1.Pod) (uint64, error) {
	key := namespace + "/" + name
	for {
		cur := s.cur.Load().tree.Get(key)
		if cur == nil {
			return 0, apierrors.NewNotFound(podsResource, name)
		}
		if wantRV != "" && wantRV != cur.rvString {
			return 0, conflict(name)
		}
		p := build(cur)
		p.UID, p.CreationTimestamp = cur.uid, cur.created

		s.mu.Lock()
		st := s.cur.Load()
		if st.tree.Get(key) != cur {
			s.mu.Unlock()
			continue
		}
		o := newObject(p, st.rv+1)
		s.publishLocked(st.tree.Set(key, o), &event{typ: watch.Modified, obj: o, prev: cur})
		cur.release()
		s.mu.Unlock()
		return o.rv, nil
	}
}

func conflict(name string) error {
	return apierrors.NewConflict(podsResource, name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

func (s *store) delete(namespace, name string) (*corev1.Pod, error) {
	key := namespace + "/" + name
	for {
		cur := s.cur.Load().tree.Get(key)
		if cur == nil {
			return nil, apierrors.NewNotFound(podsResource, name)
		}
		p := *cur.decoded() // shallow copy; stamped below

		s.mu.Lock()
		st := s.cur.Load()
		if st.tree.Get(key) != cur {
			s.mu.Unlock()
			continue
		}
		tomb := newObject(&p, st.rv+1)
		tree, _ := st.tree.Delete(key)
		s.publishLocked(tree, &event{typ: watch.Deleted, obj: tomb, prev: cur})
		cur.release()
		s.mu.Unlock()
		return p.DeepCopy(), nil
	}
}

func (s *store) get(namespace, name string) (*corev1.Pod, bool) {
	o := s.cur.Load().tree.Get(namespace + "/" + name)
	if o == nil {
		return nil, false
	}
	return o.decoded().DeepCopy(), true
}

// compact drops history up to and including rv (clamped to the current
// RV): watches and exact lists from older versions fail with 410 Expired.
func (s *store) compact(rv uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load().rv
	rv = min(rv, cur)
	old := s.minRV.Load()
	if rv <= old {
		return
	}
	s.minRV.Store(rv)
	n := uint64(len(s.log))
	from := old + 1
	if cur > n && cur-n+1 > from {
		from = cur - n + 1
	}
	for r := from; r <= rv; r++ {
		slot := &s.log[r%n]
		if ev := slot.Load(); ev != nil && ev.obj.rv == r {
			slot.Store(nil)
		}
	}
	s.snapshots.dropBefore(rv)
}

// addWatcher registers w for wake-ups.
func (s *store) addWatcher(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.watchers = append(s.mu.watchers[:len(s.mu.watchers):len(s.mu.watchers)], w)
}

func (s *store) removeWatcher(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*watcher, 0, len(s.mu.watchers))
	for _, x := range s.mu.watchers {
		if x != w {
			out = append(out, x)
		}
	}
	s.mu.watchers = out
}

func (s *store) watchers() []*watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.watchers
}

// snapshotAt returns the store as it was at resourceVersion rv, by taking a
// cached list snapshot or by undoing the history after rv on the current
// tree. It fails with 410 Expired if the history needed is gone.
func (s *store) snapshotAt(rv uint64) (btree, error) {
	if t, ok := s.snapshots.get(rv); ok {
		return t, nil
	}
	cur := s.cur.Load()
	if rv == cur.rv {
		return cur.tree, nil
	}
	t := cur.tree
	for r := cur.rv; r > rv; r-- {
		ev := s.eventAt(r)
		if ev == nil {
			return btree{}, errExpired(rv)
		}
		if ev.typ == watch.Added {
			t, _ = t.Delete(ev.obj.key)
		} else {
			t = t.Set(ev.prev.key, ev.prev)
		}
	}
	s.snapshots.put(rv, t)
	return t, nil
}

func errExpired(rv uint64) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("The resourceVersion for the provided list is too old (%d).", rv))
}

// snapshotCache keeps the trees of recent paginated lists so continuation
// pages read the same snapshot without replaying history.
type snapshotCache struct {
	mu struct {
		sync.Mutex
		byRV  map[uint64]btree
		order []uint64 // insertion order, oldest first
	}
	max int
}

func (c *snapshotCache) init(max int) {
	c.max = max
	c.mu.byRV = make(map[uint64]btree)
}

func (c *snapshotCache) get(rv uint64) (btree, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.mu.byRV[rv]
	return t, ok
}

func (c *snapshotCache) put(rv uint64, t btree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.byRV[rv]; ok || c.max <= 0 {
		return
	}
	c.mu.byRV[rv] = t
	c.mu.order = append(c.mu.order, rv)
	for len(c.mu.order) > c.max {
		delete(c.mu.byRV, c.mu.order[0])
		c.mu.order = c.mu.order[1:]
	}
}

func (c *snapshotCache) dropBefore(rv uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.mu.order[:0]
	for _, r := range c.mu.order {
		if r < rv {
			delete(c.mu.byRV, r)
		} else {
			kept = append(kept, r)
		}
	}
	c.mu.order = kept
}

func generatedSuffix(n uint64) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	// Mix so consecutive names do not look sequential.
	n = (n ^ 0x5bd1e995) * 0x9e3779b97f4a7c15
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[n%uint64(len(alphabet))]
		n /= uint64(len(alphabet))
	}
	return string(b)
}
