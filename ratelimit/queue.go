package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// state is where a key is in its life cycle. A key absent from Queue.mu.keys
// is idle: not ready and not being processed (it may still be in the delay
// heap, which is tracked separately).
type state uint8

const (
	// stateReady: in the ready ring, waiting for Get.
	stateReady state = iota + 1
	// stateProcessing: handed out by Get; Done not called yet.
	stateProcessing
	// stateProcessingDirty: being processed and added again meanwhile; Done
	// moves it to the back of the ready ring.
	stateProcessingDirty
)

// keyTimes are the observed times of one ready or in-flight key: when it
// last became pending (ready or dirty) and when Get handed it out.
type keyTimes struct {
	pendingSince, started time.Time
}

// waiter is one Get blocked for a key.
type waiter struct {
	ch chan struct{} // capacity 1; receives exactly one token per wake
	// woken is guarded by Queue.mu: true once a waker removed the waiter from
	// Queue.mu.waiters and sent its token.
	woken bool
}

// Queue is a typed, deduplicating, rate-limited work queue of keys: event
// handlers Add keys, workers Get them, process them and call Done. See the
// package documentation for the guarantees.
//
// A Queue is safe for concurrent use by any number of goroutines. It must not
// be copied; New returns a pointer. It starts no goroutines.
type Queue[K comparable] struct {
	name      string
	clock     clock.WithTicker
	obs       Observer // nil: nothing observed
	limiter   *rate.Limiter
	baseDelay time.Duration
	maxDelay  time.Duration
	// drained is closed once the queue is shut down and has no ready and no
	// in-flight key. Set by New, closed under mu.
	drained chan struct{}

	// mu guards everything below. Lock order: mu, then the limiter's and the
	// clock's internal locks; Observer hooks are called with mu held.
	mu struct {
		sync.Mutex
		// keys holds every ready or in-flight key; idle keys are absent.
		// Invariant: the ready ring holds exactly the keys in stateReady,
		// each once.
		keys  map[K]state
		ready ring[K]
		// times has an entry for every key in keys when an Observer is set,
		// and is nil otherwise (the clock is then read only for delays).
		times map[K]keyTimes
		// delayed holds the keys of AddAfter and AddRateLimited until their
		// due time. A key there may also be ready or in flight: the entry is
		// an independent request to process the key again at that time.
		delayed delayHeap[K]
		// failures counts AddRateLimited calls per key since its last Forget.
		failures map[K]int
		// inFlight counts keys in stateProcessing or stateProcessingDirty,
		// requeues those in stateProcessingDirty.
		inFlight, requeues int
		// waiters are the blocked Gets, oldest first; spare are waiters
		// whose Get returned, kept for reuse (no token in their channel).
		waiters, spare []*waiter
		// keeper is the one waiter whose timer is armed for keeperDue, the
		// due time of the earliest delayed key when it armed it; nil if none.
		// Whenever waiters and delayed keys both exist, a keeper exists or a
		// woken waiter is about to become one.
		keeper    *waiter
		keeperDue time.Time
		shutDown  bool
	}
}

// New returns an empty queue configured by cfg, or an error wrapping
// ErrInvalidConfig. It starts nothing.
func New[K comparable](cfg Config) (*Queue[K], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	q := &Queue[K]{
		name:      cfg.Name,
		clock:     cfg.Clock,
		obs:       cfg.Observer,
		limiter:   rate.NewLimiter(cfg.Limit, cfg.Burst),
		baseDelay: cfg.BaseDelay,
		maxDelay:  cfg.MaxDelay,
		drained:   make(chan struct{}),
	}
	q.mu.keys = make(map[K]state)
	if q.obs != nil {
		q.mu.times = make(map[K]keyTimes)
	}
	q.mu.failures = make(map[K]int)
	return q, nil
}

// Add makes k ready unless it already is. If k is being processed, it is
// handed out again after Done. After ShutDown, Add does nothing.
func (q *Queue[K]) Add(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.shutDown {
		return
	}
	now := q.promoteLocked()
	q.addLocked(k, now)
}

// AddAfter adds k once d has passed; d <= 0 is Add. A key waits at most once:
// if k is already waiting, the earlier due time wins, so a later AddAfter
// never postpones an earlier one. The delay is independent of k being ready
// or in flight: when it expires, k is added as by Add. After ShutDown,
// AddAfter does nothing.
func (q *Queue[K]) AddAfter(k K, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.shutDown {
		return
	}
	now := q.promoteLocked()
	if d <= 0 {
		q.addLocked(k, now)
		return
	}
	if now.IsZero() {
		now = q.clock.Now()
	}
	q.addAfterLocked(k, now.Add(d))
}

// AddRateLimited adds k after the larger of its backoff and the token
// bucket's delay. The backoff is BaseDelay·2ⁿ, capped at MaxDelay, where n is
// NumRequeues(k) before the call; the call increments NumRequeues(k) and
// takes one token from the bucket shared by all keys. After ShutDown it does
// nothing.
func (q *Queue[K]) AddRateLimited(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.shutDown {
		return
	}
	now := q.promoteLocked()
	if now.IsZero() {
		now = q.clock.Now()
	}
	n := q.mu.failures[k]
	q.mu.failures[k] = n + 1
	delay := max(q.backoff(n), q.limiter.ReserveN(now, 1).DelayFrom(now))
	if q.obs != nil {
		q.obs.Retry()
	}
	if delay <= 0 {
		q.addLocked(k, now)
		return
	}
	q.addAfterLocked(k, now.Add(delay))
}

// Forget resets k's backoff: the next AddRateLimited(k) waits BaseDelay. It
// does not return tokens to the bucket and does not touch a pending delay.
// Call it once a key succeeds or is given up: until then the queue keeps its
// count.
func (q *Queue[K]) Forget(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.mu.failures, k)
}

// NumRequeues returns how many times AddRateLimited(k) was called since the
// last Forget(k).
func (q *Queue[K]) NumRequeues(k K) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.failures[k]
}

// Get blocks until a key is ready and hands it to the caller, who must call
// Done(k) when finished with it. Keys are handed out in the order they became
// ready, and a key is never handed out again before its Done.
//
// Get returns (zero, false) without a key if ctx is done (checked first, so
// that a cancelled worker stops promptly even if keys are ready), or once the
// queue is shut down and has nothing left to hand out: no ready key and no
// in-flight key that was re-added before ShutDown. Until then, Get keeps
// handing out keys after ShutDown. A worker calls Done for its key before
// its next Get; otherwise, after ShutDown, it may wait for its own re-add.
func (q *Queue[K]) Get(ctx context.Context) (K, bool) {
	var zero K
	if ctx.Err() != nil {
		return zero, false
	}
	q.mu.Lock()
	var w *waiter
	for {
		now := q.promoteLocked()
		if q.mu.ready.len() > 0 {
			k := q.takeLocked()
			if w != nil {
				q.ensureKeeperLocked() // in case this Get was the keeper
				q.mu.spare = append(q.mu.spare, w)
			}
			q.mu.Unlock()
			return k, true
		}
		if q.mu.shutDown && q.mu.requeues == 0 {
			if w != nil {
				q.mu.spare = append(q.mu.spare, w)
			}
			q.mu.Unlock()
			return zero, false
		}

		if w == nil {
			w = q.waiterLocked()
		}
		if q.waitLocked(ctx, w, now) {
			q.mu.spare = append(q.mu.spare, w)
			q.mu.Unlock()
			return zero, false
		}
	}
}

// waitLocked blocks the Get owning w until it is woken, until the earliest
// delayed key is due (if it becomes the keeper) or until ctx is done, which
// it reports. now is the time promoteLocked returned.
// REQUIRES: q.mu held; it is released while blocked and held again on return.
func (q *Queue[K]) waitLocked(ctx context.Context, w *waiter, now time.Time) (cancelled bool) {
	w.woken = false
	q.mu.waiters = append(q.mu.waiters, w)
	var timer clock.Timer
	var fire <-chan time.Time
	if q.mu.keeper == nil && q.mu.delayed.len() > 0 {
		// now is set: promoteLocked read the clock as delayed is non-empty.
		due := q.mu.delayed.min().due
		q.mu.keeper, q.mu.keeperDue = w, due
		timer = q.clock.NewTimer(due.Sub(now))
		fire = timer.C()
	}
	q.mu.Unlock()

	select {
	case <-w.ch:
	case <-fire:
	case <-ctx.Done():
		cancelled = true
	}
	if timer != nil {
		timer.Stop()
	}

	q.mu.Lock()
	if w.woken {
		select { // drop the token if the wake lost the race in select
		case <-w.ch:
		default:
		}
	} else {
		q.removeWaiterLocked(w)
	}
	if q.mu.keeper == w {
		q.mu.keeper = nil
	}
	if cancelled {
		if w.woken {
			q.wakeOneLocked() // pass on the wake this Get will not use
		}
		q.ensureKeeperLocked()
	}
	return cancelled
}

