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
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/promadapter"
	"github.com/shardinformer/shardinformer/ratelimit"
	"github.com/shardinformer/shardinformer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Queue names, as the report spells them.
const (
	queueClientGo = "client-go workqueue"
	queueOurs     = "shardinformer ratelimit.Queue"
)

// defaultDiet is --diet's default: whether the wire decoder puts objects on
// its memory diet unless an implementation's name says otherwise. It is what
// we recommend to users (bench/results/README.md).
const defaultDiet = true

// listerWatcher returns the ListerWatcher sp's implementation lists and
// watches pods with, and the name of its decoder for the report. This is
// the one place that chooses it: client-go's typed client (its REST client
// and decoder), or package wire's parallel-decoding ListerWatcher on the
// same REST client, with sp's workers and diet.
func listerWatcher(sp protocol.Spec, cs kubernetes.Interface) (cache.ListerWatcher, string, error) {
	narrow := sp.Endpoint.Narrow
	if sp.Decoder == decoderWire {
		opts := []wire.Option{wire.WithTweakListOptions(narrow)}
		if sp.WireWorkers > 0 {
			opts = append(opts, wire.WithWorkers(sp.WireWorkers))
		}
		if sp.ContentType == "json" {
			opts = append(opts, wire.WithContentType(wire.JSON))
		}
		if sp.Diet {
			opts = append(opts, wire.WithDiet())
		}
		lw, err := wire.New(cs.CoreV1().RESTClient(), wire.Resource{
			GVR:    schema.GroupVersionResource{Version: "v1", Resource: "pods"},
			Object: &corev1.Pod{},
		}, opts...)
		return lw, decoderWire, err
	}
	pods := cs.CoreV1().Pods("")
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			narrow(&o)
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			narrow(&o)
			return pods.Watch(ctx, o)
		},
	}, cs), decoderClientGo, nil
}

// newQueue returns the controller work queue of a core and its name for the
// report. This is the one place that chooses it: client-go's rate-limiting
// queue, or ratelimit's, which satisfies the same interface; both with
// client-go's default controller rate limiter.
func newQueue(core string) (workqueue.TypedRateLimitingInterface[string], string, error) {
	rl := workqueue.DefaultTypedControllerRateLimiter[string]()
	if core == report.ImplOurs {
		q, err := ratelimit.New(ratelimit.Config[string]{RateLimiter: rl})
		return q, queueOurs, err
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[string]{}), queueClientGo, nil
}

// client is one implementation under test: its informer on a clientset of
// its own (own connections) and either the informer scenario's handlers and
// readers or the controller scenario's queue and workers.
type client struct {
	sp        protocol.Spec
	src       informerSource       // the informer as its path built it, with its factory or cache
	cs        kubernetes.Interface // typed path only
	inf       cache.SharedIndexInformer
	ours      *pipeline.Informer // nil for client-go
	counts    *countingObserver  // ours only
	listWatch string             // what lists and watches: ours' Stats().ListerWatcher, or the path's description
	decoder   string
	diet      string // the wire's diet; "" with client-go's decoder
	queue     string

	handlers []*handler // informer scenario
	regs     []cache.ResourceEventHandlerRegistration
	ctl      *controller // controller scenario
	reads    atomic.Uint64
	reqs     *requestCounter // its list and watch requests (faults.go)

	metrics clientRegisterer // what it registered when metrics are served

	startedAt, syncedAt, readyAt time.Time
	cancel                       context.CancelFunc
	done                         chan struct{} // closed when the informer and workers have returned
	runErr                       error         // the path's run's, once done is closed

	readersCancel context.CancelFunc
	readersWG     sync.WaitGroup
}

// oursName is our informer's name: in logs and promadapter's informer label.
const oursName = "loadgen pods"

// countingObserver counts what the report needs from the pipeline's hooks and
// forwards every hook to next (Prometheus, when metrics are served).
type countingObserver struct {
	next                        pipeline.Observer
	overflow, coalesced, panics atomic.Uint64
	relists, dropped            atomic.Uint64
	episodes                    atomic.Uint64 // Coalescing(_, true): overflow episodes
}

func (o *countingObserver) BatchApplied(shard int, b pipeline.BatchStats) {
	o.next.BatchApplied(shard, b)
}
func (o *countingObserver) Overflowed(l string, n, merged int) {
	o.overflow.Add(uint64(n))
	o.coalesced.Add(uint64(merged))
	o.next.Overflowed(l, n, merged)
}
func (o *countingObserver) Coalescing(l string, active bool) {
	if active {
		o.episodes.Add(1)
	}
	o.next.Coalescing(l, active)
}
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

