package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/promadapter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// implRun is one informer implementation under test, with its own clientset
// (own connections), handlers and readers.
type implRun struct {
	name     string
	inf      cache.SharedIndexInformer
	ours     *pipeline.Informer // nil for client-go
	counts   *countingObserver  // ours only
	handlers []*handler
	regs     []cache.ResourceEventHandlerRegistration
	reads    atomic.Uint64
	// collector reads ours' gauges for Prometheus; unregistered at the end.
	collector prometheus.Collector

	startedAt time.Time
	syncedAt  time.Time // zero until synced
	caughtUp  time.Time // when the final check passed
	cancel    context.CancelFunc
	done      chan struct{} // closed when the informer's Run returned

	readersCancel context.CancelFunc
	readersWG     sync.WaitGroup
}

// countingObserver counts what the report needs from the pipeline's hooks and
// forwards every hook to next (Prometheus, when --metrics-addr is set).
type countingObserver struct {
	next                        pipeline.Observer
	overflow, coalesced, panics atomic.Uint64
	relists, dropped            atomic.Uint64
}

func (o *countingObserver) BatchApplied(shard int, b pipeline.BatchStats) {
	o.next.BatchApplied(shard, b)
}
func (o *countingObserver) Overflowed(l string, n, merged int) {
	o.overflow.Add(uint64(n))
	o.coalesced.Add(uint64(merged))
	o.next.Overflowed(l, n, merged)
}
func (o *countingObserver) Coalescing(l string, active bool) { o.next.Coalescing(l, active) }
func (o *countingObserver) HandlerDone(l string, k pipeline.EventKind, d time.Duration) {
	o.next.HandlerDone(l, k, d)
}
func (o *countingObserver) HandlerPanicked(l, key string, r any) {
	o.panics.Add(1)
	o.next.HandlerPanicked(l, key, r)
}
func (o *countingObserver) Relisted(n int) { o.relists.Add(1); o.next.Relisted(n) }
func (o *countingObserver) Dropped(err error) {
	o.dropped.Add(1)
	o.next.Dropped(err)
}

// newImplRun builds (does not start) an informer of the named implementation
// on a clientset of its own. reg, if not nil, receives ours' metrics.
func newImplRun(name string, c config, t target, churn func() *churner, reg prometheus.Registerer) (*implRun, error) {
	rc := t.restConfig()
	rc.UserAgent = "loadgen/" + name
	if c.contentType == "protobuf" {
		rc.ContentType = runtime.ContentTypeProtobuf
		rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	} else {
		rc.ContentType = runtime.ContentTypeJSON
	}
	// A dialer of its own makes client-go build a transport of its own
	// instead of sharing its cached one: the implementations never share a
	// connection.
	rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: clientset: %w", name, err)
	}
	pods := cs.CoreV1().Pods("")
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			t.listOptions(&o)
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			t.listOptions(&o)
			return pods.Watch(ctx, o)
		},
	}, cs)
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	r := &implRun{name: name, done: make(chan struct{})}
	switch name {
	case implOurs:
		r.counts = &countingObserver{next: pipeline.NopObserver{}}
		if reg != nil {
			obs, err := promadapter.NewObserver(reg)
			if err != nil {
				return nil, err
			}
			r.counts.next = obs
		}
		opts := []pipeline.Option{
			pipeline.WithRingCapacity(c.ringSize),
			pipeline.WithFullRingPolicy(c.policy),
			pipeline.WithObserver(r.counts),
			pipeline.WithName("loadgen pods"),
		}
		if c.shards > 0 {
			opts = append(opts, pipeline.WithShards(c.shards))
		}
		r.ours, err = pipeline.New(lw, &corev1.Pod{}, 0, indexers, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if reg != nil {
			r.collector = promadapter.NewCollector(r.ours)
			if err := reg.Register(r.collector); err != nil {
				return nil, err
			}
		}
		r.inf = r.ours
	case implClientGo:
		r.inf = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers)
	default:
		return nil, fmt.Errorf("unknown implementation %q", name)
	}
	for range c.handlers {
		h := newHandler(c.handlerWork, churn)
		var reg cache.ResourceEventHandlerRegistration
		if r.ours != nil && c.workers > 1 {
			reg, err = r.ours.AddParallelEventHandler(h, c.workers)
		} else {
			reg, err = r.inf.AddEventHandler(h)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: add handler: %w", name, err)
		}
		r.handlers = append(r.handlers, h)
		r.regs = append(r.regs, reg)
	}
	return r, nil
}

// start runs the informer on goroutines labelled impl=<name> for the CPU
// attribution (goroutines inherit labels from the goroutine that starts them,
// so the reflector, decoding, HTTP connection and handler goroutines carry
// it).
func (r *implRun) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.startedAt = time.Now()
	pprof.Do(ctx, pprof.Labels("impl", r.name, "role", "informer"), func(ctx context.Context) {
		go func() { // the informer's Run goroutine
			defer close(r.done)
			r.inf.RunWithContext(ctx)
		}()
	})
}

// synced reports whether the informer and every handler registration have
// synced, and records when that first happened.
func (r *implRun) synced() bool {
	if !r.syncedAt.IsZero() {
		return true
	}
	if !r.inf.HasSynced() {
		return false
	}
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	r.syncedAt = time.Now()
	return true
}

// syncedObjects is the progress measure during the initial sync: the fewest
// initial adds any handler has processed (the informer's own count when it
// has no handlers).
func (r *implRun) syncedObjects() int {
	if len(r.handlers) == 0 {
		return len(r.inf.GetStore().ListKeys())
	}
	n := uint64(1<<63 - 1)
	for _, h := range r.handlers {
		n = min(n, h.initial.Load())
	}
	return int(n)
}

func (r *implRun) calls() uint64 {
	var n uint64
	for _, h := range r.handlers {
		n += h.calls.Load()
	}
	return n
}

// observedMin is the fewest churn events any handler observed.
func (r *implRun) observed() (minimum uint64, perHandler []uint64) {
	minimum = 1<<64 - 1
	for _, h := range r.handlers {
		o := h.observed.Load()
		perHandler = append(perHandler, o)
		minimum = min(minimum, o)
	}
	if len(r.handlers) == 0 {
		minimum = 0
	}
	return minimum, perHandler
}

// startReaders starts n cache readers: each picks a namespace, lists it
// through the namespace index and gets one of its pods by key, like a
// controller's lister calls.
func (r *implRun) startReaders(ctx context.Context, n int, namespaces []string, seed int64) {
	ctx, r.readersCancel = context.WithCancel(ctx)
	idx := r.inf.GetIndexer()
	pprof.Do(ctx, pprof.Labels("impl", r.name, "role", "reader"), func(ctx context.Context) {
		for i := range n {
			r.readersWG.Go(func() { // a cache reader goroutine
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
				var local uint64
				for ctx.Err() == nil {
					ns := namespaces[rng.IntN(len(namespaces))]
					objs, err := idx.ByIndex(cache.NamespaceIndex, ns)
					if err == nil && len(objs) > 0 {
						p := objs[rng.IntN(len(objs))].(*corev1.Pod)
						_, _, _ = idx.GetByKey(podKey(p))
					}
					if local++; local%64 == 0 {
						r.reads.Add(64)
					}
				}
				r.reads.Add(local % 64)
			})
		}
	})
}

func (r *implRun) stopReaders() {
	if r.readersCancel != nil {
		r.readersCancel()
		r.readersWG.Wait()
	}
}

// stop stops the informer and waits for its Run to return.
func (r *implRun) stop() {
	r.stopReaders()
	r.cancel()
	<-r.done
}
