package pipeline_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// guard is the deadline that turns a hang into a failure. It is never a
// timing assertion: every wait below ends as soon as its condition holds.
const guard = testkit.Guard

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
	testkit.Eventually(t, "the reflector to relist and watch again", func() bool { return c.Watches() == 1 })
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

// event is one handler call as the suite's recorder saw it; its Label is
// the object's value (valueOf).
type event = testkit.Event

// newEventLog returns the suite's recording handler (testkit.Recorder),
// labelling objects by their value; exact: every notification arrives (no
// coalescing), so a delete's object must match the last state delivered
// too.
func newEventLog(exact bool) *testkit.Recorder {
	return &testkit.Recorder{Label: valueOf, Exact: exact}
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
