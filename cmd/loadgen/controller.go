package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	"github.com/shardinformer/shardinformer/shards"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// condReconciled is the pod condition the controller writes against a real
// cluster; its message names the loadgen generation it reconciled.
const condReconciled corev1.PodConditionType = "loadgen.shardinformer.io/Reconciled"

// statusWriter patches a pod's status (against a real cluster); nil on the
// simulator, which serves no writes over HTTP.
type statusWriter func(ctx context.Context, ns, name, generation string) error

// controller is the controller scenario's stack on top of one informer: an
// event handler that enqueues keys, a work queue, and workers running the
// same reconcile function whatever the informer and queue implementation.
//
// Goroutines: the informer's delivery goroutine(s) call the handler methods;
// run starts the worker goroutines and returns when they have all exited
// (after the queue shuts down). Every field is safe for concurrent use.
type controller struct {
	queue   workqueue.TypedRateLimitingInterface[string]
	indexer cache.Indexer
	workers int
	iters   int64        // CPU each reconcile burns (burn iterations)
	write   statusWriter // nil: no status writes

	// pending is key → emission stamp (unix nanos) of its oldest change not
	// yet reconciled; 0 for a delete (its stamp is known only to the writer,
	// see deletes). Written by the handler, taken by reconcile.
	pending keyed[int64]
	// reconciled is key → resourceVersion of the state last reconciled;
	// absent once a reconcile found the key deleted.
	reconciled keyed[string]
	keys       atomic.Int64 // len(reconciled)

	latency   latency.Histogram // change stamp → reconcile start
	freshness latency.Histogram // change stamp → handler notified (the cache holds the change)
	deletes   timeLog           // deletes: notified (handler) times, joined with the writer's stamps at the end
	deleteRec timeLog           // deletes: reconcile start times, joined likewise

	initial     atomic.Uint64 // initial-list adds
	observed    atomic.Uint64 // churn changes notified
	reconciles  atomic.Uint64
	changes     atomic.Uint64 // reconciles that took a pending change
	lastChange  atomic.Int64  // unix nanos of the latest such reconcile start
	patches     atomic.Uint64
	patchErrors atomic.Uint64
}

func newController(q workqueue.TypedRateLimitingInterface[string], idx cache.Indexer, workers int, iters int64, w statusWriter) *controller {
	return &controller{queue: q, indexer: idx, workers: workers, iters: iters, write: w,
		pending: newKeyed[int64](), reconciled: newKeyed[string]()}
}

var _ cache.ResourceEventHandler = (*controller)(nil)

// OnAdd implements cache.ResourceEventHandler.
func (c *controller) OnAdd(obj any, isInInitialList bool) {
	p := obj.(*corev1.Pod)
	key := podKey(p)
	if isInInitialList {
		c.initial.Add(1)
	} else if s, ok := emission(p); ok {
		c.changed(key, s, time.Now())
	}
	c.queue.Add(key)
}

// OnUpdate implements cache.ResourceEventHandler. Only a change of the
// emission stamp is a churn change; the controller's own status writes, a
// resync and a real API server's marking for deletion are not (they carry
// the previous stamp), yet they are reconciled like any update.
func (c *controller) OnUpdate(oldObj, newObj any) {
	o, p := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	key := podKey(p)
	if s, ok := emission(p); ok && o.Annotations[target.AnnEmitted] != p.Annotations[target.AnnEmitted] {
		c.changed(key, s, time.Now())
	}
	c.queue.Add(key)
}

// OnDelete implements cache.ResourceEventHandler.
func (c *controller) OnDelete(obj any) {
	key := deletedKey(obj)
	c.observed.Add(1)
	c.deletes.add(key, time.Now())
	c.pending.update(key, func(v int64, ok bool) int64 {
		if ok {
			return v // an older change is still waiting
		}
		return 0
	})
	c.queue.Add(key)
}

// changed records a churn change of key emitted at stamp and notified at now.
func (c *controller) changed(key string, stamp int64, now time.Time) {
	c.observed.Add(1)
	c.freshness.Record(now.Sub(time.Unix(0, stamp)))
	c.pending.update(key, func(v int64, ok bool) int64 {
		if ok {
			return v
		}
		return stamp
	})
}

// run starts the workers on goroutines labelled for CPU attribution and
// returns when the queue has shut down and every worker has exited.
func (c *controller) run(ctx context.Context) {
	var wg sync.WaitGroup
	pprof.Do(ctx, pprof.Labels("role", "worker"), func(ctx context.Context) {
		for range c.workers {
			wg.Go(func() { // a reconcile worker
				for c.next(ctx) {
				}
			})
		}
	})
	wg.Wait()
}

// next reconciles one key; false once the queue is shut down.
func (c *controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// reconcile is the controller's reconcile function, the same on both
// stacks: read the object from the cache and its siblings (the pods of its
// namespace with its app label, through the appIndex, as a ReplicaSet-like
// controller lists the pods of its selector), burn the configured CPU, and
// patch the status when it does not yet say this generation was reconciled.
func (c *controller) reconcile(ctx context.Context, key string) error {
	start := time.Now()
	c.reconciles.Add(1)
	if stamp, ok := c.pending.take(key); ok {
		c.changes.Add(1)
		c.lastChange.Store(start.UnixNano())
		if stamp > 0 {
			c.latency.Record(start.Sub(time.Unix(0, stamp)))
		} else {
			c.deleteRec.add(key, start)
		}
	}
	obj, exists, err := c.indexer.GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		if _, had := c.reconciled.take(key); had {
			c.keys.Add(-1)
		}
		return nil
	}
	p := obj.(*corev1.Pod)
	siblings, err := c.indexer.ByIndex(appIndex, appIndexKey(p))
	if err != nil {
		return err
	}
	ready := 0
	for _, o := range siblings {
		if o.(*corev1.Pod).Status.Phase == corev1.PodRunning {
			ready++
		}
	}
	burn(c.iters + int64(ready&1)) // the count keeps the read from being optimised away
	if c.write != nil {
		gen := p.Annotations[target.AnnGeneration]
		if !hasCondition(p, "generation "+gen) {
			if err := c.write(ctx, p.Namespace, p.Name, gen); err != nil {
				c.patchErrors.Add(1)
				return err
			}
			c.patches.Add(1)
		}
	}
	c.reconciled.update(key, func(_ string, had bool) string {
		if !had {
			c.keys.Add(1)
		}
		return p.ResourceVersion
	})
	return nil
}

