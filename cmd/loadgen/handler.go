package main

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
)

// handler is the informer scenario's event handler. It measures delivery
// latency (handler clock minus the churn writer's emission stamp), burns the
// configured CPU, and keeps the last resourceVersion it saw per key for the
// final correctness check.
//
// The same handler serves both implementations and every path: it reads
// objects through their metav1.Object accessors (typed pods, unstructured
// objects, PartialObjectMetadata). Registered with
// AddParallelEventHandler it is called concurrently (never for one key at
// once); its fields are safe for concurrent use.
type handler struct {
	iters   int64 // burn iterations per call
	lat     latency.Histogram
	deletes timeLog       // delete notifications, joined with the writer's stamps at the end
	calls   atomic.Uint64 // every handler call
	initial atomic.Uint64 // initial-list adds
	// observed counts churn events seen: non-initial adds, updates that
	// changed the resourceVersion (except marking for deletion), and deletes.
	observed atomic.Uint64
	last     atomic.Int64 // unix nanos of the latest non-initial call
	rv       keyed[string]
	// workNanos and workCalls: the CPU the work loop took (its thread's
	// CPU clock) and the calls that ran it.
	workNanos, workCalls atomic.Int64
}

func newHandler(iters int64) *handler {
	return &handler{iters: iters, rv: newKeyed[string]()}
}

var _ cache.ResourceEventHandler = (*handler)(nil)

func (h *handler) set(key, rv string) { h.rv.update(key, func(string, bool) string { return rv }) }

// stampLatency records now − the object's emission stamp, if it has one.
func (h *handler) stampLatency(o metav1.Object, now time.Time) {
	if s, ok := emissionOf(o); ok {
		h.lat.Record(now.Sub(time.Unix(0, s)))
	}
}

// OnAdd implements cache.ResourceEventHandler.
func (h *handler) OnAdd(obj any, isInInitialList bool) {
	now := time.Now()
	h.calls.Add(1)
	p := accessor(obj)
	h.set(metaKey(p), p.GetResourceVersion())
	if isInInitialList {
		h.initial.Add(1)
	} else {
		h.observed.Add(1)
		h.last.Store(now.UnixNano())
		h.stampLatency(p, now)
	}
	h.work()
}

// OnUpdate implements cache.ResourceEventHandler.
func (h *handler) OnUpdate(oldObj, newObj any) {
	now := time.Now()
	h.calls.Add(1)
	o, p := accessor(oldObj), accessor(newObj)
	h.set(metaKey(p), p.GetResourceVersion())
	// Neither a resync or relist replay (same resourceVersion) nor a real API
	// server's first step of a delete (it sets deletionTimestamp, then the
	// delete event follows): that is no churn write, and its emission stamp is
	// the previous update's.
	if o.GetResourceVersion() != p.GetResourceVersion() && (o.GetDeletionTimestamp() != nil || p.GetDeletionTimestamp() == nil) {
		h.observed.Add(1)
		h.last.Store(now.UnixNano())
		h.stampLatency(p, now)
	}
	h.work()
}

// OnDelete implements cache.ResourceEventHandler.
func (h *handler) OnDelete(obj any) {
	now := time.Now()
	h.calls.Add(1)
	key := deletedKey(obj)
	h.rv.take(key)
	h.observed.Add(1)
	h.last.Store(now.UnixNano())
	h.deletes.add(key, now)
	h.work()
}

// work burns the handler's CPU and measures what it took by the thread's
// CPU clock, the goroutine locked to its thread meanwhile so that the clock
// is the loop's: a preempted loop's waiting does not count, and a slower or
// faster core (a loaded machine, a sibling hyperthread) does.
func (h *handler) work() {
	if h.iters <= 0 {
		return
	}
	runtime.LockOSThread()
	t0 := threadCPU()
	burn(h.iters)
	d := threadCPU() - t0
	runtime.UnlockOSThread()
	if t0 > 0 {
		h.workNanos.Add(int64(d))
		h.workCalls.Add(1)
	}
}

// workCPUPerCall is the mean CPU of the handlers' work loop per call (0
// without handler work, or where the thread's CPU clock is unknown).
func (c *client) workCPUPerCall() float64 {
	var ns, n int64
	for _, h := range c.handlers {
		ns, n = ns+h.workNanos.Load(), n+h.workCalls.Load()
	}
	if n == 0 {
		return 0
	}
	return float64(ns) / float64(n) / 1e9
}

// accessor is obj's metadata, whatever its type (a typed object, an
// unstructured one, PartialObjectMetadata). It panics on an object without
// metadata: no informer delivers one.
func accessor(obj any) metav1.Object {
	o, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return o
}

// metaKey is o's cache key, namespace/name.
func metaKey(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// objectKey is obj's cache key.
func objectKey(obj any) string { return metaKey(accessor(obj)) }

// emissionOf returns the churn writer's stamp on o. For an unstructured
// object it reads the annotation in place: GetAnnotations copies the map.
func emissionOf(o metav1.Object) (int64, bool) {
	var v string
	var ok bool
	if u, isU := o.(*unstructured.Unstructured); isU {
		v, ok, _ = unstructured.NestedString(u.Object, "metadata", "annotations", target.AnnEmitted)
	} else {
		v, ok = o.GetAnnotations()[target.AnnEmitted]
	}
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
