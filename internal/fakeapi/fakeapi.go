// Package fakeapi is an in-memory stand-in for the API server of one resource,
// for tests and benchmarks: a versioned object store with a bounded event
// history, and a cache.ListerWatcher over it that behaves like the real
// thing where informers care (resourceVersion, 410 Gone after compaction,
// dropped watches, bookmarks, and WatchList's initial-events-end bookmark).
//
// With Config.WatchList false the ListerWatcher opts out of WatchList
// (IsWatchListSemanticsUnSupported), so client-go's reflector uses LIST then
// WATCH; with true it honours sendInitialEvents.
package fakeapi

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Config configures a Cluster.
type Config struct {
	// NewList returns an empty list object of the resource (e.g. &corev1.PodList{}).
	NewList func() runtime.Object
	// WatchList makes the ListerWatcher support WatchList; otherwise it opts out.
	WatchList bool
	// History is how many events are kept for watches resuming from an older
	// resourceVersion; older ones get 410 Gone. Default 1 << 20.
	History int
	// WatchBuffer is how many events a watcher may lag behind before its watch
	// is closed (as the API server closes slow watchers). Default 1 << 16.
	WatchBuffer int
	// DeepCopy makes every read and event carry its own copy of the object, as
	// decoding from the wire does. Benchmarks that pre-build objects turn it off.
	DeepCopy bool
}

type event struct {
	typ watch.EventType
	obj runtime.Object
	rv  uint64
}

// Cluster is the store and event log. Its methods are safe for concurrent use.
type Cluster struct {
	cfg Config
	mu  struct {
		sync.Mutex
		rv        uint64
		objs      map[string]runtime.Object
		history   []event // oldest first
		compacted uint64  // events at or below this rv are gone
		watchers  map[*watcher]struct{}
	}
}

// New returns an empty cluster at resourceVersion 1.
func New(cfg Config) *Cluster {
	if cfg.History <= 0 {
		cfg.History = 1 << 20
	}
	if cfg.WatchBuffer <= 0 {
		cfg.WatchBuffer = 1 << 16
	}
	c := &Cluster{cfg: cfg}
	c.mu.rv = 1
	c.mu.objs = make(map[string]runtime.Object)
	c.mu.watchers = make(map[*watcher]struct{})
	return c
}

func key(obj runtime.Object) string {
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		panic(err)
	}
	return k
}

// Create stores a new object, setting its resourceVersion. It fails if the key exists.
func (c *Cluster) Create(obj runtime.Object) (runtime.Object, error) {
	return c.write(watch.Added, obj)
}

// Update replaces an existing object, setting its resourceVersion.
func (c *Cluster) Update(obj runtime.Object) (runtime.Object, error) {
	return c.write(watch.Modified, obj)
}

// UpdateKeyed is Update for a caller that already has obj's key ("ns/name"),
// such as a benchmark producer: it skips building the key from the object's
// namespace and name (an allocation, and a read of strings that are often
// cold in memory). The caller guarantees that k is obj's key; race and
// invariants builds check it and panic if not.
func (c *Cluster) UpdateKeyed(k string, obj runtime.Object) (runtime.Object, error) {
	if invariants && key(obj) != k {
		panic(fmt.Sprintf("fakeapi: UpdateKeyed(%q) of an object whose key is %q", k, key(obj)))
	}
	return c.writeKeyed(watch.Modified, k, obj)
}

// Delete removes the object with key ("ns/name").
func (c *Cluster) Delete(k string) (runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.mu.objs[k]
	if !ok {
		return nil, fmt.Errorf("fakeapi: %s not found", k)
	}
	delete(c.mu.objs, k)
	c.mu.rv++
	final := old.DeepCopyObject()
	setRV(final, c.mu.rv)
	c.emitLocked(event{typ: watch.Deleted, obj: final, rv: c.mu.rv})
	return final, nil
}

// Set stores obj without emitting an event, as if it was changed while nobody
// watched (for deletions and changes that only a relist can reveal).
func (c *Cluster) Set(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.rv++
	obj = obj.DeepCopyObject()
	setRV(obj, c.mu.rv)
	c.mu.objs[key(obj)] = obj
}

// Remove deletes the object with key without emitting an event.
func (c *Cluster) Remove(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.rv++
	delete(c.mu.objs, k)
}

func (c *Cluster) write(t watch.EventType, obj runtime.Object) (runtime.Object, error) {
	return c.writeKeyed(t, key(obj), obj)
}

// writeKeyed stores obj under k, its key, and emits t.
func (c *Cluster) writeKeyed(t watch.EventType, k string, obj runtime.Object) (runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, exists := c.mu.objs[k]
	if t == watch.Added && exists {
		return nil, fmt.Errorf("fakeapi: %s already exists", k)
	}
	if t == watch.Modified && !exists {
		return nil, fmt.Errorf("fakeapi: %s not found", k)
	}
	c.mu.rv++
	if c.cfg.DeepCopy {
		obj = obj.DeepCopyObject()
	}
	setRV(obj, c.mu.rv)
	c.mu.objs[k] = obj
	c.emitLocked(event{typ: t, obj: obj, rv: c.mu.rv})
	return obj, nil
}

func setRV(obj runtime.Object, rv uint64) {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	m.SetResourceVersion(strconv.FormatUint(rv, 10))
}

