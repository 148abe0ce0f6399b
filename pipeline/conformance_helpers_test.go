package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// guard is the deadline that turns a hang into a failure. It is never a
// timing assertion: every wait below ends as soon as its condition holds.
const guard = 30 * time.Second

// --- objects and the fake API ---

func newFake(watchList bool) *fakeapi.Cluster {
	return fakeapi.New(fakeapi.Config{
		NewList:   func() runtime.Object { return &corev1.ConfigMapList{} },
		WatchList: watchList,
		DeepCopy:  true,
	})
}

// cm builds a ConfigMap whose data "v" is the value the event logs report.
func cm(ns, name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string]string{"v": v},
	}
}

func withLabels(o *corev1.ConfigMap, kv ...string) *corev1.ConfigMap {
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Labels[kv[i]] = kv[i+1]
	}
	return o
}

func withData(o *corev1.ConfigMap, kv ...string) *corev1.ConfigMap {
	for i := 0; i+1 < len(kv); i += 2 {
		o.Data[kv[i]] = kv[i+1]
	}
	return o
}

func mustCreate(t *testing.T, c *fakeapi.Cluster, objs ...*corev1.ConfigMap) {
	t.Helper()
	for _, o := range objs {
		if _, err := c.Create(o); err != nil {
			t.Fatal(err)
		}
	}
}

// mustUpdate replaces an object and returns its new resourceVersion.
func mustUpdate(t *testing.T, c *fakeapi.Cluster, o *corev1.ConfigMap) uint64 {
	t.Helper()
	got, err := c.Update(o)
	if err != nil {
		t.Fatal(err)
	}
	return rvNum(t, got)
}

func mustDelete(t *testing.T, c *fakeapi.Cluster, key string) {
	t.Helper()
	if _, err := c.Delete(key); err != nil {
		t.Fatal(err)
	}
}

// forceRelist makes the reflector list again, whether or not anything
// changed: the resourceVersion is moved on silently (a scratch object is set
// and removed), the history is compacted, so re-watching from the
// reflector's resourceVersion gets 410 Gone, and the watch is closed. It
// returns once the reflector has a new watch, that is once the relist's
// Replace is queued (LIST then WATCH) or streamed ahead of any later event
// (WatchList): every later write reaches each key after the relist.
func forceRelist(t *testing.T, c *fakeapi.Cluster) {
	t.Helper()
	c.Set(cm("scratch", "scratch", ""))
	c.Remove("scratch/scratch")
	c.Compact()
	c.DropWatches()
	waitUntil(t, "the reflector to relist and watch again", func() bool { return c.Watches() == 1 })
}

func valueOf(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if d.Obj == nil {
			return "?"
		}
		obj = d.Obj
	}
	o, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return fmt.Sprintf("<%T>", obj)
	}
	return o.Data["v"]
}

func rvOf(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func rvNum(t *testing.T, obj any) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rvOf(obj), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion of %v: %v", obj, err)
	}
	return n
}

func objKey(obj any) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return fmt.Sprintf("<no key: %v>", err)
	}
	return k
}

// --- running an informer ---

// runInformer runs inf until the test ends (or stop is called) and returns stop,
// which cancels and waits for RunWithContext to return.
func runInformer(t *testing.T, inf cache.SharedIndexInformer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(guard):
			t.Errorf("RunWithContext did not return within %v of its context being cancelled", guard)
		}
	})
	t.Cleanup(stop)
	return stop
}

// runSynced is runInformer plus waiting for the informer to sync.
func runSynced(t *testing.T, inf cache.SharedIndexInformer) (stop func()) {
	t.Helper()
	stop = runInformer(t, inf)
	waitDone(t, "informer sync", inf.HasSyncedChecker())
	return stop
}

// waitDone waits for every checker to be done.
func waitDone(t *testing.T, what string, checkers ...cache.DoneChecker) {
	t.Helper()
	timeout := time.NewTimer(guard)
	defer timeout.Stop()
	for _, c := range checkers {
		select {
		case <-c.Done():
		case <-timeout.C:
			t.Fatalf("timed out (guard %v) waiting for %s (%s)", guard, what, c.Name())
		}
	}
}

// shutDown is cache.ShutDownEventHandler (remove, then wait until the
// handler has stopped) with the guard.
func shutDown(t *testing.T, inf cache.SharedIndexInformer, reg cache.ResourceEventHandlerRegistration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cache.ShutDownEventHandler(inf, reg) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ShutDownEventHandler: %v", err)
		}
	case <-time.After(guard):
		t.Fatalf("ShutDownEventHandler did not return within %v", guard)
	}
}

// waitClosed waits for ch to be closed.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(guard):
		t.Fatalf("timed out (guard %v) waiting for %s", guard, what)
	}
}

// waitUntil polls cond, for state that offers nothing to wait on (the fake's
// watch count, LastSyncResourceVersion).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out (guard %v) waiting for %s", guard, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// mustRegister adapts a (registration, error) pair for one-line use:
// mustRegister(t)(inf.AddEventHandler(h)).
func mustRegister(t *testing.T) func(cache.ResourceEventHandlerRegistration, error) cache.ResourceEventHandlerRegistration {
	return func(reg cache.ResourceEventHandlerRegistration, err error) cache.ResourceEventHandlerRegistration {
		t.Helper()
		if err != nil {
			t.Fatalf("adding an event handler: %v", err)
		}
		return reg
	}
}

