package rangelw

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/klog/v2"

	"github.com/shardinformer/shardinformer/shardselector"
)

// Mode says what the wrapper has learnt about the server.
type Mode int32

const (
	// Unknown: no evidence yet.
	Unknown Mode = iota
	// Server: a list echoed the selector in metadata.shardInfo and no
	// object outside the ranges has arrived.
	Server
	// Client: an object outside the ranges arrived: the server ignored
	// the selector, and the wrapper filters alone.
	Client
)

func (m Mode) String() string {
	switch m {
	case Server:
		return "server"
	case Client:
		return "client"
	}
	return "unknown"
}

// Hooks observe the filtering. Nil hooks are skipped. See the package
// documentation for the goroutines calling them; they must not block.
type Hooks struct {
	// Fallback is called once, when Mode becomes Client.
	Fallback func()
	// Dropped is called with the number of objects of one list or of one
	// watch event filtered out on the client (n > 0).
	Dropped func(n int)
}

// Config configures a ListerWatcher.
type Config struct {
	// Inner lists and watches the whole resource and passes ListOptions
	// through to the server, ShardSelector included (client-go's
	// ListWatch built from a client does). Required.
	Inner cache.ListerWatcher
	// Selector holds the ranges to keep. Required: at least one range,
	// Field FieldUID or FieldNamespace.
	Selector shardselector.Selector
	// Logger receives the fallback line. Default klog.Background().
	Logger *klog.Logger
	// Hooks, optional.
	Hooks Hooks
}

// ErrConfig is matched by every error of New.
var ErrConfig = errors.New("rangelw: invalid config")

// ListerWatcher lists and watches the objects of Inner whose hash lies in
// Selector's ranges. It implements cache.ListerWatcherWithContext (and so
// cache.ListerWatcher). Safe for concurrent use; must not be copied.
type ListerWatcher struct {
	inner    cache.ListerWatcherWithContext
	client   any // Inner as given, for its WatchList capability
	sel      shardselector.Selector
	selector string // sel.String(), sent in every request
	field    func(metav1.Object) string
	logger   klog.Logger
	hooks    Hooks

	mode     atomic.Int32 // a Mode
	fallback sync.Once
}

var _ cache.ListerWatcherWithContext = (*ListerWatcher)(nil)

// New validates cfg and returns the wrapper. It starts nothing.
func New(cfg Config) (*ListerWatcher, error) {
	if cfg.Inner == nil {
		return nil, fmt.Errorf("%w: Inner is nil", ErrConfig)
	}
	if len(cfg.Selector.Ranges) == 0 {
		return nil, fmt.Errorf("%w: Selector has no ranges", ErrConfig)
	}
	lw := &ListerWatcher{
		inner: cache.ToListerWatcherWithContext(cfg.Inner), client: cfg.Inner,
		sel: cfg.Selector, selector: cfg.Selector.String(), hooks: cfg.Hooks, logger: klog.Background(),
	}
	switch cfg.Selector.Field {
	case shardselector.FieldUID:
		lw.field = func(o metav1.Object) string { return string(o.GetUID()) }
	case shardselector.FieldNamespace:
		lw.field = metav1.Object.GetNamespace
	default:
		return nil, fmt.Errorf("%w: Selector field %q", ErrConfig, cfg.Selector.Field)
	}
	for _, r := range cfg.Selector.Ranges {
		if r.Start > r.Last {
			return nil, fmt.Errorf("%w: range %#x..%#x is empty", ErrConfig, r.Start, r.Last)
		}
	}
	if cfg.Logger != nil {
		lw.logger = *cfg.Logger
	}
	return lw, nil
}

// Mode returns what the wrapper has learnt about the server so far.
func (lw *ListerWatcher) Mode() Mode { return Mode(lw.mode.Load()) }

// Selector returns the ranges kept.
func (lw *ListerWatcher) Selector() shardselector.Selector { return lw.sel }

// IsWatchListSemanticsUnSupported passes Inner's answer on to the
// reflector (false when Inner does not say).
func (lw *ListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(lw.client)
}

