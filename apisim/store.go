package apisim

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
)

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

	nameSeq atomic.Uint64 // for generateName

	newUID func() types.UID // uuid.NewUUID; tests make it deterministic
}

// initialRV is the resourceVersion of the empty store.
const initialRV = 1

func newStore(cfg Config) *store {
	s := &store{log: make([]atomic.Pointer[event], cfg.History), newUID: uuid.NewUUID}
	s.cur.Store(&state{rv: initialRV})
	s.minRV.Store(initialRV)
	s.snapshots.init(cfg.ListSnapshots)
	return s
}

// publishLocked makes tree the current state and ev its newest event.
// REQUIRES: s.mu held; ev.obj.rv == current rv + 1.
func (s *store) publishLocked(tree btree, ev *event) {
	s.logLocked(ev)
	s.publishTreeLocked(tree, ev.obj.rv)
}

// logLocked puts ev into history.
// REQUIRES: s.mu held; ev.obj.rv == the RV of the last event logged + 1.
func (s *store) logLocked(ev *event) {
	rv := ev.obj.rv
	s.log[rv%uint64(len(s.log))].Store(ev)
	if n := uint64(len(s.log)); rv > n && rv-n > s.minRV.Load() {
		s.minRV.Store(rv - n)
		if rv%snapshotSweep == 0 {
			// Snapshots older than history serve no continue token; each
			// holds a tree of versions churn has replaced.
			s.snapshots.dropBefore(rv - n)
		}
	}
}

// publishTreeLocked makes tree, holding every change logged up to rv, the
// current state. REQUIRES: s.mu held; rv is the RV of the last event logged.
func (s *store) publishTreeLocked(tree btree, rv uint64) {
	s.cur.Store(&state{tree: tree, rv: rv})
	for _, w := range s.mu.watchers {
		w.notify(rv)
	}
}

// snapshotSweep is how many writes apart list snapshots that history has
// left behind are dropped.
const snapshotSweep = 1024

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

func (s *store) create(res *apiResource, in Object) (Object, error) {
	obj := res.codec.deepCopy(in)
	if err := s.prepareCreate(res, obj); err != nil {
		return nil, err
	}
	o, err := s.insert(res, obj)
	if err != nil {
		return nil, err
	}
	o.settle()
	return res.codec.deepCopy(obj), nil
}

// prepareCreate validates a new object and assigns what the API server
// assigns on create: a generated name, uid and creationTimestamp.
func (s *store) prepareCreate(res *apiResource, obj Object) error {
	if err := res.codec.normalize(obj); err != nil {
		return badRequest("%s %q: %v", res.gvr.Resource, obj.GetName(), err)
	}
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		obj.SetName(obj.GetGenerateName() + generatedSuffix(s.nameSeq.Add(1)))
	}
	if obj.GetNamespace() == "" || obj.GetName() == "" {
		return badRequest("%s %q: namespace and name are required", res.gvr.Resource, obj.GetName())
	}
	if obj.GetResourceVersion() != "" {
		return badRequest("resourceVersion should not be set on objects to be created")
	}
	obj.SetUID(s.newUID())
	if ts := obj.GetCreationTimestamp(); ts.IsZero() {
		obj.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	}
	return nil
}

// insert publishes obj as a new object; its resourceVersion is assigned
// here. The caller settles the version it returns.
func (s *store) insert(res *apiResource, obj Object) (*object, error) {
	key := res.key(obj.GetNamespace(), obj.GetName())
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	if cur.tree.Get(key) != nil {
		return nil, apierrors.NewAlreadyExists(res.groupResource(), obj.GetName())
	}
	o := newObject(res, obj, cur.rv+1)
	s.publishLocked(cur.tree.Set(o.key, o), &event{typ: watch.Added, obj: o})
	return o, nil
}

// insertBatch inserts objs, which prepareCreate has prepared, as new
// objects with consecutive resourceVersions, one event each, in one
// publication: the store goes from the state before the first to the state
// after the last at once (readers see either), and the tree's paths are
// copied once per batch, not once per object. It stops at the first object
// that exists, returning the versions inserted before it (which the caller
// settles) and AlreadyExists.
func (s *store) insertBatch(res *apiResource, objs []Object) ([]*object, error) {
	if len(objs) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.cur.Load()
	tree, b := cur.tree, &btreeBatch{}
	out := make([]*object, 0, len(objs))
	var err error
	for i, obj := range objs {
		if tree.Get(res.key(obj.GetNamespace(), obj.GetName())) != nil {
			err = apierrors.NewAlreadyExists(res.groupResource(), obj.GetName())
			break
		}
		o := newObject(res, obj, cur.rv+1+uint64(i))
		tree = tree.SetIn(b, o.key, o)
		out = append(out, o)
	}
	for _, o := range out {
		s.logLocked(&event{typ: watch.Added, obj: o})
	}
	if len(out) > 0 {
		s.publishTreeLocked(tree, out[len(out)-1].rv)
	}
	return out, err
}

func (s *store) update(res *apiResource, in Object) (Object, error) {
	return s.updateIf(res, in, preconditions{rv: in.GetResourceVersion()})
}