// --- recording handler ---

// event is one handler call as an eventLog saw it.
type event struct {
	Kind    string // add, update, sync, replay, delete, tombstone (see String)
	Key     string
	Initial bool
	Old     any
	Obj     any
}

func (e event) value() string { return valueOf(e.Obj) }

// String renders an event for comparisons:
//
//	add:V / add:V/initial   OnAdd, with isInInitialList
//	update:O->V             OnUpdate that changes the resourceVersion
//	sync:V                  OnUpdate(x, x): a periodic resync of the cached object
//	replay:V                OnUpdate with the same resourceVersion but another
//	                        object: a relist that found the object unchanged
//	delete:V                OnDelete with the final state
//	tombstone:V             OnDelete with a DeletedFinalStateUnknown (V of its Obj)
func (e event) String() string {
	switch e.Kind {
	case "add":
		if e.Initial {
			return "add:" + e.value() + "/initial"
		}
		return "add:" + e.value()
	case "update":
		return "update:" + valueOf(e.Old) + "->" + e.value()
	}
	return e.Kind + ":" + e.value()
}

// eventLog is a cache.ResourceEventHandler that records every call, checks
// that calls are consistent with what it was told before, and lets a test
// wait for a condition on what it saw.
type eventLog struct {
	// exact: every notification arrives (no coalescing), so a delete's
	// object must match the last state delivered too. (An update's old
	// object must always: Coalesce merges into Update(the object the handler
	// last saw, latest), doc.go.)
	exact bool
	// before, if set, runs at the start of every call, outside the lock, and
	// may block (to hold the handler) or panic.
	before func(e event)

	mu         sync.Mutex
	all        []event
	byKey      map[string][]event
	known      map[string]string // key -> value the handler was last told
	lastObj    map[string]any    // key -> object the handler was last given
	inflight   map[string]int    // key -> calls in progress
	active     int               // calls in progress, all keys
	maxActive  int
	violations []string
	changed    chan struct{} // closed and replaced on every call
}

func newEventLog(exact bool) *eventLog {
	return &eventLog{
		exact:    exact,
		byKey:    map[string][]event{},
		known:    map[string]string{},
		lastObj:  map[string]any{},
		inflight: map[string]int{},
		changed:  make(chan struct{}),
	}
}

func (r *eventLog) OnAdd(obj any, isInInitialList bool) {
	r.handle(event{Kind: "add", Key: objKey(obj), Initial: isInInitialList, Obj: obj})
}

func (r *eventLog) OnUpdate(old, obj any) {
	kind := "update"
	if rvOf(old) == rvOf(obj) {
		kind = "replay"
		if old == obj {
			kind = "sync"
		}
	}
	r.handle(event{Kind: kind, Key: objKey(obj), Old: old, Obj: obj})
}

func (r *eventLog) OnDelete(obj any) {
	kind := "delete"
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		kind = "tombstone"
	}
	r.handle(event{Kind: kind, Key: objKey(obj), Obj: obj})
}

func (r *eventLog) handle(e event) {
	r.mu.Lock()
	r.inflight[e.Key]++
	if r.inflight[e.Key] > 1 {
		r.violations = append(r.violations, fmt.Sprintf("%s: concurrent calls for one key", e.Key))
	}
	r.active++
	r.maxActive = max(r.maxActive, r.active)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.inflight[e.Key]--
		r.active--
	}()
	if r.before != nil {
		r.before(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkLocked(e)
	r.all = append(r.all, e)
	r.byKey[e.Key] = append(r.byKey[e.Key], e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// checkLocked compares e with what the handler was told before.
// REQUIRES: r.mu held.
func (r *eventLog) checkLocked(e event) {
	bad := func(format string, args ...any) {
		r.violations = append(r.violations, fmt.Sprintf("%s: %s: ", e.Key, e)+fmt.Sprintf(format, args...))
	}
	last, known := r.known[e.Key]
	switch e.Kind {
	case "add":
		if known {
			bad("add of a key the handler already has (%s)", last)
		}
		r.known[e.Key] = e.value()
		r.lastObj[e.Key] = e.Obj
	case "update", "sync", "replay":
		if !known {
			bad("update of a key the handler does not have")
		} else if valueOf(e.Old) != last {
			bad("old object has value %s, the handler was last told %s", valueOf(e.Old), last)
		} else if rvOf(e.Old) != rvOf(r.lastObj[e.Key]) {
			// Not necessarily the same object: a handler that does not resync
			// is not told when a relist replaces it with an equal copy.
			bad("old object has resourceVersion %s, the handler was last given %s", rvOf(e.Old), rvOf(r.lastObj[e.Key]))
		}
		r.known[e.Key] = e.value()
		r.lastObj[e.Key] = e.Obj
	case "delete", "tombstone":
		if !known {
			bad("delete of a key the handler does not have")
		} else if r.exact && e.value() != last {
			bad("final state has value %s, the handler was last told %s", e.value(), last)
		}
		delete(r.known, e.Key)
		delete(r.lastObj, e.Key)
	}
}

// wait waits until cond, called with r.mu held, is true.
func (r *eventLog) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(guard)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		ok := cond()
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			r.checkConsistent(t)
			t.Fatalf("timed out (guard %v) waiting for %s; the handler saw:\n%s", guard, what, r.dump())
		}
	}
}