// waiterLocked returns a spare waiter or a new one.
// REQUIRES: q.mu held.
func (q *Queue[K]) waiterLocked() *waiter {
	n := len(q.mu.spare)
	if n == 0 {
		return &waiter{ch: make(chan struct{}, 1)}
	}
	w := q.mu.spare[n-1]
	q.mu.spare[n-1] = nil
	q.mu.spare = q.mu.spare[:n-1]
	return w
}

// Done tells the queue that the worker finished with k, which Get returned.
// If k was added while it was processed, it goes to the back of the ready
// queue. Calling Done for a key that is not being processed is a bug: it
// panics in race and invariants builds and is ignored otherwise.
func (q *Queue[K]) Done(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.promoteLocked() // delays that expired while k was in flight re-add it
	st, ok := q.mu.keys[k]
	if !ok || st == stateReady {
		if invariants {
			panic(fmt.Sprintf("ratelimit: queue %q: Done(%v) of a key that is not being processed", q.name, k))
		}
		return
	}
	q.mu.inFlight--
	if q.obs != nil {
		q.obs.WorkDuration(q.clock.Since(q.mu.times[k].started))
	}
	if st == stateProcessing {
		delete(q.mu.keys, k)
		if q.mu.times != nil {
			delete(q.mu.times, k)
		}
	} else {
		q.mu.requeues--
		q.mu.keys[k] = stateReady
		q.pushLocked(k)
	}
	if q.mu.shutDown {
		q.wakeIfFinishedLocked()
		q.closeIfDrainedLocked()
	}
}

// Len returns the number of ready keys: neither in flight nor waiting for a
// due time.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.promoteLocked()
	return q.mu.ready.len()
}

// ShutDown stops the queue from accepting keys: later Add, AddAfter and
// AddRateLimited calls do nothing, and keys waiting for a due time still in
// the future are dropped. Keys already ready, and in-flight keys re-added
// before ShutDown (after their Done), are still handed out by Get, which
// returns false once there are none left. ShutDown wakes blocked Gets and may
// be called more than once.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.shutDown {
		return
	}
	q.promoteLocked()
	q.mu.shutDown = true
	q.mu.delayed.clear()
	q.wakeAllLocked()
	q.closeIfDrainedLocked()
}

// ShutDownWithDrain calls ShutDown and waits until the queue is drained: no
// key ready and none in flight, i.e. every key that ShutDown kept has been
// handed out and Done. This needs workers still calling Get and Done. If ctx
// is done first, it returns an error wrapping ctx.Err(); the queue stays shut
// down.
func (q *Queue[K]) ShutDownWithDrain(ctx context.Context) error {
	q.ShutDown()
	select {
	case <-q.drained:
		return nil
	default:
	}
	select {
	case <-q.drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ratelimit: queue %q: drain: %w", q.name, ctx.Err())
	}
}

// ShuttingDown reports whether ShutDown was called.
func (q *Queue[K]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.shutDown
}

// backoff returns the per-key delay of a key already requeued n times:
// baseDelay·2ⁿ capped at maxDelay.
func (q *Queue[K]) backoff(n int) time.Duration {
	if n >= 63 || q.baseDelay > q.maxDelay>>n {
		return q.maxDelay
	}
	return q.baseDelay << n
}

// promoteLocked moves every delayed key whose due time has passed to the
// ready queue, in due-time order. It returns the time it read, or the zero
// time if there were no delayed keys (then it does not read the clock).
// REQUIRES: q.mu held.
func (q *Queue[K]) promoteLocked() time.Time {
	if q.mu.delayed.len() == 0 {
		return time.Time{}
	}
	now := q.clock.Now()
	for q.mu.delayed.len() > 0 && !q.mu.delayed.min().due.After(now) {
		e := q.mu.delayed.popMin()
		q.addLocked(e.key, e.due)
	}
	return now
}

// addLocked makes k pending unless it is already ready or awaiting a re-add.
// since is when k became pending; if zero, the clock is read (only when
// observed).
// REQUIRES: q.mu held; not shut down.
func (q *Queue[K]) addLocked(k K, since time.Time) {
	st, ok := q.mu.keys[k]
	if ok && st != stateProcessing {
		return // deduplicated
	}
	if q.obs != nil {
		if since.IsZero() {
			since = q.clock.Now()
		}
		kt := q.mu.times[k]
		kt.pendingSince = since
		q.mu.times[k] = kt
		q.obs.Added()
	}
	if ok {
		q.mu.keys[k] = stateProcessingDirty
		q.mu.requeues++
		return
	}
	q.mu.keys[k] = stateReady
	q.pushLocked(k)
}