// updateIf is update under preconditions.
func (s *store) updateIf(res *apiResource, in Object, pre preconditions) (Object, error) {
	obj := res.codec.deepCopy(in)
	if _, err := s.replace(res, obj.GetNamespace(), obj.GetName(), pre,
		func(*object) Object { return obj }); err != nil {
		return nil, err
	}
	return res.codec.deepCopy(obj), nil
}

func (s *store) modify(res *apiResource, namespace, name string, fn func(Object)) (uint64, error) {
	return s.replace(res, namespace, name, preconditions{}, func(cur *object) Object {
		obj := cur.mutable()
		fn(obj)
		obj.SetNamespace(namespace)
		obj.SetName(name)
		return obj
	})
}

// preconditions of a write, as the API server checks them: a set
// resourceVersion or uid must be the stored object's.
type preconditions struct {
	rv  string
	uid types.UID
}

// check returns the API server's Conflict error for a failed precondition.
func (p preconditions) check(res *apiResource, name string, cur *object) error {
	if p.uid != "" && p.uid != cur.uid {
		return apierrors.NewConflict(res.groupResource(), name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", p.uid, cur.uid))
	}
	if p.rv != "" && p.rv != strconv.FormatUint(cur.rv, 10) {
		return apierrors.NewConflict(res.groupResource(), name,
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	return nil
}

// replace swaps the current version of namespace/name for the object build
// returns, retrying if another writer got there first, and returns the new
// resourceVersion. build may be called more than once; the object it
// returns becomes owned by the store (settling the new version drops the
// store's reference to it, never changes it).
func (s *store) replace(res *apiResource, namespace, name string, pre preconditions, build func(cur *object) Object) (uint64, error) {
	key := res.key(namespace, name)
	for {
		cur := s.cur.Load().tree.Get(key)
		if cur == nil {
			return 0, apierrors.NewNotFound(res.groupResource(), name)
		}
		if err := pre.check(res, name, cur); err != nil {
			return 0, err
		}
		obj := build(cur)
		if err := res.codec.normalize(obj); err != nil {
			return 0, badRequest("%s %q: %v", res.gvr.Resource, name, err)
		}
		obj.SetUID(cur.uid)
		obj.SetCreationTimestamp(cur.created)

		s.mu.Lock()
		st := s.cur.Load()
		if st.tree.Get(key) != cur {
			s.mu.Unlock()
			continue
		}
		o := newObject(res, obj, st.rv+1)
		s.publishLocked(st.tree.Set(key, o), &event{typ: watch.Modified, obj: o, prev: cur})
		cur.release()
		s.mu.Unlock()
		o.settle()
		return o.rv, nil
	}
}

// delete removes namespace/name and returns a copy of its final state,
// stamped with the deletion's resourceVersion.
func (s *store) delete(res *apiResource, namespace, name string, pre preconditions) (Object, error) {
	key := res.key(namespace, name)
	for {
		cur := s.cur.Load().tree.Get(key)
		if cur == nil {
			return nil, apierrors.NewNotFound(res.groupResource(), name)
		}
		if err := pre.check(res, name, cur); err != nil {
			return nil, err
		}
		final := res.codec.shallowCopy(cur.decoded()) // stamped below

		s.mu.Lock()
		st := s.cur.Load()
		if st.tree.Get(key) != cur {
			s.mu.Unlock()
			continue
		}
		tomb := newObject(res, final, st.rv+1)
		tree, _ := st.tree.Delete(key)
		s.publishLocked(tree, &event{typ: watch.Deleted, obj: tomb, prev: cur})
		cur.release()
		s.mu.Unlock()
		tomb.settle()
		return res.codec.deepCopy(final), nil
	}
}

func (s *store) get(res *apiResource, namespace, name string) (Object, bool) {
	o := s.cur.Load().tree.Get(res.key(namespace, name))
	if o == nil {
		return nil, false
	}
	return res.codec.deepCopy(o.decoded()), true
}

// list returns copies of the current objects of res in namespace ("" for
// all), in key order.
func (s *store) list(res *apiResource, namespace string) []Object {
	var out []Object
	from, end := res.keyRange(namespace)
	s.cur.Load().tree.Ascend(from, func(key string, o *object) bool {
		if key >= end {
			return false
		}
		out = append(out, res.codec.deepCopy(o.decoded()))
		return true
	})
	return out
}

// resourceVersions returns "namespace/name" → resourceVersion of the
// current objects of res in namespace ("" for all).
func (s *store) resourceVersions(res *apiResource, namespace string) map[string]string {
	from, end := res.keyRange(namespace)
	tree := s.cur.Load().tree
	out := make(map[string]string, tree.Rank(end)-tree.Rank(from))
	tree.Ascend(from, func(key string, o *object) bool {
		if key >= end {
			return false
		}
		out[key[len(res.prefix):]] = strconv.FormatUint(o.rv, 10)
		return true
	})
	return out
}

// count returns the number of current objects of res.
func (s *store) count(res *apiResource) int {
	tree := s.cur.Load().tree
	from, end := res.keyRange("")
	return tree.Rank(end) - tree.Rank(from)
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
