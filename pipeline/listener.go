package pipeline

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardinformer/shardinformer/internal/doorbell"
	"github.com/shardinformer/shardinformer/shards"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// listener is one registered handler: its workers, resync state and
// HasSynced tracking. It is the cache.ResourceEventHandlerRegistration
// returned to the caller.
type listener struct {
	inf     *Informer
	name    string
	handler cache.ResourceEventHandler
	logger  klog.Logger
	workers []*worker
	backlog backlog // overflow kept exactly, against the policy's budget

	// Resync: requestedResync is fixed; resyncPeriod and nextResync are
	// guarded by inf.mu; syncing is read by drain goroutines.
	requestedResync time.Duration
	resyncPeriod    time.Duration
	nextResync      time.Time
	syncing         atomic.Bool

	// HasSynced: true once the informer has synced, every shard has sent a
	// late listener the cache contents, and every initial-list add has been
	// handled.
	outstanding  atomic.Int64 // initial-list adds queued but not handled
	joinsPending atomic.Int32 // shards yet to send the cache contents
	synced       chan struct{}
	syncOnce     sync.Once

	ctx     context.Context // cancelled on removal or informer stop
	cancel  context.CancelFunc
	removed atomic.Bool   // set before ctx is cancelled: no call starts after it
	done    chan struct{} // closed when every worker has exited
	wg      sync.WaitGroup
	stopped sync.Once
}

var _ cache.ResourceEventHandlerRegistration = (*listener)(nil)

// worker is one goroutine calling the handler. A listener added through the
// client-go methods has one; a parallel listener has several, each owning the
// keys that hash to it, so calls for one key never overlap and stay in order.
type worker struct {
	l       *listener
	outlets []*outlet          // by shard
	bell    *doorbell.Doorbell // rung by drain goroutines after they flush one of the outlets
}

func newListener(inf *Informer, id uint64, h cache.ResourceEventHandler, workers int, resync time.Duration, logger klog.Logger) (*listener, error) {
	name, h := handlerName(h, id)
	l := &listener{
		inf:             inf,
		name:            name,
		handler:         h,
		logger:          logger,
		requestedResync: resync,
		synced:          make(chan struct{}),
		done:            make(chan struct{}),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.backlog = backlog{budget: inf.cfg.budget(), name: l.name, observer: inf.cfg.observer, logger: logger, loud: inf.cfg.policy == Buffer}
	// Like client-go, a listener counts as resyncing until the first resync
	// check: without a resync period, relisted objects whose resourceVersion
	// did not change still reach every handler as updates.
	l.syncing.Store(true)
	for range workers {
		w := &worker{l: l, bell: doorbell.New()}
		for range inf.cfg.shards {
			o, err := newOutlet(w, inf.cfg.ringCapacity, inf.cfg.policy == Block, &l.backlog)
			if err != nil {
				return nil, err
			}
			w.outlets = append(w.outlets, o)
		}
		l.workers = append(l.workers, w)
	}
	return l, nil
}

// start launches the worker goroutines ("listener worker" goroutines); they
// exit when l.ctx is cancelled. They are also counted in the informer's
// goroutines, so that RunWithContext waits for them even when the listener
// was removed earlier and a handler call is still under way.
// REQUIRES: inf.mu held, the informer not stopped.
func (l *listener) start() {
	for _, w := range l.workers {
		l.wg.Go(w.run)
	}
	l.inf.goroutines.Go(func() { // closes done once every worker has exited
		l.wg.Wait()
		close(l.done)
	})
}

// stop cancels the workers; started reports whether start was called.
func (l *listener) stop(started bool) {
	l.stopped.Do(func() {
		l.removed.Store(true)
		l.cancel()
		if !started {
			close(l.done)
		}
	})
}

// HasSynced implements cache.ResourceEventHandlerRegistration.
func (l *listener) HasSynced() bool {
	select {
	case <-l.synced:
		return true
	default:
		return false
	}
}

// HasSyncedChecker implements cache.ResourceEventHandlerRegistration.
func (l *listener) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: l.inf.name + " + event handler " + l.name, done: l.synced}
}

// ShutdownChan is closed once the listener's workers have exited after
// removal; cache.ShutDownEventHandler waits on it.
func (l *listener) ShutdownChan() <-chan struct{} { return l.done }

// checkSynced closes l.synced once every condition holds. Each condition's
// writer updates its atomic first and then calls checkSynced, so the last one
// to change sees them all.
func (l *listener) checkSynced() {
	if l.inf.HasSynced() && l.joinsPending.Load() == 0 && l.outstanding.Load() == 0 {
		l.syncOnce.Do(func() { close(l.synced) })
	}
}

func (l *listener) addOutstanding(delta int64) {
	if delta != 0 && l.outstanding.Add(delta) == 0 {
		l.checkSynced()
	}
}

func (l *listener) workerFor(key string) int {
	if len(l.workers) == 1 {
		return 0
	}
	return int(shards.Hash(key) % uint64(len(l.workers)))
}

// maxKeptBuffer bounds the batch buffer a worker keeps between drains, so one
// large overflow drain does not pin its memory.
const maxKeptBuffer = 8192

// run is a listener worker goroutine: it drains its outlets, calls the
// handler, and parks on its bell when every outlet is empty.
func (w *worker) run() {
	buf := make([]notification, 0, 128)
	timed := w.l.inf.timed
	for {
		progress := false
		for _, o := range w.outlets {
			batch := o.take(buf)
			if len(batch) == 0 {
				continue
			}
			progress = true
			if cap(batch) <= maxKeptBuffer {
				buf = batch[:0] // keep a buffer grown by an overflow drain
			}
			initial := int64(0)
			for i := range batch {
				if w.l.removed.Load() {
					return // RemoveEventHandler has returned: deliver nothing more
				}
				n := &batch[i]
				var start time.Time
				if timed {
					start = time.Now()
				}
				w.l.deliver(n)
				if timed {
					w.l.inf.cfg.observer.HandlerDone(w.l.name, n.kind, time.Since(start))
				}
				initial += int64(initialOf(*n))
			}
			w.l.addOutstanding(-initial)
			clear(batch) // let the GC have the objects
		}
		if w.l.removed.Load() {
			return
		}
		if progress {
			continue
		}
		// Park until a drain goroutine flushes one of the outlets: a flush
		// publishes the ring's tail (or the overflow flag) and then rings, so
		// ready, which loads them, sees it (package doorbell).
		if !w.bell.Wait(w.l.ctx, w.ready) {
			return
		}
	}
}

func (w *worker) ready() bool {
	for _, o := range w.outlets {
		if o.ready() {
			return true
		}
	}
	return false
}

// wake rings the worker's bell and reports whether the worker was parked; it
// costs one atomic load unless the worker is parked. Any goroutine, after
// publishing to one of the worker's outlets.
func (w *worker) wake() bool { return w.bell.Ring() }

// deliver calls the handler for one notification. A panic is recovered,
// logged with the key and counted, unless WithCrashOnPanic is set.
func (l *listener) deliver(n *notification) {
	if !l.inf.cfg.crashOnPanic {
		defer func() {
			if r := recover(); r != nil {
				l.logger.Error(fmt.Errorf("panic: %v", r), "Event handler panicked; the notification was skipped",
					"handler", l.name, "key", n.key, "event", n.kind.String(), "stack", string(debug.Stack()))
				l.inf.cfg.observer.HandlerPanicked(l.name, n.key, r)
			}
		}()
	}
	n.dispatch(l.handler)
}

// doneChecker implements cache.DoneChecker over a channel.
type doneChecker struct {
	name string
	done <-chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }
