package main

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardinformer/shardinformer/shards"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// handler is the event handler registered on an informer. It measures
// delivery latency (handler clock minus the churn generator's emission
// stamp), simulates work, and keeps the last resourceVersion it saw per key
// for the final correctness check.
//
// The same handler serves both implementations. Registered with
// AddParallelEventHandler it is called concurrently (never for one key at
// once), so its state is striped by key hash.
type handler struct {
	work    time.Duration
	churn   func() *churner // the current churn generator, for delete stamps
	lat     histogram
	calls   atomic.Uint64 // every handler call
	initial atomic.Uint64 // initial-list adds
	// observed counts churn events seen: non-initial adds, updates that
	// changed the resourceVersion (except marking for deletion), and deletes.
	observed atomic.Uint64
	last     atomic.Int64 // unix nanos of the latest non-initial call
	stripes  [64]stateStripe
}

type stateStripe struct {
	sync.Mutex
	rv map[string]string // key → last resourceVersion seen; absent after a delete
	_  [40]byte          // keep neighbouring stripes off one cache line
}

func newHandler(work time.Duration, churn func() *churner) *handler {
	h := &handler{work: work, churn: churn}
	for i := range h.stripes {
		h.stripes[i].rv = map[string]string{}
	}
	return h
}

var _ cache.ResourceEventHandler = (*handler)(nil)

func (h *handler) stripe(key string) *stateStripe {
	return &h.stripes[shards.Hash(key)%uint64(len(h.stripes))]
}

func (h *handler) set(key, rv string) {
	s := h.stripe(key)
	s.Lock()
	if s.rv != nil { // nil once released
		s.rv[key] = rv
	}
	s.Unlock()
}

func (h *handler) del(key string) {
	s := h.stripe(key)
	s.Lock()
	delete(s.rv, key)
	s.Unlock()
}

// stampLatency records now − the pod's emission stamp, if it has one.
func (h *handler) stampLatency(p *corev1.Pod, now time.Time) bool {
	v, ok := p.Annotations[annEmitted]
	if !ok {
		return false
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	h.lat.record(now.Sub(time.Unix(0, ns)))
	return true
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

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
	spin(h.work)
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
	spin(h.work)
}

// OnDelete implements cache.ResourceEventHandler.
func (h *handler) OnDelete(obj any) {
	now := time.Now()
	h.calls.Add(1)
	var key string
	switch o := obj.(type) {
	case *corev1.Pod:
		key = podKey(o)
	case cache.DeletedFinalStateUnknown:
		key = o.Key
	}
	h.del(key)
	h.observed.Add(1)
	h.last.Store(now.UnixNano())
	if g := h.churn(); g != nil {
		if t, ok := g.deleteEmission(key); ok {
			h.lat.record(now.Sub(time.Unix(0, t)))
		}
	}
	spin(h.work)
}

// state copies the handler's view: key → resourceVersion.
func (h *handler) state() map[string]string {
	m := map[string]string{}
	for i := range h.stripes {
		s := &h.stripes[i]
		s.Lock()
		for k, v := range s.rv {
			m[k] = v
		}
		s.Unlock()
	}
	return m
}

// release drops the handler's per-key state (for the retained-heap measurement).
func (h *handler) release() {
	for i := range h.stripes {
		s := &h.stripes[i]
		s.Lock()
		s.rv = nil
		s.Unlock()
	}
}

// spin burns CPU for d, as a handler doing real work would.
func spin(d time.Duration) {
	if d <= 0 {
		return
	}
	start := time.Now()
	for time.Since(start) < d {
	}
}