// REQUIRES: c.mu held.
func (c *Cluster) emitLocked(e event) {
	c.mu.history = append(c.mu.history, e)
	// Trim in chunks: at most History events are served, and the copy happens
	// once per History events rather than on every write.
	if over := len(c.mu.history) - c.cfg.History; over > 0 && (over >= c.cfg.History || c.cfg.History < 64) {
		c.mu.compacted = c.mu.history[over-1].rv
		c.mu.history = append(c.mu.history[:0], c.mu.history[over:]...)
	}
	for w := range c.mu.watchers {
		c.sendLocked(w, e)
	}
}

// REQUIRES: c.mu held.
func (c *Cluster) sendLocked(w *watcher, e event) {
	obj := e.obj
	if c.cfg.DeepCopy {
		obj = obj.DeepCopyObject()
	}
	select {
	case w.ch <- watch.Event{Type: e.typ, Object: obj}:
	default: // too slow: close the watch, the client re-watches
		c.closeLocked(w)
	}
}

// ResourceVersion returns the current resourceVersion.
func (c *Cluster) ResourceVersion() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.rv
}

// Objects returns a copy of the current state by key.
func (c *Cluster) Objects() map[string]runtime.Object {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]runtime.Object, len(c.mu.objs))
	for k, v := range c.mu.objs {
		out[k] = v
	}
	return out
}

// Compact drops the whole event history: watches resuming from any
// resourceVersion before now get 410 Gone.
func (c *Cluster) Compact() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.compacted = c.mu.rv
	c.mu.history = nil
}

// DropWatches closes every open watch.
func (c *Cluster) DropWatches() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.mu.watchers {
		c.closeLocked(w)
	}
}

// Bookmark sends a bookmark at the current resourceVersion to every watch
// that allowed bookmarks.
func (c *Cluster) Bookmark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.mu.watchers {
		if w.bookmarks {
			c.sendLocked(w, event{typ: watch.Bookmark, obj: c.bookmarkLocked(nil)})
		}
	}
}

// bookmarkLocked returns a bookmark object: an empty item of the resource
// carrying only the current resourceVersion and annotations.
// REQUIRES: c.mu held.
func (c *Cluster) bookmarkLocked(annotations map[string]string) runtime.Object {
	obj := newItem(c.cfg.NewList())
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatUint(c.mu.rv, 10))
	m.SetAnnotations(annotations)
	return obj
}

// Backlog returns the number of events sent to open watches that their
// clients have not received yet: the longest of their buffers (see
// Config.WatchBuffer). Those events, and the objects they carry, are held by
// the cluster until received.
func (c *Cluster) Backlog() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for w := range c.mu.watchers {
		n = max(n, len(w.ch))
	}
	return n
}

// Watches returns the number of open watches.
func (c *Cluster) Watches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.watchers)
}

// REQUIRES: c.mu held.
func (c *Cluster) closeLocked(w *watcher) {
	if _, ok := c.mu.watchers[w]; ok {
		delete(c.mu.watchers, w)
		close(w.ch)
	}
}

// ListerWatcher returns a cache.ListerWatcher over the cluster.
func (c *Cluster) ListerWatcher() cache.ListerWatcher {
	if c.cfg.WatchList {
		return &lw{c: c}
	}
	return &noWatchListLW{lw{c: c}}
}

type lw struct{ c *Cluster }

type noWatchListLW struct{ lw }

// IsWatchListSemanticsUnSupported tells client-go's reflector not to use WatchList.
func (*noWatchListLW) IsWatchListSemanticsUnSupported() bool { return true }

func (l *lw) List(options metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), options)
}

func (l *lw) ListWithContext(_ context.Context, options metav1.ListOptions) (runtime.Object, error) {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	items := make([]runtime.Object, 0, len(c.mu.objs))
	for _, o := range c.mu.objs {
		if c.cfg.DeepCopy {
			o = o.DeepCopyObject()
		}
		items = append(items, o)
	}
	list := c.cfg.NewList()
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(strconv.FormatUint(c.mu.rv, 10))
	return list, nil
}

func (l *lw) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), options)
}

func (l *lw) WatchWithContext(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &watcher{c: c, ch: make(chan watch.Event, c.cfg.WatchBuffer), bookmarks: options.AllowWatchBookmarks}
	initial := options.SendInitialEvents != nil && *options.SendInitialEvents
	if initial && !c.cfg.WatchList {
		return nil, apierrors.NewBadRequest("fakeapi: sendInitialEvents is not supported")
	}
	var from uint64
	if options.ResourceVersion != "" && options.ResourceVersion != "0" {
		rv, err := strconv.ParseUint(options.ResourceVersion, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("fakeapi: bad resourceVersion %q", options.ResourceVersion))
		}
		from = rv
	}
	if !initial && from == 0 {
		from = c.mu.rv // "" or "0": start at now (the synthetic adds are not needed by a reflector that listed)
	}
	if !initial && from < c.mu.compacted {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, c.mu.compacted))
	}
	c.mu.watchers[w] = struct{}{}
	if initial {
		for _, o := range c.mu.objs {
			c.sendLocked(w, event{typ: watch.Added, obj: o})
		}
		c.sendLocked(w, event{typ: watch.Bookmark, obj: c.bookmarkLocked(map[string]string{metav1.InitialEventsAnnotationKey: "true"})})
		return w, nil
	}
	for _, e := range c.mu.history {
		if e.rv > from {
			c.sendLocked(w, e)
		}
	}
	return w, nil
}

type watcher struct {
	c         *Cluster
	ch        chan watch.Event
	bookmarks bool
}

func (w *watcher) Stop() {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.closeLocked(w)
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.ch }
