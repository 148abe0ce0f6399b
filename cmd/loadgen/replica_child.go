package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/selfstat"
	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/replicas/members"
	"github.com/shardinformer/shardinformer/replicas/rangelw"
	"github.com/shardinformer/shardinformer/replicas/runner"
	"github.com/shardinformer/shardinformer/shardselector"
)

// slotIndex indexes the handler's view by the slot of the pod's uid.
const slotIndex = "slot"

// viewHandler is a replica's runner.Handler: it keeps the handler's view
// (the objects of the active slots, as the Runner hands them over) in an
// indexer the reconcile function reads, records each key's stays in the
// view, and passes every call on to the controller's handler, which
// enqueues the key. The Runner calls it one call at a time (Workers ≤ 1);
// mu guards the stays anyway, as measuring reads them from another
// goroutine.
type viewHandler struct {
	view cache.Indexer
	ctl  *controller
	mu   sync.Mutex
	in   map[string]int64   // key → when it entered the view; REQUIRES: mu held
	out  []protocol.KeySpan // stays ended; REQUIRES: mu held
}

func newViewHandler(ctl *controller, view cache.Indexer) *viewHandler {
	return &viewHandler{view: view, ctl: ctl, in: map[string]int64{}}
}

// viewIndexers are the view's indexes: the reconcile function's, and the
// slot of each pod for the active slots.
func viewIndexers(slots int) cache.Indexers {
	a, err := replicas.Assign(nil, slots)
	if err != nil {
		panic(err) // slot count validated by the parent
	}
	return cache.Indexers{appIndex: appIndexFunc, slotIndex: func(obj any) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("slot index: %T is not a pod", obj)
		}
		return []string{strconv.Itoa(a.Slot(shardselector.Hash(string(p.UID))))}, nil
	}}
}

func (h *viewHandler) enter(key string, at int64) {
	h.mu.Lock()
	if _, ok := h.in[key]; !ok {
		h.in[key] = at
	}
	h.mu.Unlock()
}

func (h *viewHandler) OnAdd(obj any, isInInitialList bool) {
	h.enter(podKey(obj.(*corev1.Pod)), time.Now().UnixNano())
	_ = h.view.Add(obj) // a pod always has a key
	h.ctl.OnAdd(obj, isInInitialList)
}

func (h *viewHandler) OnUpdate(oldObj, newObj any) {
	h.enter(podKey(newObj.(*corev1.Pod)), time.Now().UnixNano())
	_ = h.view.Update(newObj)
	h.ctl.OnUpdate(oldObj, newObj)
}

func (h *viewHandler) OnDelete(obj any) {
	_ = h.view.Delete(obj)
	h.ctl.OnDelete(obj)
	key := deletedKey(obj)
	h.mu.Lock()
	if from, ok := h.in[key]; ok {
		delete(h.in, key)
		h.out = append(h.out, protocol.KeySpan{Key: key, From: from, To: time.Now().UnixNano()})
	}
	h.mu.Unlock()
}

// spans returns every stay, the open ones with To 0.
func (h *viewHandler) spans() []protocol.KeySpan {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := slices.Clone(h.out)
	for k, from := range h.in {
		out = append(out, protocol.KeySpan{Key: k, From: from})
	}
	return out
}

func (h *viewHandler) release() {
	h.mu.Lock()
	h.in, h.out = nil, nil
	h.mu.Unlock()
}

// activeSlots returns the slots with an object in the view, sorted.
func (h *viewHandler) activeSlots() []int {
	out := []int{}
	for _, v := range h.view.ListIndexFuncValues(slotIndex) {
		if s, err := strconv.Atoi(v); err == nil {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// informerSet tracks the slot informers running, for their cache sizes.
type informerSet struct {
	mu  sync.Mutex
	set map[*slotInformer]struct{}
}

func (s *informerSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.set)
}

// objects counts the objects cached by the running slot informers.
func (s *informerSet) objects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for inf := range s.set {
		n += len(inf.GetStore().ListKeys())
	}
	return n
}

// slotInformer is a slot's informer, in the set while its Run runs.
type slotInformer struct {
	cache.SharedIndexInformer
	set *informerSet
}

// RunWithContext runs the informer, in the set until it returns.
func (s *slotInformer) RunWithContext(ctx context.Context) {
	s.set.mu.Lock()
	s.set.set[s] = struct{}{}
	s.set.mu.Unlock()
	defer func() {
		s.set.mu.Lock()
		delete(s.set.set, s)
		s.set.mu.Unlock()
	}()
	s.SharedIndexInformer.RunWithContext(ctx)
}

// countingLW counts the pod objects its inner ListerWatcher returns: list
// items and watch events other than bookmarks and errors (the WatchList
// stream's initial events included), before any client-side filtering.
type countingLW struct {
	inner   cache.ListerWatcherWithContext
	orig    cache.ListerWatcher
	objects *atomic.Uint64
}

func (l countingLW) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.orig)
}

