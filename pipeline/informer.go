package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/fifo"
	"github.com/shardinformer/shardinformer/index"
	"github.com/shardinformer/shardinformer/internal/doorbell"
	"github.com/shardinformer/shardinformer/shards"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Errors returned by the Informer's methods.
var (
	ErrStarted = errors.New("pipeline: informer has already started")
	ErrStopped = errors.New("pipeline: informer has already stopped")
)

// minimumResyncPeriod is client-go's lower bound for handler resync periods.
const minimumResyncPeriod = time.Second

// Informer is a sharded cache.SharedIndexInformer. Build it with
// NewSharedIndexInformer; it must not be copied.
type Informer struct {
	cfg           config
	name          string
	lw            cache.ListerWatcher
	example       runtime.Object
	defaultResync time.Duration
	router        shards.Router
	indexer       *index.Sharded
	store         *storeView // what GetStore and GetIndexer return
	shards        []*shard
	wm            watermark
	synced        chan struct{} // closed once every shard's initial list is applied
	listed        chan struct{} // closed once the first Replace has been issued (store.Replace)
	// mutations is client-go's cache mutation detector: a no-op unless
	// KUBE_CACHE_MUTATION_DETECTOR=true, when it keeps a deep copy of every
	// object the drain roles store and panics once one differs from its
	// copy (client-go's informer does the same). Safe for concurrent use.
	mutations cache.MutationDetector
	// codec is WithCompactStore's: the cache holds its Objects, which the
	// partitions' index functions, the listeners' workers (notification.decode)
	// and the cache's readers (index.WithCodec) decode. nil without it.
	codec  *compact.Codec
	timed  bool // an Observer is set: measure durations
	nextID atomic.Uint64
	// goroutines counts every listener's goroutines, removed listeners'
	// included, for RunWithContext to wait for. Add only under mu before stop.
	goroutines sync.WaitGroup

	mu struct {
		sync.Mutex
		// stopping: ctx is done; stopped: the reflector and the drain
		// goroutines have exited too (IsStopped).
		started, stopping, stopped bool
		listeners                  []*listener
		transform                  cache.TransformFunc
		watchErrorHandler          cache.WatchErrorHandlerWithContext
		resyncCheckPeriod          time.Duration
		reflector                  *cache.Reflector
	}
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// NewSharedIndexInformer returns an informer with the signature of client-go's
// cache.NewSharedIndexInformer plus options. It panics on invalid options, as
// client-go's constructors do on invalid input; use New to get an error.
func NewSharedIndexInformer(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers cache.Indexers, opts ...Option) *Informer {
	inf, err := New(lw, exampleObject, defaultEventHandlerResyncPeriod, indexers, opts...)
	if err != nil {
		panic(err)
	}
	return inf
}

// New is NewSharedIndexInformer returning an error for invalid options.
func New(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers cache.Indexers, opts ...Option) (*Informer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if lw == nil {
		return nil, fmt.Errorf("%w: nil ListerWatcher", errConfig)
	}
	router, err := shards.New(cfg.shards)
	if err != nil {
		return nil, err
	}
	var codec *compact.Codec
	var indexOpts []index.Option
	if cfg.compact != nil {
		if codec, err = compact.New(exampleObject, *cfg.compact); err != nil {
			return nil, fmt.Errorf("%w: WithCompactStore: %w", errConfig, err)
		}
		indexOpts = append(indexOpts, index.WithCodec(codec))
	}
	indexer, err := index.NewSharded(cfg.shards, router.Of, cache.DeletionHandlingMetaNamespaceKeyFunc, indexers, indexOpts...)
	if err != nil {
		return nil, err
	}
	_, nop := cfg.observer.(NopObserver)
	inf := &Informer{
		cfg:           cfg,
		name:          cfg.name,
		lw:            lw,
		example:       exampleObject,
		defaultResync: defaultEventHandlerResyncPeriod,
		router:        router,
		indexer:       indexer,
		codec:         codec,
		synced:        make(chan struct{}),
		listed:        make(chan struct{}),
		timed:         !nop,
	}
	if inf.name == "" {
		inf.name = fmt.Sprintf("shardinformer %T", exampleObject)
	}
	inf.cfg.observer = scoped(inf.cfg.observer, inf.name)
	inf.mutations = cache.NewCacheMutationDetector(inf.name)
	inf.mu.resyncCheckPeriod = defaultEventHandlerResyncPeriod
	for i := range cfg.shards {
		s := &shard{id: i, inf: inf, part: indexer.Partition(i), bell: doorbell.New(),
			inline: cfg.policy != Block, late: cfg.policy == Block && !cfg.relaxed}
		s.own.items = make([]fifo.Item, 0, cfg.batchSize)
		inf.shards = append(inf.shards, s)
	}
	inf.wm.shards = inf.shards
	inf.store = &storeView{Sharded: indexer, inf: inf}
	return inf, nil
}

// storeView is the cache as GetStore and GetIndexer return it: the shards'
// index.Sharded, with client-go's LastStoreSyncResourceVersion.
type storeView struct {
	*index.Sharded
	inf *Informer
}

// LastStoreSyncResourceVersion implements cache.Store as client-go's
// informer store does (client-go 1.36+, with its default AtomicFIFO): the
// resource version of the newest write applied to the store, where a watch
// event's write is its object's version, a relist's the list's and a
// bookmark's its own, and a resync changes nothing. Ours names the write at
// the store watermark: every write up to it is in the cache, in every shard.
// "" before the first write is applied.
func (v *storeView) LastStoreSyncResourceVersion() string {
	v.inf.mu.Lock()
	started := v.inf.mu.started
	v.inf.mu.Unlock()
	if !started {
		return ""
	}
	return v.inf.wm.resourceVersion()
}

// AddEventHandler implements cache.SharedInformer.
func (inf *Informer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{})
}

