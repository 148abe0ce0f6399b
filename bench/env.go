package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/tools/cache"
)

// Impl names an informer implementation under test.
type Impl string

// The two implementations every workload runs.
const (
	ClientGo      Impl = "client-go"
	ShardInformer Impl = "shardinformer"
)

// Impls lists the implementations in the order the benchmarks run them.
var Impls = []Impl{ClientGo, ShardInformer}

// Config describes one benchmark environment: a fake API holding Objects pods
// and the informer that watches it.
type Config struct {
	Impl       Impl
	Objects    int
	Namespaces int // pods are spread round-robin over this many namespaces
	// WatchList makes the fake API support WatchList (the reflector streams the
	// initial list as watch events ending in the initial-events-end bookmark);
	// otherwise the fake API opts out through IsWatchListSemanticsUnSupported
	// and the reflector uses LIST then WATCH.
	WatchList bool
	// MaxEvents is the most watch events the benchmark sends before the
	// informer has handled them; the fake API's watch buffer is sized for it,
	// so a watch is never closed for lagging.
	MaxEvents int
	// Options are passed to pipeline.NewSharedIndexInformer (ShardInformer only).
	Options []pipeline.Option
}

// Env is a fake API with pods and, between Start and Stop, a running informer.
// Not safe for concurrent use; the informer's goroutines are its own.
type Env struct {
	cfg     Config
	set     *podSet
	cluster *fakeapi.Cluster
	lw      *countingLW

	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	done     chan struct{}

	nextGen int64 // Generation of the last update object built
	cursor  int   // index of the next pod to update
}

// NewEnv builds (or reuses) the pods and a fake API holding them. It starts
// no goroutine.
func NewEnv(cfg Config) (*Env, error) {
	if cfg.Objects < 1 || cfg.Namespaces < 1 {
		return nil, fmt.Errorf("bench: need at least one object and namespace, got %d and %d", cfg.Objects, cfg.Namespaces)
	}
	if cfg.Impl != ClientGo && cfg.Impl != ShardInformer {
		return nil, fmt.Errorf("bench: unknown impl %q", cfg.Impl)
	}
	set := pods(cfg.Objects, cfg.Namespaces)
	c := fakeapi.New(fakeapi.Config{
		NewList:   func() k8sruntime.Object { return &corev1.PodList{} },
		WatchList: cfg.WatchList,
		// fakeapi trims its history by copying it on every event once it is
		// full, so a long history would cost O(History) per write. A history
		// of one keeps writes O(1); it only matters if a watch is dropped,
		// which the buffer size below prevents and countingLW detects.
		History:     1,
		WatchBuffer: cfg.Objects + cfg.MaxEvents + 1024,
		DeepCopy:    false,
	})
	for _, p := range set.pods {
		p.ResourceVersion = "" // Create sets it; pods are shared between envs
		if _, err := c.Create(p); err != nil {
			return nil, err
		}
	}
	return &Env{cfg: cfg, set: set, cluster: c, lw: &countingLW{inner: cache.ToListerWatcherWithContext(c.ListerWatcher()), noWatchList: !cfg.WatchList, gate: newGate()}}, nil
}

// watchBufferBytes is the fake API's per-watch channel buffer, which heap
// measurements subtract: it belongs to the fake API, not to the informer.
func (e *Env) watchBufferBytes() int64 {
	return int64(e.cfg.Objects+e.cfg.MaxEvents+1024) * int64(unsafe.Sizeof(watch.Event{}))
}

// Registration is one handler to register before Start.
type Registration struct {
	Handler *Handler
	// Workers > 1 registers through AddParallelEventHandler (ShardInformer
	// only); client-go always gets AddEventHandler.
	Workers int
}

// Start builds the informer, registers the handlers, runs it and waits until
// it has synced and every handler has seen every initial add.
func (e *Env) Start(regs ...Registration) error {
	if e.informer != nil {
		return errors.New("bench: Start called twice")
	}
	idx := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	lw := cache.ListerWatcher(e.lw)
	switch e.cfg.Impl {
	case ClientGo:
		e.informer = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, idx)
	case ShardInformer:
		inf, err := pipeline.New(lw, &corev1.Pod{}, 0, idx, e.cfg.Options...)
		if err != nil {
			return err
		}
		e.informer = inf
	}
	for _, r := range regs {
		r.Handler.expectAdds(int64(e.cfg.Objects))
		var err error
		if inf, ok := e.informer.(*pipeline.Informer); ok && r.Workers > 1 {
			_, err = inf.AddParallelEventHandler(r.Handler, r.Workers)
		} else {
			_, err = e.informer.AddEventHandler(r.Handler)
		}
		if err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() { // informer goroutine
		defer close(e.done)
		e.informer.RunWithContext(ctx)
	}()
	for _, r := range regs {
		if err := r.Handler.waitAdds(handlerTimeout); err != nil {
			return err
		}
	}
	// Not cache.WaitForCacheSync: it polls every 100 ms, which would quantize
	// the initial-sync times.
	if err := waitSynced(e.informer); err != nil {
		return err
	}
	// After a LIST, the reflector may not have opened its watch yet when the
	// informer reports synced; a write before that would be gone from the fake
	// API's one-event history, and the watch would get 410 and relist.
	return waitFor(func() bool { return e.lw.watches.Load() > 0 })
}