func (l countingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l countingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

func (l countingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	list, err := l.inner.ListWithContext(ctx, o)
	if err == nil {
		l.objects.Add(uint64(meta.LenList(list)))
	}
	return list, err
}

func (l countingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.inner.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type != watch.Bookmark && e.Type != watch.Error {
			l.objects.Add(1)
		}
		return e, true
	}), nil
}

// countingRT counts the response bytes of pod lists and watches.
type countingRT struct {
	rt    http.RoundTripper
	bytes *atomic.Uint64
}

func (c countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err == nil && strings.HasSuffix(req.URL.Path, "/pods") {
		resp.Body = countingBody{resp.Body, c.bytes}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	bytes *atomic.Uint64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.bytes.Add(uint64(n))
	return n, err
}

// replica is one controller replica under test: a runner.Runner whose
// handler feeds the controller scenario's work queue and workers.
type replica struct {
	sp        protocol.Spec
	r         *runner.Runner
	ctl       *controller
	h         *viewHandler
	informers *informerSet

	objects, bytes      atomic.Uint64
	fallbacks, droppped atomic.Uint64

	cancel context.CancelFunc
	done   chan struct{} // closed when Run and the workers have returned
	runErr error         // Run's, once done is closed
}

// newReplica builds (does not start) the replica sp describes.
func newReplica(sp protocol.Spec) (*replica, error) {
	rs := sp.Replica
	rp := &replica{sp: sp, informers: &informerSet{set: map[*slotInformer]struct{}{}}, done: make(chan struct{})}
	rc, err := clientConfig(sp)
	if err != nil {
		return nil, err
	}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingRT{rt, &rp.bytes} })
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: clientset: %w", rs.Identity, err)
	}
	lw, _, err := listerWatcher(sp, cs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rs.Identity, err)
	}
	newInformer, err := slotInformerFactory(sp, rp.informers)
	if err != nil {
		return nil, err
	}
	q, _, err := newQueue(sp.Core)
	if err != nil {
		return nil, err
	}
	view := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, viewIndexers(rs.Slots))
	rp.ctl = newController(q, view, sp.Workers, sp.ReconcileIters, nil)
	rp.h = newViewHandler(rp.ctl, view)
	rp.r, err = runner.New(runner.Config{
		Members: members.Config{Leases: cs.CoordinationV1().Leases(rs.Namespace), Group: rs.Group, Identity: rs.Identity,
			LeaseDuration: rs.LeaseDuration, RenewDeadline: rs.RenewDeadline, RenewInterval: rs.RenewInterval},
		Slots:       rs.Slots,
		Inner:       countingLW{inner: cache.ToListerWatcherWithContext(lw), orig: lw, objects: &rp.objects},
		NewInformer: newInformer,
		Handler:     rp.h,
		Hooks: rangelw.Hooks{Fallback: func() { rp.fallbacks.Add(1) },
			Dropped: func(n int) { rp.droppped.Add(uint64(n)) }},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rs.Identity, err)
	}
	return rp, nil
}

// slotInformerFactory returns the runner's NewInformer for sp's core: a
// pipeline informer with sp's options, or client-go's, without indexes
// (the reconcile function reads the handler's view), tracked in set.
func slotInformerFactory(sp protocol.Spec, set *informerSet) (func(cache.ListerWatcher) cache.SharedIndexInformer, error) {
	if sp.Core != report.ImplOurs {
		return func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return &slotInformer{cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}), set}
		}, nil
	}
	policy, err := pipeline.ParseFullRingPolicy(sp.Policy)
	if err != nil {
		return nil, err
	}
	opts := []pipeline.Option{pipeline.WithRingCapacity(sp.RingSize), pipeline.WithFullRingPolicy(policy), pipeline.WithName(oursName)}
	if sp.Shards > 0 {
		opts = append(opts, pipeline.WithShards(sp.Shards))
	}
	if sp.Compact {
		opts = append(opts, pipeline.WithCompactStore(compact.Config{}))
	}
	if _, err := pipeline.New(&cache.ListWatch{}, &corev1.Pod{}, 0, cache.Indexers{}, opts...); err != nil {
		return nil, err // the options are checked once here, so the factory cannot fail
	}
	return func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		inf, err := pipeline.New(lw, &corev1.Pod{}, 0, cache.Indexers{}, opts...)
		if err != nil {
			panic(err) // the same options passed above
		}
		return &slotInformer{inf, set}
	}, nil
}

// start runs the Runner and the controller's workers on goroutines
// labelled impl=<name>.
func (rp *replica) start(ctx context.Context) {
	rctx, cancel := context.WithCancel(ctx)
	rp.cancel = cancel
	pprof.Do(ctx, pprof.Labels("impl", rp.sp.Impl, "role", "informer"), func(ctx context.Context) {
		go func() { // the replica's Run goroutine, parent of its workers
			defer close(rp.done)
			var wg sync.WaitGroup
			wg.Go(func() { rp.ctl.run(ctx) })
			rp.runErr = rp.r.Run(rctx)
			// Run has delivered its tombstones: nothing enqueues any more.
			rp.ctl.queue.ShutDown()
			wg.Wait()
		}()
	})
}

