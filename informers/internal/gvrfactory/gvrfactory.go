// Package gvrfactory keeps shardinformer informers per
// GroupVersionResource with the lifecycle of client-go's dynamic and
// metadata informer factories (Start, WaitForCacheSync, Shutdown). The
// packages informers/dynamicinformer and informers/metadatainformer are
// this factory with their list/watch, example object and lister.
//
// Source chooses their list/watch: package wire on the REST client under
// the user's client (with wire.WithDiet, then the user's wire options,
// then the tweak function), or the client's own List and Watch for
// WithoutWire and for a client without a REST client (client-go's fakes),
// wrapped by restclient.Fallback so that pipeline's Stats().ListerWatcher
// says which and why; falling back for lack of a REST client is logged
// once per factory at klog V(2). Wire options are checked when the factory
// is built, used or not.
//
// # Goroutines
//
// The constructor starts nothing. StartWithContext starts one goroutine
// per informer not yet started, running its RunWithContext, which returns
// only after every goroutine the informer started has exited; Shutdown
// waits for all of them. Every method is safe for concurrent use; the lock
// guards the informer map, the started set and shuttingDown only, never a
// call into an informer other than construction.
package gvrfactory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardinformer/shardinformer/pipeline"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// ErrInvalidResource is wrapped by the panic of ForResource for a resource
// without version or resource name.
var ErrInvalidResource = errors.New("informers: invalid resource")

// Config is a factory's options; the zero value of each is client-go's
// default.
type Config struct {
	// Kind names the factory in its informers' names ("dynamic",
	// "metadata"), so a dynamic and a metadata informer of one resource
	// have distinct metric labels.
	Kind string
	// Resync is every informer's default event handler resync period.
	Resync time.Duration
	// Transform is set on every informer before it starts.
	Transform cache.TransformFunc
	// Pipeline are passed to every informer, after its name.
	Pipeline []pipeline.Option
	// NewObject returns the informers' example object.
	NewObject func() runtime.Object
	// ListerWatcher returns the list/watch of gvr (with the factory's
	// namespace and tweak function applied).
	ListerWatcher func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error)
	// Lister returns the generic lister of gvr over an informer's indexer.
	Lister func(cache.Indexer, schema.GroupVersionResource) cache.GenericLister
}

// Factory is a set of shardinformer informers, one per resource. It must
// not be copied.
type Factory struct {
	cfg Config
	wg  sync.WaitGroup // one per goroutine started by StartWithContext
	mu  struct {
		sync.Mutex
		informers    map[schema.GroupVersionResource]informers.GenericInformer
		started      map[schema.GroupVersionResource]bool
		shuttingDown bool
	}
}

// New returns a Factory for cfg. It fails on invalid pipeline options, so
// that ForResource never does for them.
func New(cfg Config) (*Factory, error) {
	if _, err := pipeline.New(&cache.ListWatch{}, cfg.NewObject(), 0, nil, cfg.Pipeline...); err != nil {
		return nil, err
	}
	f := &Factory{cfg: cfg}
	f.mu.informers = map[schema.GroupVersionResource]informers.GenericInformer{}
	f.mu.started = map[schema.GroupVersionResource]bool{}
	return f, nil
}

// ForResource returns the informer of gvr, building it on first use (named
// "<kind> <resource>.<group>", e.g. "dynamic widgets.example.com"). It
// panics with an error wrapping ErrInvalidResource if gvr has no version
// or resource, or if the list/watch cannot be built for it: client-go's
// signature leaves no error to return, and such a resource never lists.
func (f *Factory) ForResource(gvr schema.GroupVersionResource) informers.GenericInformer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gi, ok := f.mu.informers[gvr]; ok {
		return gi
	}
	if gvr.Version == "" || gvr.Resource == "" {
		panic(fmt.Errorf("%w: %v has no version or resource", ErrInvalidResource, gvr))
	}
	lw, err := f.cfg.ListerWatcher(gvr)
	if err != nil {
		panic(fmt.Errorf("%w: %v: %w", ErrInvalidResource, gvr, err))
	}
	opts := append([]pipeline.Option{pipeline.WithName(f.cfg.Kind + " " + gvr.GroupResource().String())}, f.cfg.Pipeline...)
	inf, err := pipeline.New(lw, f.cfg.NewObject(), f.cfg.Resync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, opts...)
	if err != nil { // New checked the options
		panic(fmt.Errorf("informers: %v: %w", gvr, err))
	}
	if f.cfg.Transform != nil {
		if err := inf.SetTransform(f.cfg.Transform); err != nil { // not started: cannot fail
			panic(fmt.Errorf("informers: %v: %w", gvr, err))
		}
	}
	gi := genericInformer{inf: inf, lister: f.cfg.Lister(inf.GetIndexer(), gvr)}
	f.mu.informers[gvr] = gi
	return gi
}

type genericInformer struct {
	inf    *pipeline.Informer
	lister cache.GenericLister
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.inf }
func (g genericInformer) Lister() cache.GenericLister         { return g.lister }

// Start is StartWithContext with a context cancelled when stopCh closes.
func (f *Factory) Start(stopCh <-chan struct{}) { f.StartWithContext(wait.ContextForChannel(stopCh)) }

// StartWithContext starts the informers built so far and not yet started,
// each running until ctx is cancelled; after Shutdown it does nothing.
func (f *Factory) StartWithContext(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.shuttingDown {
		return
	}
	for gvr, gi := range f.mu.informers {
		if f.mu.started[gvr] {
			continue
		}
		f.mu.started[gvr] = true
		f.wg.Add(1)
		go func() { // goroutine: runs one informer; joined by Shutdown.
			defer f.wg.Done()
			gi.Informer().RunWithContext(ctx)
		}()
	}
}

// WaitForCacheSync waits until every started informer has synced or stopCh
// closes, and reports which synced.
func (f *Factory) WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool {
	f.mu.Lock()
	started := map[schema.GroupVersionResource]cache.SharedIndexInformer{}
	for gvr, gi := range f.mu.informers {
		if f.mu.started[gvr] {
			started[gvr] = gi.Informer()
		}
	}
	f.mu.Unlock()
	res := make(map[schema.GroupVersionResource]bool, len(started))
	for gvr, inf := range started {
		res[gvr] = cache.WaitForCacheSync(stopCh, inf.HasSynced)
	}
	return res
}

// Shutdown makes later Starts do nothing and waits until every informer
// started has returned (their contexts must be cancelled, before or while
// it waits). It may be called several times, concurrently too.
func (f *Factory) Shutdown() {
	f.mu.Lock()
	f.mu.shuttingDown = true
	f.mu.Unlock()
	f.wg.Wait()
}