// clientConfig is the REST config of an implementation under test: sp's
// endpoint and content type, and a dialer of its own, so that client-go
// builds a transport of its own instead of sharing its cached one and
// implementations never share a connection.
func clientConfig(sp protocol.Spec) (*rest.Config, error) {
	rc, err := sp.Endpoint.RESTConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sp.Impl, err)
	}
	rc.UserAgent = "loadgen/" + sp.Impl
	if sp.ContentType == "protobuf" {
		rc.ContentType = runtime.ContentTypeProtobuf
		rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	} else {
		rc.ContentType = runtime.ContentTypeJSON
	}
	rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return rc, nil
}

// newClient builds (does not start) the implementation sp names, through
// sp's path (buildInformer). reg, if not nil, receives ours' metrics.
func newClient(sp protocol.Spec, reg prometheus.Registerer) (_ *client, err error) {
	rc, err := clientConfig(sp)
	if err != nil {
		return nil, err
	}
	c := &client{sp: sp, done: make(chan struct{}), reqs: newRequestCounter(sp.Resource)}
	rc.Wrap(c.reqs.wrap)
	if reg != nil {
		c.metrics.reg = prometheus.WrapRegistererWith(prometheus.Labels{"impl": sp.Impl}, reg)
	}
	defer func() {
		if err != nil {
			c.metrics.unregisterAll()
		}
	}()
	var pipe []pipeline.Option
	if sp.Core == report.ImplOurs {
		policy, err := pipeline.ParseFullRingPolicy(sp.Policy)
		if err != nil {
			return nil, err
		}
		c.counts = &countingObserver{next: pipeline.NopObserver{}}
		if reg != nil {
			obs, err := promadapter.NewObserver(&c.metrics)
			if err != nil {
				return nil, err
			}
			c.counts.next = obs.ForInformer(oursName) // countingObserver is not a ScopedObserver: scope it here
		}
		pipe = []pipeline.Option{
			pipeline.WithRingCapacity(sp.RingSize),
			pipeline.WithFullRingPolicy(policy),
			pipeline.WithObserver(c.counts),
			pipeline.WithName(oursName),
		}
		if sp.Shards > 0 {
			pipe = append(pipe, pipeline.WithShards(sp.Shards))
		}
		if sp.Compact {
			pipe = append(pipe, pipeline.WithCompactStore(compact.Config{}))
		}
	} else if sp.Core != report.ImplClientGo {
		return nil, fmt.Errorf("%s: unknown core %q", sp.Impl, sp.Core)
	}
	var extra cache.Indexers
	if sp.Scenario == report.ScenarioController {
		extra = cache.Indexers{appIndex: appIndexFunc}
	}
	c.src, c.cs, err = buildInformer(sp, rc, pipe, extra)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sp.Impl, err)
	}
	c.inf, c.listWatch = c.src.inf, c.src.listWatch
	if sp.Core == report.ImplOurs {
		var ok bool
		if c.ours, ok = pipeline.Unwrap(c.inf); !ok {
			return nil, fmt.Errorf("%s: the %s path handed out a %T, not our informer", sp.Impl, sp.Path, c.inf)
		}
		c.listWatch = c.ours.Stats().ListerWatcher
		if reg != nil {
			if err := c.metrics.Register(promadapter.NewCollector(c.ours)); err != nil {
				return nil, err
			}
		}
	}
	c.decoder = decoderOf(c.listWatch)
	c.diet = variant{decoder: c.decoder, diet: sp.Diet}.dietName()
	if reg != nil {
		if err := c.metrics.register(reg, newClientCollector(c)); err != nil {
			return nil, err
		}
	}
	if sp.Scenario == report.ScenarioInformer {
		for range sp.Handlers {
			h := newHandler(sp.HandlerIters)
			var reg cache.ResourceEventHandlerRegistration
			if c.ours != nil && sp.HandlerWorkers > 1 {
				reg, err = c.ours.AddParallelEventHandler(h, sp.HandlerWorkers)
			} else {
				reg, err = c.inf.AddEventHandler(h)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: add handler: %w", sp.Impl, err)
			}
			c.handlers = append(c.handlers, h)
			c.regs = append(c.regs, reg)
		}
		return c, nil
	}
	var q workqueue.TypedRateLimitingInterface[string]
	q, c.queue, err = newQueue(sp.Core)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sp.Impl, err)
	}
	var w statusWriter
	if sp.Endpoint.Kind == target.KindCluster {
		cs := c.cs
		w = func(ctx context.Context, ns, name, gen string) error {
			_, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, statusPatch(gen), metav1.PatchOptions{}, "status")
			return err
		}
	}
	c.ctl = newController(q, c.inf.GetIndexer(), sp.Workers, sp.ReconcileIters, w)
	if sp.SoakEvery > 0 {
		// The soak measures the process's heap for an hour: loadgen's
		// append-only logs of deletes (for the delete latencies) would grow it.
		c.ctl.deletes.off, c.ctl.deleteRec.off = true, true
	}
	reg2, err := c.inf.AddEventHandler(c.ctl)
	if err != nil {
		return nil, fmt.Errorf("%s: add handler: %w", sp.Impl, err)
	}
	c.regs = append(c.regs, reg2)
	return c, nil
}