// stop stops the Runner (it hands its slots over and deletes its Lease),
// then the workers, and returns Run's error.
func (rp *replica) stop() error {
	rp.cancel()
	<-rp.done
	return rp.runErr
}

func (rp *replica) sample() *protocol.ReplicaSample {
	return &protocol.ReplicaSample{Keys: rp.ctl.keys.Load(), ActiveSlots: rp.h.activeSlots(), Informers: rp.informers.len(),
		Queue: rp.ctl.queue.Len(), Objects: rp.objects.Load(), Bytes: rp.bytes.Load()}
}

// serveReplica runs one replica through a replicas trial, driven by cmds
// and reporting through emit: samples from the start; on finish, its
// final state and figures; it stops when the parent closes the command
// stream (or ctx ends) and returns after every goroutine it started has
// exited.
func serveReplica(ctx context.Context, sp protocol.Spec, cmds <-chan protocol.Command, emit func(protocol.Message)) error {
	if sp.Replica == nil {
		return errors.New("replicas scenario without a replica spec")
	}
	heap0 := selfstat.LiveHeap()
	cpu0 := selfstat.CPUTime()
	gc0, _ := selfstat.GCStats()
	rp, err := newReplica(sp)
	if err != nil {
		return err
	}
	var pk selfstat.Peaks
	quit, exited := make(chan struct{}), make(chan struct{})
	point := func() {
		heap, rss := pk.Sample()
		emit(protocol.Message{Type: protocol.MsgSample, Sample: &protocol.Sample{At: time.Now().UnixNano(), Synced: int(rp.ctl.initial.Load()),
			Observed: rp.ctl.observed.Load(), Done: rp.ctl.reconciles.Load(), Heap: heap, RSS: rss,
			CPU: (selfstat.CPUTime() - cpu0).Seconds(), Replica: rp.sample()}})
	}
	go func() { // the replica's sampler; stopped before the result
		defer close(exited)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				point()
			}
		}
	}()
	stopSampler := sync.OnceFunc(func() { close(quit); <-exited })
	defer stopSampler()
	rp.start(ctx)
	running := true
	defer func() {
		if running {
			_ = rp.stop()
		}
	}()

	var fin protocol.Command
	for fin.Cmd != protocol.CmdFinish {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case cmd, ok := <-cmds:
			if !ok {
				return errors.New("parent went away")
			}
			fin = cmd // churn-start and churn-end only mark the timeline, which the parent keeps
		}
	}
	cpuEnd := selfstat.CPUTime()
	point()
	stopSampler()
	st := &protocol.ReplicaState{View: map[string]string{}, Reconciled: rp.ctl.reconciled.snapshot(), Spans: rp.h.spans()}
	for _, obj := range rp.h.view.List() {
		p := obj.(*corev1.Pod)
		st.View[podKey(p)] = p.ResourceVersion
	}
	ctl := rp.ctl
	ctl.deleteRec.join(fin.Deletes, &ctl.latency)
	f := &report.ReplicaFigures{Objects: rp.informers.objects(), ViewKeys: len(st.View), ActiveSlots: rp.h.activeSlots(),
		Reconciles: ctl.reconciles.Load(), ChurnReconciles: ctl.changes.Load(), Latency: latencyReport(latency.Merge(&ctl.latency)),
		DecodedObjects: rp.objects.Load(), DecodedBytes: rp.bytes.Load(), Fallbacks: rp.fallbacks.Load(),
		DroppedObjects: rp.droppped.Load(), CPUSeconds: (cpuEnd - cpu0).Seconds()}
	f.PeakHeapBytes, f.PeakRSSBytes = pk.Get()
	gc1, _ := selfstat.GCStats()
	f.GCCount = gc1 - gc0
	emit(protocol.Message{Type: protocol.MsgResult, ReplicaState: st})
	st = nil
	// The heap still held: the slot informers, the view, the queue and the
	// Runner, once loadgen's per-key records are gone.
	h0 := selfstat.LiveHeap()
	ctl.reconciled.release()
	ctl.pending.release()
	rp.h.release()
	ctl.deletes.release()
	ctl.deleteRec.release()
	h1 := selfstat.LiveHeap()
	f.BookkeepingBytes, f.RetainedHeapBytes = sub(h0, h1), sub(h1, heap0)
	emit(protocol.Message{Type: protocol.MsgResult, ReplicaResult: f})

	// Keep the slots until the parent says stop (closes the commands), so
	// that no replica hands its slots to a peer still measuring.
	select {
	case <-ctx.Done():
	case <-cmds:
	}
	running = false
	return rp.stop()
}
