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

	ctx    context.Context // cancelled on removal or informer stop
	cancel context.CancelFunc
	// pushCtx ends the drain roles' waits for ring space (Block): cancelled
	// on removal, and as soon as the informer's context is done, before the
	// workers stop (RunWithContext).
	pushCtx    context.Context
	cancelPush context.CancelFunc
	removed    atomic.Bool   // set before ctx is cancelled: no call starts after it
	done       chan struct{} // closed when every worker has exited
	wg         sync.WaitGroup
	stopped    sync.Once
}

var _ cache.ResourceEventHandlerRegistration = (*listener)(nil)

// worker is one goroutine calling the handler. A listener added through the
// client-go methods has one; a parallel listener has several, each owning the
// keys that hash to it, so calls for one key never overlap and stay in order.
//
// Delivery is gated on the store watermark (watermark.go): a notification
// goes to the handler only once the watermark has reached its position, that
// is once the cache holds every write the stream made up to it. A worker
// that meets a notification beyond the watermark keeps the rest of that
// outlet's batch (held) and goes on with its other outlets, so one lagging
// shard never holds up notifications the watermark already covers; with
// nothing left to deliver it parks, registered with the watermark, until the
// position reaches the oldest held notification's (need) or an outlet
// without held notifications gets new ones. Per outlet, and so per key,
// order is kept.
type worker struct {
	l       *listener
	outlets []*outlet          // by shard
	bell    *doorbell.Doorbell // rung by drain goroutines after they flush one of the outlets, and by the watermark
	need    atomic.Uint64      // while registered with the watermark: the position the worker waits for

	// Worker goroutine only.
	held  []held         // by outlet: notifications taken but not yet covered by the watermark
	spare []notification // a buffer to take into, when the last one is held
	seen  uint64         // the watermark as last loaded
	gated bool           // registered with the watermark
}

// held is the part of an outlet's batch that a worker has taken from the
// outlet but not yet delivered: buf[at:].
type held struct {
	buf []notification
	at  int
}