// toClient switches to Client mode, once.
func (lw *ListerWatcher) toClient(reason string) {
	lw.fallback.Do(func() {
		lw.mode.Store(int32(Client))
		lw.logger.Info("shardSelector not applied by the server; filtering client-side", "reason", reason, "selector", lw.selector)
		if lw.hooks.Fallback != nil {
			lw.hooks.Fallback()
		}
	})
}

func (lw *ListerWatcher) dropped(n int, reason string) {
	if n == 0 {
		return
	}
	lw.toClient(reason)
	if lw.hooks.Dropped != nil {
		lw.hooks.Dropped(n)
	}
}

// keep reports whether obj lies in the ranges.
func (lw *ListerWatcher) keep(obj runtime.Object) (bool, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, fmt.Errorf("rangelw: %T has no object metadata: %w", obj, err)
	}
	return lw.sel.Matches(lw.field(m)), nil
}

// List implements cache.Lister.
func (lw *ListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// ListWithContext lists Inner with the selector and drops the items
// outside the ranges. An item without object metadata fails the list.
func (lw *ListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	options.ShardSelector = lw.selector
	list, err := lw.inner.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	// A missing shardInfo proves nothing: metadata and custom resource
	// lists never carry it. Only an object outside the ranges does.
	if sl, ok := list.(metav1.ShardedListInterface); ok && sl.GetShardInfo() != nil {
		lw.mode.CompareAndSwap(int32(Unknown), int32(Server))
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("rangelw: %w", err)
	}
	var kept []runtime.Object // set at the first item dropped
	filtered := false
	for i, it := range items {
		ok, err := lw.keep(it)
		switch {
		case err != nil:
			return nil, err
		case !ok && !filtered:
			filtered = true
			kept = append(make([]runtime.Object, 0, len(items)), items[:i]...)
		case ok && filtered:
			kept = append(kept, it)
		}
	}
	if !filtered {
		return list, nil
	}
	lw.dropped(len(items)-len(kept), "listed object outside the ranges")
	if err := meta.SetList(list, kept); err != nil {
		return nil, fmt.Errorf("rangelw: %w", err)
	}
	return list, nil
}

// Watch implements cache.Watcher.
func (lw *ListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// WatchWithContext watches Inner with the selector and drops the events
// of objects outside the ranges. An Added, Modified or Deleted event
// whose object has no object metadata is turned into an Error event.
func (lw *ListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	options.ShardSelector = lw.selector
	w, err := lw.inner.WatchWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	fw := &filterWatch{lw: lw, inner: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go fw.loop() // the filter goroutine; exits when w ends or on Stop
	return fw, nil
}

// filterWatch is the watch returned by WatchWithContext.
type filterWatch struct {
	lw       *ListerWatcher
	inner    watch.Interface
	out      chan watch.Event // closed by loop when it exits
	stop     chan struct{}    // closed by Stop
	stopOnce sync.Once
}

func (fw *filterWatch) ResultChan() <-chan watch.Event { return fw.out }

// Stop stops the inner watch and the filter goroutine; safe to call more
// than once and concurrently.
func (fw *filterWatch) Stop() {
	fw.stopOnce.Do(func() {
		close(fw.stop)
		fw.inner.Stop()
	})
}

// loop runs on the filter goroutine.
func (fw *filterWatch) loop() {
	defer close(fw.out)
	in := fw.inner.ResultChan()
	for {
		var e watch.Event
		var ok bool
		select {
		case e, ok = <-in:
			if !ok {
				return
			}
		case <-fw.stop:
			return
		}
		switch e.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			keep, err := fw.lw.keep(e.Object)
			if err != nil {
				e = watch.Event{Type: watch.Error, Object: &metav1.Status{
					Status: metav1.StatusFailure, Message: err.Error(), Reason: metav1.StatusReasonInternalError,
				}}
			} else if !keep {
				fw.lw.dropped(1, "watch event of an object outside the ranges")
				continue
			}
		}
		select {
		case fw.out <- e:
		case <-fw.stop:
			return
		}
	}
}