// appIndex indexes pods by namespace and app label.
const appIndex = "namespace-app"

func appIndexKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Labels["app"] }

func appIndexFunc(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("appIndexFunc: %T is not a pod", obj)
	}
	return []string{appIndexKey(p)}, nil
}

func hasCondition(p *corev1.Pod, msg string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == condReconciled {
			return c.Message == msg
		}
	}
	return false
}

// statusPatch is the strategic merge patch that records generation gen.
func statusPatch(gen string) []byte {
	return fmt.Appendf(nil, `{"status":{"conditions":[{"type":%q,"status":"True","reason":"Reconciled","message":%q}]}}`,
		condReconciled, "generation "+gen)
}

// emission returns the churn writer's stamp on p.
func emission(p *corev1.Pod) (int64, bool) { return emissionOf(p) }

// deletedKey returns the key of a deleted object or tombstone.
func deletedKey(obj any) string {
	switch o := obj.(type) {
	case *corev1.Pod:
		return podKey(o)
	case cache.DeletedFinalStateUnknown:
		return o.Key
	}
	if o, err := meta.Accessor(obj); err == nil {
		return metaKey(o)
	}
	return ""
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// keyed is a map from keys to V striped by key hash, for bookkeeping
// written from many goroutines. Safe for concurrent use; not copyable.
type keyed[V any] struct {
	stripes *[64]keyedStripe[V]
}

type keyedStripe[V any] struct {
	sync.Mutex
	m map[string]V // nil once released
	_ [48]byte     // keep neighbouring stripes off one cache line
}

func newKeyed[V any]() keyed[V] {
	k := keyed[V]{stripes: new([64]keyedStripe[V])}
	for i := range k.stripes {
		k.stripes[i].m = map[string]V{}
	}
	return k
}

func (k keyed[V]) stripe(key string) *keyedStripe[V] {
	return &k.stripes[shards.Hash(key)%uint64(len(k.stripes))]
}

// update sets key to f(current value, present).
func (k keyed[V]) update(key string, f func(V, bool) V) {
	s := k.stripe(key)
	s.Lock()
	if s.m != nil {
		v, ok := s.m[key]
		s.m[key] = f(v, ok)
	}
	s.Unlock()
}

// take removes key and returns its value.
func (k keyed[V]) take(key string) (V, bool) {
	s := k.stripe(key)
	s.Lock()
	v, ok := s.m[key]
	delete(s.m, key)
	s.Unlock()
	return v, ok
}

// snapshot copies the map.
func (k keyed[V]) snapshot() map[string]V {
	out := map[string]V{}
	for i := range k.stripes {
		s := &k.stripes[i]
		s.Lock()
		for key, v := range s.m {
			out[key] = v
		}
		s.Unlock()
	}
	return out
}

// release drops every entry (for the retained-heap measurement); later
// updates are ignored.
func (k keyed[V]) release() {
	for i := range k.stripes {
		s := &k.stripes[i]
		s.Lock()
		s.m = nil
		s.Unlock()
	}
}

// timeLog is an append-only list of (key, time) pairs; safe for concurrent use.
type timeLog struct {
	mu      sync.Mutex
	entries []keyTime
	off     bool // set before use: add records nothing (soak scenario)
}

type keyTime struct {
	key string
	at  int64 // unix nanos
}

func (l *timeLog) add(key string, t time.Time) {
	if l.off {
		return
	}
	l.mu.Lock()
	l.entries = append(l.entries, keyTime{key, t.UnixNano()})
	l.mu.Unlock()
}

// release drops the entries (for the retained-heap measurement).
func (l *timeLog) release() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

// join records, into h, each entry's time minus the stamp of its key.
func (l *timeLog) join(stamps map[string]int64, h *latency.Histogram) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.entries {
		if s, ok := stamps[e.key]; ok {
			h.Record(time.Duration(e.at - s))
		}
	}
}

// burnSink keeps burn's result alive.
var burnSink atomic.Uint64

// burn spends CPU deterministically: n rounds of a xorshift step. The
// parent calibrates n per duration once (calibrate) and gives every
// implementation the same count.
func burn(n int64) {
	if n <= 0 {
		return
	}
	x := uint64(n) | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	burnSink.Add(x)
}

// calibrate returns burn iterations per CPU second on this machine: the
// best of a few rounds, each timed by its thread's CPU clock (the goroutine
// locked to its thread), so that a round the kernel preempted on a busy
// machine does not count its wait as work and shrink every loop (wall
// time where that clock is unknown).
func calibrate() float64 {
	const n = 2_000_000
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	best := time.Duration(1<<63 - 1)
	for range 5 {
		start, c0 := time.Now(), threadCPU()
		burn(n)
		d := time.Since(start)
		if c1 := threadCPU(); c0 > 0 && c1 > c0 {
			d = c1 - c0
		}
		best = min(best, d)
	}
	return n / max(best.Seconds(), 1e-9)
}