// Indexer returns the running informer's indexer.
func (e *Env) Indexer() cache.Indexer { return e.informer.GetIndexer() }

// Stop stops the informer and waits until Run has returned.
func (e *Env) Stop() {
	if e.informer == nil {
		return
	}
	e.cancel()
	<-e.done
	e.informer = nil
}

// CheckWatch reports an error if the informer listed or watched more often
// than one sync needs: a dropped watch or a relist invalidates a run.
func (e *Env) CheckWatch() error {
	lists, watches := e.lw.lists.Load(), e.lw.watches.Load()
	wantLists := int64(1)
	if e.cfg.WatchList && clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		wantLists = 0 // else the reflector lists, whatever the fake API supports
	}
	if lists > wantLists || watches > 1 {
		return fmt.Errorf("bench: watch dropped or relisted (%d lists, %d watches; want %d and 1): results are invalid", lists, watches, wantLists)
	}
	return nil
}

// resetWatchCounts restarts the counts CheckWatch looks at (for a new informer).
func (e *Env) resetWatchCounts() {
	e.lw.lists.Store(0)
	e.lw.watches.Store(0)
}

// update is one pre-built update event: a new version of a pod and its key.
type update struct {
	key string // pod's "ns/name", shared with podSet.keys
	pod *corev1.Pod
}

// updates returns n new versions of pods, starting at the env's cursor and
// wrapping around: shallow copies of the built pods (they share maps and
// slices, which nobody writes) with Generation numbering the event (1, 2, ...
// across the env's life). The fake API sets each copy's resourceVersion.
func (e *Env) updates(n int) []update {
	out := make([]update, n)
	for i := range out {
		out[i] = e.updateAt(i)
	}
	return out
}

// updateAt returns the i-th update of a batch that starts at the cursor.
func (e *Env) updateAt(i int) update {
	j := (e.cursor + i) % len(e.set.pods)
	p := new(corev1.Pod)
	*p = *e.set.pods[j]
	p.ResourceVersion = ""
	p.Generation = e.nextGen + int64(i) + 1
	return update{key: e.set.keys[j], pod: p}
}

// batch describes the update events of one timed run.
type batch struct {
	n        int
	firstGen int64 // Generation of the first event
	// Events with Generation >= finalGen are the last event of their key in
	// the batch: once a handler has seen all of them it has seen (or, under
	// Coalesce, been brought up to) every change.
	finalGen int64
	finals   int64
}

// newBatch reserves n update events and advances the cursor past them.
func (e *Env) newBatch(n int) batch {
	keys := min(n, len(e.set.pods))
	b := batch{n: n, firstGen: e.nextGen + 1, finals: int64(keys)}
	b.finalGen = b.firstGen + int64(n-keys)
	return b
}

// commit advances the env past a batch whose objects were built.
func (e *Env) commit(b batch) {
	e.nextGen += int64(b.n)
	e.cursor = (e.cursor + b.n) % len(e.set.pods)
}

// heapInUse returns the live heap after two full collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// mallocs returns the number of heap allocations so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

var podAlloc = sync.OnceValue(func() int64 {
	// The heap bytes one individually allocated corev1.Pod struct takes
	// (its size class), as client-go's ExtractListWithAlloc allocates them.
	const n = 1024
	keep := make([]*corev1.Pod, n)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range keep {
		keep[i] = new(corev1.Pod)
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return int64(after.TotalAlloc-before.TotalAlloc) / n
})

// countingLW wraps the fake API's ListerWatcher, counts lists and watches,
// passes watch events through its gate, and states whether WatchList is
// supported.
type countingLW struct {
	inner          cache.ListerWatcherWithContext
	noWatchList    bool
	gate           *gate
	lists, watches atomic.Int64
}

var _ cache.ListerWatcherWithContext = (*countingLW)(nil)

func (l *countingLW) List(o metav1.ListOptions) (k8sruntime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}

func (l *countingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
	l.lists.Add(1)
	return l.inner.ListWithContext(ctx, o)
}

func (l *countingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

func (l *countingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := l.inner.WatchWithContext(ctx, o)
	l.watches.Add(1) // after the call: from here on, the watch receives every write
	if err != nil {
		return nil, err
	}
	return newGatedWatch(w, l.gate), nil
}

// IsWatchListSemanticsUnSupported tells client-go's reflector whether to use
// WatchList.
func (l *countingLW) IsWatchListSemanticsUnSupported() bool { return l.noWatchList }