// AddEventHandlerWithResyncPeriod implements cache.SharedInformer.
func (inf *Informer) AddEventHandlerWithResyncPeriod(handler cache.ResourceEventHandler, resyncPeriod time.Duration) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{ResyncPeriod: &resyncPeriod})
}

// AddEventHandlerWithOptions implements cache.SharedInformer. The handler is
// never called concurrently with itself.
func (inf *Informer) AddEventHandlerWithOptions(handler cache.ResourceEventHandler, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	return inf.addListener(handler, 1, options)
}

// AddParallelEventHandler registers handler with up to workers concurrent
// calls. Calls for one key are never concurrent and keep their order; calls
// for different keys may overlap, so the handler must be safe for concurrent
// use.
func (inf *Informer) AddParallelEventHandler(handler cache.ResourceEventHandler, workers int) (cache.ResourceEventHandlerRegistration, error) {
	return inf.AddParallelEventHandlerWithOptions(handler, workers, cache.HandlerOptions{})
}

// AddParallelEventHandlerWithOptions is AddParallelEventHandler with options.
func (inf *Informer) AddParallelEventHandlerWithOptions(handler cache.ResourceEventHandler, workers int, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if workers < 1 {
		return nil, fmt.Errorf("pipeline: AddParallelEventHandler: workers must be at least 1, got %d", workers)
	}
	return inf.addListener(handler, workers, options)
}

func (inf *Informer) addListener(handler cache.ResourceEventHandler, workers int, options cache.HandlerOptions) (cache.ResourceEventHandlerRegistration, error) {
	if handler == nil {
		return nil, errors.New("pipeline: nil event handler")
	}
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.mu.stopped {
		return nil, fmt.Errorf("%w: handler %v was not added", ErrStopped, handler)
	}
	logger := ptr.Deref(options.Logger, klog.Background())
	requested := ptr.Deref(options.ResyncPeriod, inf.defaultResync)
	resync := inf.resyncPeriodLocked(logger, requested)
	l, err := newListener(inf, inf.nextID.Add(1), handler, workers, requested, logger)
	if err != nil {
		return nil, err
	}
	l.resyncPeriod = resync
	l.nextResync = time.Now().Add(resync)
	if inf.mu.stopping {
		l.releaseProducers()
	}
	inf.mu.listeners = append(inf.mu.listeners, l)
	if !inf.mu.started {
		for _, s := range inf.shards {
			s.listeners = append(s.listeners, newShardListener(s.id, l))
		}
		return l, nil
	}
	// Running: every shard sends the newcomer its cache contents as
	// initial-list adds from its own drain goroutine, then publishes to it.
	l.joinsPending.Store(int32(len(inf.shards)))
	l.start()
	for _, s := range inf.shards {
		s.requestJoin(l)
	}
	return l, nil
}

