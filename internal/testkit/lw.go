package testkit

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// LW wraps a cache.ListerWatcher for tests: it counts what the reflector
// asks for and the 410 answers it gets, can fail the next watch requests,
// rewrite list results, and cut the informer off the server. It supports
// WatchList exactly when the wrapped ListerWatcher does (it answers
// IsWatchListSemanticsUnSupported as that one does, false if it does not
// say). Each watch it returns has a forwarding goroutine, which exits when
// the watch is stopped or the wrapped one ends. Safe for concurrent use.
type LW struct {
	inner       cache.ListerWatcherWithContext
	unsupported bool

	lists, watches, watchLists, gone atomic.Int64

	mu struct {
		sync.Mutex
		gate    chan struct{} // non-nil while disconnected; closed by Reconnect
		active  map[*tappedWatch]struct{}
		failErr error
		failN   int
		rewrite func(runtime.Object) runtime.Object
	}
}

var (
	_ cache.ListerWatcher            = (*LW)(nil)
	_ cache.ListerWatcherWithContext = (*LW)(nil)
)

// NewLW wraps inner.
func NewLW(inner cache.ListerWatcher) *LW {
	l := &LW{inner: cache.ToListerWatcherWithContext(inner)}
	if u, ok := inner.(interface{ IsWatchListSemanticsUnSupported() bool }); ok {
		l.unsupported = u.IsWatchListSemanticsUnSupported()
	}
	l.mu.active = map[*tappedWatch]struct{}{}
	return l
}

// IsWatchListSemanticsUnSupported tells client-go's reflector whether the
// wrapped ListerWatcher supports WatchList.
func (l *LW) IsWatchListSemanticsUnSupported() bool { return l.unsupported }

// Lists returns the number of LIST requests.
func (l *LW) Lists() int64 { return l.lists.Load() }

// Watches returns the number of WATCH requests, WatchList streams included.
func (l *LW) Watches() int64 { return l.watches.Load() }

// WatchLists returns the number of WATCH requests with sendInitialEvents.
func (l *LW) WatchLists() int64 { return l.watchLists.Load() }

// Gone returns the number of 410 answers: errors of LIST and WATCH, and
// ERROR events with a 410 Status.
func (l *LW) Gone() int64 { return l.gone.Load() }

// FailWatches makes the next n WATCH requests fail with err.
func (l *LW) FailWatches(err error, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.failErr, l.mu.failN = err, n
}

// RewriteLists makes every later LIST return fn(the list) (nil: as is).
func (l *LW) RewriteLists(fn func(runtime.Object) runtime.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.rewrite = fn
}

// Disconnect stops every open watch and holds new requests until Reconnect
// (or their context ends).
func (l *LW) Disconnect() {
	l.mu.Lock()
	if l.mu.gate == nil {
		l.mu.gate = make(chan struct{})
	}
	open := make([]*tappedWatch, 0, len(l.mu.active))
	for w := range l.mu.active {
		open = append(open, w)
	}
	l.mu.Unlock()
	for _, w := range open {
		w.Stop()
	}
}

// Reconnect releases the requests Disconnect holds.
func (l *LW) Reconnect() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.gate != nil {
		close(l.mu.gate)
		l.mu.gate = nil
	}
}

func (l *LW) connected(ctx context.Context) error {
	l.mu.Lock()
	gate := l.mu.gate
	l.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *LW) countGone(err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		l.gone.Add(1)
	}
}

// List implements cache.Lister.
func (l *LW) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

// Watch implements cache.Watcher.
func (l *LW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// ListWithContext implements cache.ListerWithContext.
func (l *LW) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := l.connected(ctx); err != nil {
		return nil, err
	}
	l.lists.Add(1)
	obj, err := l.inner.ListWithContext(ctx, opts)
	l.countGone(err)
	l.mu.Lock()
	rewrite := l.mu.rewrite
	l.mu.Unlock()
	if err == nil && rewrite != nil {
		obj = rewrite(obj)
	}
	return obj, err
}

// WatchWithContext implements cache.WatcherWithContext.
func (l *LW) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := l.connected(ctx); err != nil {
		return nil, err
	}
	l.watches.Add(1)
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		l.watchLists.Add(1)
	}
	l.mu.Lock()
	if l.mu.failN > 0 {
		l.mu.failN--
		err := l.mu.failErr
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()
	w, err := l.inner.WatchWithContext(ctx, opts)
	if err != nil {
		l.countGone(err)
		return nil, err
	}
	tw := &tappedWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{}), lw: l}
	l.mu.Lock()
	l.mu.active[tw] = struct{}{}
	l.mu.Unlock()
	go tw.forward() // goroutine: the watch's forwarder; exits on Stop or when w ends.
	return tw, nil
}

// tappedWatch forwards a watch, counting 410 ERROR events; it never blocks
// on a consumer that has stopped it.
type tappedWatch struct {
	in   watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	lw   *LW
}

func (w *tappedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *tappedWatch) Stop() {
	w.once.Do(func() {
		w.lw.mu.Lock()
		delete(w.lw.mu.active, w)
		w.lw.mu.Unlock()
		close(w.stop)
		w.in.Stop()
	})
}

func (w *tappedWatch) forward() {
	defer close(w.out)
	for {
		select {
		case ev, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			if st, ok := ev.Object.(*metav1.Status); ok && ev.Type == watch.Error && st.Code == http.StatusGone {
				w.lw.gone.Add(1)
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		case <-w.stop:
			return
		}
	}
}