// pushLocked appends k, already in stateReady, to the ready queue and wakes
// one blocked Get.
// REQUIRES: q.mu held.
func (q *Queue[K]) pushLocked(k K) {
	q.mu.ready.push(k)
	if q.obs != nil {
		q.obs.Depth(q.mu.ready.len())
	}
	q.wakeOneLocked()
}

// takeLocked hands out the oldest ready key.
// REQUIRES: q.mu held; q.mu.ready.len() > 0.
func (q *Queue[K]) takeLocked() K {
	k := q.mu.ready.pop()
	q.mu.keys[k] = stateProcessing
	q.mu.inFlight++
	if q.obs != nil {
		now := q.clock.Now()
		kt := q.mu.times[k]
		q.obs.Depth(q.mu.ready.len())
		q.obs.Latency(now.Sub(kt.pendingSince))
		kt.started = now
		q.mu.times[k] = kt
	}
	if q.mu.shutDown {
		q.wakeIfFinishedLocked()
	}
	return k
}

// addAfterLocked schedules k for due and makes sure a blocked Get will wake
// up for it.
// REQUIRES: q.mu held; not shut down; due is in the future.
func (q *Queue[K]) addAfterLocked(k K, due time.Time) {
	if !q.mu.delayed.schedule(k, due) {
		return
	}
	if q.mu.keeper != nil {
		if due.Before(q.mu.keeperDue) {
			q.wakeLocked(q.mu.keeper) // re-arm for the earlier due time
		}
		return
	}
	q.ensureKeeperLocked()
}

// ensureKeeperLocked wakes a blocked Get to become the keeper if delayed keys
// exist but nobody watches the clock for them.
// REQUIRES: q.mu held.
func (q *Queue[K]) ensureKeeperLocked() {
	if q.mu.keeper == nil && q.mu.delayed.len() > 0 {
		q.wakeOneLocked()
	}
}

// wakeOneLocked wakes the oldest blocked Get, preferring one that is not the
// keeper so that the keeper's timer stays armed.
// REQUIRES: q.mu held.
func (q *Queue[K]) wakeOneLocked() {
	switch ws := q.mu.waiters; {
	case len(ws) == 0:
	case ws[0] == q.mu.keeper && len(ws) > 1:
		q.wakeLocked(ws[1])
	default:
		q.wakeLocked(ws[0])
	}
}

// wakeAllLocked wakes every blocked Get.
// REQUIRES: q.mu held.
func (q *Queue[K]) wakeAllLocked() {
	for len(q.mu.waiters) > 0 {
		q.wakeLocked(q.mu.waiters[0])
	}
}

// wakeIfFinishedLocked wakes every blocked Get if the queue is shut down and
// they have nothing left to wait for, so that they return false.
// REQUIRES: q.mu held.
func (q *Queue[K]) wakeIfFinishedLocked() {
	if q.mu.shutDown && q.mu.ready.len() == 0 && q.mu.requeues == 0 {
		q.wakeAllLocked()
	}
}

// closeIfDrainedLocked releases ShutDownWithDrain once nothing is ready or in
// flight.
// REQUIRES: q.mu held; shut down.
func (q *Queue[K]) closeIfDrainedLocked() {
	if q.mu.ready.len() == 0 && q.mu.inFlight == 0 {
		select {
		case <-q.drained:
		default:
			close(q.drained)
		}
	}
}

// wakeLocked removes w from the waiters and sends it its token; it does
// nothing if w was already woken.
// REQUIRES: q.mu held.
func (q *Queue[K]) wakeLocked(w *waiter) {
	if w.woken {
		return
	}
	q.removeWaiterLocked(w)
	w.woken = true
	w.ch <- struct{}{} // never blocks: the token of the previous wake was drained under q.mu
}

// removeWaiterLocked removes w from the waiters, keeping their order.
// REQUIRES: q.mu held; w is in q.mu.waiters.
func (q *Queue[K]) removeWaiterLocked(w *waiter) {
	ws := q.mu.waiters
	for i := range ws {
		if ws[i] == w {
			copy(ws[i:], ws[i+1:])
			ws[len(ws)-1] = nil
			q.mu.waiters = ws[:len(ws)-1]
			return
		}
	}
	panic(fmt.Sprintf("ratelimit: queue %q: blocked Get missing from the waiters", q.name))
}