// resyncPeriodLocked applies client-go's rules to a requested resync period
// and returns the period the listener gets. Before Run, a period below the
// informer's check period lowers the check period (and adjusts existing
// listeners); after Run it is raised to the check period. An informer built
// without a resync period never resyncs.
// REQUIRES: inf.mu held.
func (inf *Informer) resyncPeriodLocked(logger klog.Logger, period time.Duration) time.Duration {
	if period > 0 {
		if period < minimumResyncPeriod {
			logger.Info("Warning: resync period is too small. Changing it to the minimum allowed value", "resyncPeriod", period, "minimumResyncPeriod", minimumResyncPeriod)
			period = minimumResyncPeriod
		}
		if period < inf.mu.resyncCheckPeriod {
			if inf.mu.started {
				logger.Info("Warning: resync period is smaller than resync check period and the informer has already started. Changing it to the resync check period", "resyncPeriod", period, "resyncCheckPeriod", inf.mu.resyncCheckPeriod)
				period = inf.mu.resyncCheckPeriod
			} else {
				inf.mu.resyncCheckPeriod = period
				for _, l := range inf.mu.listeners {
					l.resyncPeriod = effectiveResync(logger, l.requestedResync, period)
				}
			}
		}
	}
	return effectiveResync(logger, period, inf.mu.resyncCheckPeriod)
}

// effectiveResync is the resync period a listener asking for desired gets
// from an informer that checks every check.
func effectiveResync(logger klog.Logger, desired, check time.Duration) time.Duration {
	switch {
	case desired == 0:
		return 0
	case check == 0:
		logger.Info("Warning: the requested resync period is ignored because this informer does not resync (it was built with resync period 0)", "resyncPeriod", desired)
		return 0
	case desired < check:
		return check
	}
	return desired
}

// RemoveEventHandler implements cache.SharedInformer. Removing a registration
// that is not (or no longer) registered does nothing.
func (inf *Informer) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	l, ok := handle.(*listener)
	if !ok || l.inf != inf {
		return fmt.Errorf("pipeline: registration %T was not returned by this informer", handle)
	}
	inf.mu.Lock()
	defer inf.mu.Unlock()
	i := slices.Index(inf.mu.listeners, l)
	if i < 0 {
		return nil
	}
	inf.mu.listeners = slices.Delete(inf.mu.listeners, i, i+1)
	if !inf.mu.started {
		for _, s := range inf.shards {
			s.drop(l)
		}
	} else if !inf.mu.stopped {
		for _, s := range inf.shards {
			s.requestRemove(l)
		}
	}
	l.stop(inf.mu.started)
	return nil
}

// GetStore implements cache.SharedInformer.
func (inf *Informer) GetStore() cache.Store { return inf.store }

// GetIndexer implements cache.SharedIndexInformer. The indexer may be read
// from any goroutine; readers never block the shards' writers for more than
// one map operation.
func (inf *Informer) GetIndexer() cache.Indexer { return inf.store }

// AddIndexers implements cache.SharedIndexInformer; it may be called before or
// after Run.
func (inf *Informer) AddIndexers(indexers cache.Indexers) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.mu.stopped {
		return fmt.Errorf("%w: indexer was not added", ErrStopped)
	}
	return inf.indexer.AddIndexers(indexers)
}

// GetController implements cache.SharedInformer. Like client-go's, the
// returned controller only reports; running it does nothing.
func (inf *Informer) GetController() cache.Controller { return controllerView{inf} }

// Run implements cache.SharedInformer.
func (inf *Informer) Run(stopCh <-chan struct{}) {
	inf.RunWithContext(wait.ContextForChannel(stopCh))
}