func (h *held) pending() bool { return h.at < len(h.buf) }

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
	l.pushCtx, l.cancelPush = context.WithCancel(context.Background())
	l.backlog = backlog{budget: inf.cfg.budget(), name: l.name, observer: inf.cfg.observer, logger: logger, loud: inf.cfg.policy == Buffer}
	// Like client-go, a listener counts as resyncing until the first resync
	// check: without a resync period, relisted objects whose resourceVersion
	// did not change still reach every handler as updates.
	l.syncing.Store(true)
	for range workers {
		w := &worker{l: l, bell: doorbell.New(), held: make([]held, inf.cfg.shards)}
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

// releaseProducers makes every wait for ring space of this listener give up
// (the notification is dropped): the informer is stopping.
func (l *listener) releaseProducers() { l.cancelPush() }

// stop cancels the workers; started reports whether start was called.
func (l *listener) stop(started bool) {
	l.stopped.Do(func() {
		l.removed.Store(true)
		l.cancelPush()
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
// handler, and parks on its bell when every outlet is empty or held back by
// the watermark.
func (w *worker) run() {
	defer func() {
		if w.gated {
			w.l.inf.wm.unwait(w)
		}
	}()
	for {
		progress, holding := false, false
		for i, o := range w.outlets {
			h := &w.held[i]
			if !h.pending() {
				buf := w.buffer()
				batch := o.take(buf)
				if len(batch) == 0 || !sameArray(batch, buf) {
					w.recycle(buf) // not used, or an overflow chunk came instead
				}
				if len(batch) == 0 {
					continue
				}
				h.buf, h.at = batch, 0
			}
			n, ok := w.deliver(h)
			if !ok {
				return // RemoveEventHandler has returned: deliver nothing more
			}
			progress = progress || n > 0
			if h.pending() {
				holding = true
				continue
			}
			w.recycle(h.buf)
			h.buf, h.at = nil, 0
		}
		if w.l.removed.Load() {
			return
		}
		if progress {
			continue
		}
		if holding {
			if w.help() {
				continue
			}
			w.gate()
		} else if w.gated {
			w.gated = false
			w.l.inf.wm.unwait(w)
		}
		// Park until a drain goroutine flushes one of the outlets (a flush
		// publishes the ring's tail, or the overflow flag, and then rings) or
		// the watermark covers a held notification (whoever advances it rings
		// after storing; see watermark.advanced): ready, which loads them,
		// sees either (package doorbell).
		if !w.bell.Wait(w.l.ctx, w.ready) {
			return
		}
	}
}

// deliver calls the handler for h's notifications that the watermark covers,
// in order, and reports how many it delivered; false if the listener was
// removed meanwhile.
func (w *worker) deliver(h *held) (int, bool) {
	timed := w.l.inf.timed
	initial := int64(0)
	start := h.at
	defer func() { w.l.addOutstanding(-initial) }()
	for ; h.at < len(h.buf); h.at++ {
		if w.l.removed.Load() {
			return h.at - start, false
		}
		n := &h.buf[h.at]
		if n.pos > w.seen {
			if w.seen = w.l.inf.wm.reach(n.pos); n.pos > w.seen {
				break
			}
		}
		var t0 time.Time
		if timed {
			t0 = time.Now()
		}
		w.l.deliver(n)
		if timed {
			w.l.inf.cfg.observer.HandlerDone(w.l.name, n.kind, time.Since(t0))
		}
		initial += int64(initialOf(*n))
	}
	return h.at - start, true
}

// buffer returns a buffer to take a batch into: the spare one, or a new one.
func (w *worker) buffer() []notification {
	if b := w.spare; b != nil {
		w.spare = nil
		return b
	}
	return make([]notification, 0, 128)
}

// recycle keeps b, whose notifications have all been delivered, as the spare
// buffer, unless it is larger than maxKeptBuffer (so one large overflow
// drain does not pin its memory) or smaller than the spare already kept.
func (w *worker) recycle(b []notification) {
	clear(b) // let the GC have the objects
	if cap(b) > 0 && cap(b) <= maxKeptBuffer && cap(b) > cap(w.spare) {
		w.spare = b[:0]
	}
}

// sameArray reports whether a and b start at the same element.
func sameArray(a, b []notification) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// needed returns the oldest position the worker's held notifications need.
func (w *worker) needed() uint64 {
	need := uint64(noPosition)
	for i := range w.held {
		if h := &w.held[i]; h.pending() {
			need = min(need, h.buf[h.at].pos)
		}
	}
	return need
}

// help takes the drain role of every shard that holds the watermark below
// what the worker needs and whose role is free, and applies a batch of it
// there and then, as the reflector does for an idle shard (shard.wrote): the
// shard's drain goroutine has been rung but not run yet, and on a busy
// machine a woken goroutine waits behind whatever else is runnable (cache
// readers, for whole time slices), so the worker would wait twice, for that
// goroutine and then to be run again itself. It reports whether it applied
// anything. Not under Block, where a drain role may wait for ring space,
// possibly in this worker's own rings.
func (w *worker) help() bool {
	inf := w.l.inf
	if inf.cfg.policy == Block {
		return false
	}
	need, helped := w.needed(), false
	for _, s := range inf.shards {
		if s.queue.Oldest() <= need && s.own.TryLock() {
			n, _ := s.passLocked()
			s.own.Unlock()
			if s.queue.Pending() {
				s.bell.Ring()
			}
			helped = helped || n > 0 || s.queue.Oldest() > need
		}
	}
	return helped
}

// gate registers the worker with the watermark, waiting for the oldest
// position its held notifications need.
func (w *worker) gate() {
	need := w.needed()
	w.need.Store(need)
	if !w.gated {
		w.gated = true
		w.l.inf.wm.wait(w)
	}
}

// ready reports whether run has something to deliver: an outlet without held
// notifications that has new ones, or a held notification the watermark now
// covers. Worker goroutine only.
func (w *worker) ready() bool {
	for i, o := range w.outlets {
		if h := &w.held[i]; h.pending() {
			if p := h.buf[h.at].pos; p <= w.seen || p <= w.l.inf.wm.reach(p) {
				return true
			}
			continue
		}
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
	if c := l.inf.codec; c != nil {
		// Decoded on a copy: n lives on in a ring slot, a batch or a backlog,
		// which must not keep decoded objects alive.
		d := *n
		if err := d.decode(c); err != nil {
			l.logger.Error(err, "A notification's object does not decode; the notification was skipped",
				"handler", l.name, "key", n.key, "event", n.kind.String())
			l.inf.cfg.observer.Dropped(err)
			return
		}
		d.dispatch(l.handler)
		return
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