// start runs the informer (and workers) on goroutines labelled impl=<name>:
// goroutines inherit labels from the goroutine that starts them, so the
// reflector, decoding, HTTP connections, handlers and workers carry it, and
// `go tool pprof -tagfocus impl=shardinformer` selects them.
func (c *client) start(ctx context.Context) {
	ctx, c.cancel = context.WithCancel(ctx)
	c.startedAt = time.Now()
	pprof.Do(ctx, pprof.Labels("impl", c.sp.Impl, "role", "informer"), func(ctx context.Context) {
		run := c.src.run
		go func() { // runs the factory, cache or informer; with a controller, also its workers' parent
			defer close(c.done)
			if c.ctl == nil {
				c.runErr = run(ctx)
				return
			}
			var wg sync.WaitGroup
			wg.Go(func() { c.runErr = run(ctx) })
			go func() { // shuts the queue down when the run ends, so the workers return
				<-ctx.Done()
				c.ctl.queue.ShutDown()
			}()
			c.ctl.run(ctx)
			wg.Wait()
		}()
	})
}

// synced reports whether the informer and every handler registration have
// synced, and records when that first happened.
func (c *client) synced() bool {
	if !c.syncedAt.IsZero() {
		return true
	}
	if !c.inf.HasSynced() {
		return false
	}
	for _, reg := range c.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	c.syncedAt = time.Now()
	return true
}

// ready reports whether every initial object has been handled: synced, and
// with a controller, every initial key reconciled once.
func (c *client) ready() bool {
	if !c.readyAt.IsZero() {
		return true
	}
	if !c.synced() {
		return false
	}
	if c.ctl != nil && c.ctl.keys.Load() < int64(c.ctl.initial.Load()) {
		return false
	}
	c.readyAt = time.Now()
	return true
}

// syncedObjects is the progress measure during the initial sync: the fewest
// initial adds any handler has processed.
func (c *client) syncedObjects() int {
	if c.ctl != nil {
		return int(c.ctl.initial.Load())
	}
	if len(c.handlers) == 0 {
		return len(c.inf.GetStore().ListKeys())
	}
	n := uint64(1<<63 - 1)
	for _, h := range c.handlers {
		n = min(n, h.initial.Load())
	}
	return int(n)
}

// observed is the fewest churn events any handler observed, and each one's count.
func (c *client) observed() (minimum uint64, perHandler []uint64) {
	if c.ctl != nil {
		o := c.ctl.observed.Load()
		return o, []uint64{o}
	}
	minimum = 1<<64 - 1
	for _, h := range c.handlers {
		o := h.observed.Load()
		perHandler = append(perHandler, o)
		minimum = min(minimum, o)
	}
	if len(c.handlers) == 0 {
		minimum = 0
	}
	return minimum, perHandler
}

// latencies returns the histograms of delivery (informer) or reconcile
// (controller) latency.
func (c *client) latencies() []*latency.Histogram {
	if c.ctl != nil {
		return []*latency.Histogram{&c.ctl.latency}
	}
	hs := make([]*latency.Histogram, 0, len(c.handlers))
	for _, h := range c.handlers {
		hs = append(hs, &h.lat)
	}
	return hs
}

func (c *client) calls() uint64 {
	var n uint64
	for _, h := range c.handlers {
		n += h.calls.Load()
	}
	return n
}

func (c *client) reconciles() uint64 {
	if c.ctl == nil {
		return 0
	}
	return c.ctl.reconciles.Load()
}

// startReaders starts n cache readers: each picks a namespace, lists it
// through the namespace index and gets one of its objects by key, like a
// controller's lister calls.
func (c *client) startReaders(ctx context.Context, n int, namespaces []string, seed int64) {
	ctx, c.readersCancel = context.WithCancel(ctx)
	idx := c.inf.GetIndexer()
	pprof.Do(ctx, pprof.Labels("impl", c.sp.Impl, "role", "reader"), func(ctx context.Context) {
		for i := range n {
			c.readersWG.Go(func() { // a cache reader goroutine
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
				var local uint64
				for ctx.Err() == nil {
					ns := namespaces[rng.IntN(len(namespaces))]
					objs, err := idx.ByIndex(cache.NamespaceIndex, ns)
					if err == nil && len(objs) > 0 {
						_, _, _ = idx.GetByKey(objectKey(objs[rng.IntN(len(objs))]))
					}
					if local++; local%64 == 0 {
						c.reads.Add(64)
					}
				}
				c.reads.Add(local % 64)
			})
		}
	})
}

func (c *client) stopReaders() {
	if c.readersCancel != nil {
		c.readersCancel()
		c.readersWG.Wait()
	}
}

// stop stops the informer (and workers) and waits for them to return.
func (c *client) stop() {
	c.stopReaders()
	c.cancel()
	<-c.done
}