// RunWithContext implements cache.SharedInformer. It starts the reflector, one
// drain goroutine per shard and the listener workers, and returns once ctx is
// done and every goroutine it started has exited.
//
// Stopping follows client-go: when ctx is done the queues close and the
// producers stop waiting for listeners (Block); once the reflector and the
// drain goroutines have exited (client-go: once its controller has
// returned), the informer counts as stopped (IsStopped, no new handlers);
// then the listeners stop, and RunWithContext returns when their workers have
// left the handlers.
func (inf *Informer) RunWithContext(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	reflector, err := inf.start(logger)
	if err != nil {
		logger.Info("Warning: " + err.Error())
		return
	}

	var controller, others sync.WaitGroup
	for _, s := range inf.shards {
		controller.Go(func() { s.run(ctx) })
	}
	controller.Go(func() { inf.runReflector(ctx, reflector) })
	others.Go(func() { inf.watchSynced(ctx) })
	others.Go(func() { inf.mutations.Run(ctx.Done()) })

	<-ctx.Done()
	for _, s := range inf.shards {
		s.queue.Close()
	}
	inf.mu.Lock()
	inf.mu.stopping = true // listeners added from here on do not hold producers up either
	for _, l := range inf.mu.listeners {
		l.releaseProducers() // drain goroutines waiting for ring space under Block
	}
	inf.mu.Unlock()
	controller.Wait()

	inf.mu.Lock()
	inf.mu.stopped = true // no new listeners from here on
	listeners := inf.mu.listeners
	inf.mu.Unlock()
	// Listeners added or removed after the drain goroutines' last look: a
	// new one gets the cache contents, as client-go's does until its
	// processor stops.
	for _, s := range inf.shards {
		s.own.Lock()
		s.applyControl()
		s.own.Unlock()
	}
	for _, l := range listeners {
		l.stop(true)
	}
	others.Wait()
	// Every listener's workers, including those of listeners removed earlier
	// whose handler call was still under way.
	inf.goroutines.Wait()
}

// start builds the queues and the reflector and starts the listeners' workers.
// It fails if Run was called before.
func (inf *Informer) start(logger klog.Logger) (*cache.Reflector, error) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.mu.started {
		return nil, fmt.Errorf("%w: %s, Run more than once is not allowed", ErrStarted, inf.name)
	}
	transform := inf.mu.transform
	if inf.codec != nil {
		transform = inf.codec.Transform(transform)
	}
	for _, s := range inf.shards {
		q, err := fifo.New(fifo.Config{Known: s.part, Transform: transform, MaxQueued: inf.cfg.maxQueued()})
		if err != nil {
			return nil, err
		}
		s.queue = q
	}
	r := cache.NewReflectorWithOptions(inf.lw, inf.example, &store{inf: inf, transform: transform}, cache.ReflectorOptions{
		Logger:          &logger,
		Name:            inf.name,
		TypeDescription: fmt.Sprintf("%T", inf.example),
		ResyncPeriod:    inf.mu.resyncCheckPeriod,
	})
	r.ShouldResync = inf.shouldResync
	inf.mu.reflector = r
	inf.mu.started = true
	for _, l := range inf.mu.listeners {
		l.start()
	}
	return r, nil
}

// runReflector is the reflector goroutine: client-go's ListAndWatch in a
// loop with client-go's backoff, reporting failures to the watch error
// handler.
func (inf *Informer) runReflector(ctx context.Context, r *cache.Reflector) {
	inf.mu.Lock()
	handler := inf.mu.watchErrorHandler
	inf.mu.Unlock()
	if handler == nil {
		handler = cache.DefaultWatchErrorHandler
	}
	backoff := wait.Backoff{Duration: 800 * time.Millisecond, Cap: 30 * time.Second, Steps: math.MaxInt32, Factor: 2, Jitter: 1}
	_ = backoff.DelayWithReset(clock.RealClock{}, 2*time.Minute).Until(ctx, true, true, func(ctx context.Context) (bool, error) {
		if err := r.ListAndWatchWithContext(ctx); err != nil {
			handler(ctx, r, err)
		}
		return false, nil
	})
}