// waitEvent waits until the handler has seen the event rendered as s for key.
func (r *eventLog) waitEvent(t *testing.T, key, s string) {
	t.Helper()
	r.wait(t, key+" "+s, func() bool { return r.hasLocked(key, s) })
}

// waitKnown waits until the handler's view of key is value ("" = absent).
func (r *eventLog) waitKnown(t *testing.T, key, value string) {
	t.Helper()
	r.wait(t, fmt.Sprintf("%s to be %q", key, value), func() bool {
		v, ok := r.known[key]
		if value == "" {
			return !ok
		}
		return ok && v == value
	})
}

// REQUIRES: r.mu held.
func (r *eventLog) hasLocked(key, s string) bool {
	for _, e := range r.byKey[key] {
		if e.String() == s {
			return true
		}
	}
	return false
}

// seq returns key's events as strings, leaving out the kinds in skip.
func (r *eventLog) seq(key string, skip ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.byKey[key] {
		if !slices.Contains(skip, e.Kind) {
			out = append(out, e.String())
		}
	}
	return out
}

func (r *eventLog) events(key string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byKey[key])
}

func (r *eventLog) allEvents() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

func (r *eventLog) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// countKind counts the events of one kind.
func (r *eventLog) countKind(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.all {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// checkConsistent fails the test for every inconsistency the log saw.
func (r *eventLog) checkConsistent(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.violations {
		t.Errorf("inconsistent notification: %s", v)
	}
}

func (r *eventLog) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.byKey))
	for k := range r.byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %v\n", k, r.seqLocked(k))
	}
	return b.String()
}

// REQUIRES: r.mu held.
func (r *eventLog) seqLocked(key string) []string {
	var out []string
	for _, e := range r.byKey[key] {
		out = append(out, e.String())
	}
	return out
}

// latch holds a goroutine: Hold blocks until Release; Entered is closed on
// the first Hold. Release is idempotent and is also registered as a cleanup,
// so a failing test never leaves a handler or a shard blocked.
type latch struct {
	entered, release chan struct{}
	enterOnce, once  sync.Once
}

func newLatch(t *testing.T) *latch {
	l := &latch{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(l.Release)
	return l
}

func (l *latch) Hold() {
	l.enterOnce.Do(func() { close(l.entered) })
	<-l.release
}

func (l *latch) Release() { l.once.Do(func() { close(l.release) }) }

func (l *latch) waitEntered(t *testing.T, what string) {
	t.Helper()
	waitClosed(t, what, l.entered)
}

// gateIndex is an index function that holds the goroutine writing the cache
// (client-go's processing goroutine, or whoever holds a shard's drain role:
// its drain goroutine, or the reflector processing a write to an idle shard) while
// it indexes an object labelled gate=hold, until the latch is released. It
// lets a test queue several writes for one key behind a write in progress.
func gateIndex(l *latch) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		if m, err := meta.Accessor(obj); err == nil && m.GetLabels()["gate"] == "hold" {
			l.Hold()
		}
		return nil, nil
	}
}

// --- ListerWatcher wrappers ---

// hookedLW wraps a ListerWatcher: failWatches makes the next n watch
// requests fail; list, if set, rewrites list results. It keeps the fake's
// WatchList choice.
type hookedLW struct {
	inner     cache.ListerWatcherWithContext
	watchList bool

	mu      sync.Mutex
	failErr error
	failN   int
	list    func(runtime.Object) runtime.Object
}

func newHookedLW(c *fakeapi.Cluster, watchList bool) *hookedLW {
	return &hookedLW{inner: cache.ToListerWatcherWithContext(c.ListerWatcher()), watchList: watchList}
}

func (h *hookedLW) failWatches(err error, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failErr, h.failN = err, n
}

func (h *hookedLW) IsWatchListSemanticsUnSupported() bool { return !h.watchList }

func (h *hookedLW) List(options metav1.ListOptions) (runtime.Object, error) {
	return h.ListWithContext(context.Background(), options)
}

func (h *hookedLW) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return h.WatchWithContext(context.Background(), options)
}

func (h *hookedLW) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	obj, err := h.inner.ListWithContext(ctx, options)
	h.mu.Lock()
	rewrite := h.list
	h.mu.Unlock()
	if err == nil && rewrite != nil {
		obj = rewrite(obj)
	}
	return obj, err
}

func (h *hookedLW) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	h.mu.Lock()
	if h.failN > 0 {
		h.failN--
		err := h.failErr
		h.mu.Unlock()
		return nil, err
	}
	h.mu.Unlock()
	return h.inner.WatchWithContext(ctx, options)
}
