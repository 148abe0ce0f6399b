package main

import (
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// handler is the informer scenario's event handler. It measures delivery
// latency (handler clock minus the churn writer's emission stamp), burns the
// configured CPU, and keeps the last resourceVersion it saw per key for the
// final correctness check.
//
// The same handler serves both implementations. Registered with
// AddParallelEventHandler it is called concurrently (never for one key at
// once); its fields are safe for concurrent use.
type handler struct {
	iters   int64 // burn iterations per call
	lat     histogram
	deletes timeLog       // delete notifications, joined with the writer's stamps at the end
	calls   atomic.Uint64 // every handler call
	initial atomic.Uint64 // initial-list adds
	// observed counts churn events seen: non-initial adds, updates that
	// changed the resourceVersion (except marking for deletion), and deletes.
	observed atomic.Uint64
	last     atomic.Int64 // unix nanos of the latest non-initial call
	rv       keyed[string]
}

func newHandler(iters int64) *handler {
	return &handler{iters: iters, rv: newKeyed[string]()}
}

var _ cache.ResourceEventHandler = (*handler)(nil)

func (h *handler) set(key, rv string) { h.rv.update(key, func(string, bool) string { return rv }) }

// stampLatency records now − the pod's emission stamp, if it has one.
func (h *handler) stampLatency(p *corev1.Pod, now time.Time) {
	if s, ok := emission(p); ok {
		h.lat.record(now.Sub(time.Unix(0, s)))
	}
}

// OnAdd implements cache.ResourceEventHandler.
func (h *handler) OnAdd(obj any, isInInitialList bool) {
	now := time.Now()
	h.calls.Add(1)
	p := obj.(*corev1.Pod)
	h.set(podKey(p), p.ResourceVersion)
	if isInInitialList {
		h.initial.Add(1)
	} else {
		h.observed.Add(1)
		h.last.Store(now.UnixNano())
		h.stampLatency(p, now)
	}
	burn(h.iters)
}

// OnUpdate implements cache.ResourceEventHandler.
func (h *handler) OnUpdate(oldObj, newObj any) {
	now := time.Now()
	h.calls.Add(1)
	o, p := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	h.set(podKey(p), p.ResourceVersion)
	// Neither a resync or relist replay (same resourceVersion) nor a real API
	// server's first step of a delete (it sets deletionTimestamp, then the
	// delete event follows): that is no churn write, and its emission stamp is
	// the previous update's.
	if o.ResourceVersion != p.ResourceVersion && (o.DeletionTimestamp != nil || p.DeletionTimestamp == nil) {
		h.observed.Add(1)
		h.last.Store(now.UnixNano())
		h.stampLatency(p, now)
	}
	burn(h.iters)
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
	burn(h.iters)
}