// watchSynced closes inf.synced once every shard has applied its initial
// list: each queue has reported the list's mark (fifo.Queue.Synced) and the
// list's position has been issued, so the store watermark, and with it
// LastStoreSyncResourceVersion, is at least the list's once HasSynced is true
// (client-go's store holds the list's resource version by then too).
func (inf *Informer) watchSynced(ctx context.Context) {
	chans := []<-chan struct{}{inf.listed}
	for _, s := range inf.shards {
		chans = append(chans, s.queue.Synced())
	}
	for _, ch := range chans {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
	close(inf.synced)
	inf.mu.Lock()
	listeners := append([]*listener(nil), inf.mu.listeners...)
	inf.mu.Unlock()
	for _, l := range listeners {
		l.checkSynced()
	}
}

// shouldResync is called by the reflector's resync goroutine: it marks the
// listeners whose resync period has elapsed, which then receive resync
// notifications until the next call.
func (inf *Informer) shouldResync() bool {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	now := time.Now()
	any := false
	for _, l := range inf.mu.listeners {
		due := l.resyncPeriod > 0 && !now.Before(l.nextResync)
		l.syncing.Store(due)
		if due {
			any = true
			l.nextResync = now.Add(l.resyncPeriod)
		}
	}
	return any
}

// HasSynced implements cache.SharedInformer.
func (inf *Informer) HasSynced() bool {
	select {
	case <-inf.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker implements cache.SharedInformer.
func (inf *Informer) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: inf.name, done: inf.synced}
}

// LastSyncResourceVersion implements cache.SharedInformer.
func (inf *Informer) LastSyncResourceVersion() string {
	inf.mu.Lock()
	r := inf.mu.reflector
	inf.mu.Unlock()
	if r == nil {
		return ""
	}
	return r.LastSyncResourceVersion()
}

// SetWatchErrorHandler implements cache.SharedInformer.
func (inf *Informer) SetWatchErrorHandler(handler cache.WatchErrorHandler) error {
	return inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		handler(r, err)
	})
}

// SetWatchErrorHandlerWithContext implements cache.SharedInformer.
func (inf *Informer) SetWatchErrorHandlerWithContext(handler cache.WatchErrorHandlerWithContext) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.mu.started {
		return ErrStarted
	}
	inf.mu.watchErrorHandler = handler
	return nil
}

// SetTransform implements cache.SharedInformer. The transform must be
// idempotent: with WatchList, client-go's reflector applies it to the streamed
// objects and the queue applies it again (as with client-go's own informer).
// As with client-go's, it may modify the object it is given in place; over
// package wire with WithSharing (part of WithDiet), only a pod's metadata,
// and a spec or status on a copy it returns (see wire.WithSharing).
func (inf *Informer) SetTransform(handler cache.TransformFunc) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.mu.started {
		return ErrStarted
	}
	inf.mu.transform = handler
	return nil
}

// mutationDetection is client-go's switch of its cache mutation detector.
var mutationDetection, _ = strconv.ParseBool(os.Getenv("KUBE_CACHE_MUTATION_DETECTOR"))

// detect hands a stored object to the mutation detector; under
// WithCompactStore its decoded form, the instance the handlers and readers
// share while it is among the decoded objects, and only when the detector
// is on (decoding costs).
func (inf *Informer) detect(obj any) {
	if inf.codec == nil {
		inf.mutations.AddObject(obj)
		return
	}
	if !mutationDetection {
		return
	}
	if o, err := inf.codec.Decode(obj); err == nil {
		inf.mutations.AddObject(o)
	}
}

// IsStopped implements cache.SharedInformer. As client-go's, it turns true
// once the informer has stopped writing the cache (the reflector and the drain
// goroutines have exited after ctx was done), before the handlers' goroutines
// have (RunWithContext returns after those).
func (inf *Informer) IsStopped() bool {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	return inf.mu.stopped
}

// dropped reports rejected input: logged and counted, never silent.
func (inf *Informer) dropped(err error) {
	utilruntime.HandleError(fmt.Errorf("%s: %w", inf.name, err))
	inf.cfg.observer.Dropped(err)
}

// controllerView is what GetController returns.
type controllerView struct{ inf *Informer }

func (c controllerView) Run(<-chan struct{})                 {}
func (c controllerView) RunWithContext(context.Context)      {}
func (c controllerView) HasSynced() bool                     { return c.inf.HasSynced() }
func (c controllerView) HasSyncedChecker() cache.DoneChecker { return c.inf.HasSyncedChecker() }
func (c controllerView) LastSyncResourceVersion() string     { return c.inf.LastSyncResourceVersion() }
