package ratelimit

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Queue satisfies client-go's rate-limiting work queue interface exactly.
var _ workqueue.TypedRateLimitingInterface[string] = (*Queue[string])(nil)

// entry is the state of a key that is ready or in flight. The key is ready
// while its ticket is still in the ready FIFO (ticket >= fifo.popped), and
// in flight from the Get that pops it until its Done, which deletes the
// entry or, if the key was added again meanwhile, queues it with a new
// ticket. Get therefore puts a key in flight without touching its shard.
type entry struct {
	// ticket is the key's position in the sequence of pushes to the ready
	// FIFO (see fifo.pushed).
	ticket uint64
	// dirty: the key was added again while in flight; Done makes it ready.
	dirty bool
	// started: Get recorded start (metrics only; until then the key is in
	// flight but not counted as unfinished work).
	started bool
	// added is when the key became dirty, start when Get handed it out, as
	// offsets from Queue.epoch. Kept only when metrics are on.
	added, start time.Duration
}

// numShards is the number of key-state shards, a power of two. Keys hash to
// shards, so operations on different keys rarely wait for each other.
const numShards = 32

// shard holds the state of the keys that hash to it: a key ready or in
// flight has an entry; an idle key has none. Add and Done touch the map;
// Get does not (with metrics on it records the start time there).
type shard[K comparable] struct {
	mu sync.Mutex
	// keys holds the ready and in-flight keys. Guarded by mu.
	keys map[K]entry
	// Keeps two shards' hot fields out of one cache line: the other core's
	// shard operations would otherwise invalidate ours.
	_ [64]byte
}

// slot is one key in the ready FIFO, with its shard so that Get does not
// hash it again, and when it became ready (metrics only).
type slot[K comparable] struct {
	key   K
	shard uint32
	added time.Duration
}

// Queue is a typed, deduplicating, rate-limited work queue with the
// semantics of client-go's rate-limiting workqueue
// (workqueue.TypedRateLimitingInterface), which it implements. Event
// handlers Add keys, workers Get them, process them and call Done. See the
// package documentation for the guarantees, the goroutines it starts and
// its lock order.
//
// A Queue is safe for concurrent use by any number of goroutines. It must
// not be copied; New returns a pointer.
type Queue[K comparable] struct {
	name    string
	clock   clock.WithTicker
	limiter workqueue.TypedRateLimiter[K]
	seed    maphash.Seed
	// epoch is the clock's time at New; metrics keep times as offsets from
	// it.
	epoch time.Time
	// m is nil when metrics are off.
	m *metrics

	shards [numShards]shard[K]

	// shutDown is set once, holding every shard lock, so that it reads
	// the same within any shard's critical section; it is also read
	// without a lock.
	shutDown atomic.Bool
	// inFlight counts keys handed out by Get and not yet Done.
	inFlight atomic.Int64
	// draining is set (and never cleared) when ShutDownWithDrain starts:
	// from then on a Done that empties inFlight wakes drain.cond.
	draining atomic.Bool

	// ready orders the ready keys; its tickets are the entries' tickets,
	// and a key whose ticket is below ready.popped() is in flight.
	ready readyQueue[slot[K]]
	// dedups counts the Adds that found their key ready or in flight.
	// Such an Add increments it before it reads ready.popped(), and Get
	// reads it after it pops, so either the Add sees the key popped (and
	// marks it dirty) or Get's load observes the Add's increment: the Add
	// is then synchronized before Get returns, as an Add is before the Get
	// of the key it found ready.
	dedups atomic.Uint64

	// wait is where Gets wait for a ready key (see Get and wake).
	wait struct {
		// idle counts the Gets that announced they will sleep and have not
		// been claimed by a wake; each claimed one receives a token from
		// tokens. A Get that announced and then sees a key ready takes
		// itself back (idle-1) or, if a wake claimed it first, its token.
		idle atomic.Int64
		// waking counts the Gets claimed by a wake (or ShutDown) that have
		// not yet received their token and looked at the queue again.
		waking atomic.Int64
		// spinning is true while one Get spins for a key before it sleeps.
		spinning atomic.Bool
		// tokens wakes claimed Gets, one token each. Its buffer lets a wake
		// send without waiting for the claimed Get to reach its receive.
		tokens chan struct{}
	}

	// drain is where ShutDownWithDrain waits for inFlight to reach zero.
	drain struct {
		sync.Mutex
		cond sync.Cond
		// waiting is true while ShutDownWithDrain waits; ShutDown clears it.
		waiting bool
	}

	// delay holds the keys of AddAfter and AddRateLimited until they are
	// due, and the state of the delay goroutine that adds them then.
	delay delayState[K]

	// upd is the state of the goroutine that sets the unfinished-work
	// gauges while keys are in flight (metrics only).
	upd struct {
		sync.Mutex
		running atomic.Bool // written under the lock, read without
		stopped bool
	}

	// stop is closed by the first ShutDown or ShutDownWithDrain; the
	// background goroutines return on it. wg counts them.
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// New returns an empty queue configured by cfg, or an error wrapping
// ErrInvalidConfig. It starts no goroutine (see the package documentation
// for the two that run while there is work for them).
func New[K comparable](cfg Config[K]) (*Queue[K], error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	q := &Queue[K]{
		name:    cfg.Name,
		clock:   cfg.Clock,
		limiter: cfg.RateLimiter,
		seed:    maphash.MakeSeed(),
		epoch:   cfg.Clock.Now(),
		stop:    make(chan struct{}),
	}
	if q.limiter == nil {
		q.limiter = newLimiter(cfg)
	}
	if cfg.MetricsProvider != nil {
		q.m = newMetrics(cfg.MetricsProvider, cfg.Name, cfg.UnfinishedWorkUpdatePeriod)
	}
	for i := range q.shards {
		q.shards[i].keys = make(map[K]entry)
	}
	q.ready.init()
	q.wait.tokens = make(chan struct{}, maxTokens)
	q.drain.cond.L = &q.drain.Mutex
	q.delay.poke = make(chan struct{}, 1)
	return q, nil
}

// maxTokens is the buffer of Queue.wait.tokens: a wake blocks on its send
// only while more than maxTokens claimed Gets have not yet received theirs.
const maxTokens = 1024

// shardOf returns k's shard and its index.
func (q *Queue[K]) shardOf(k K) (*shard[K], uint32) {
	i := uint32(maphash.Comparable(q.seed, k)) & (numShards - 1)
	return &q.shards[i], i
}

// now returns the clock's time as an offset from q.epoch.
func (q *Queue[K]) now() time.Duration { return q.clock.Since(q.epoch) }

// Add marks k as needing processing. If k is ready already, it stays where
// it is; if it is in flight, it is handed out again after its Done. After
// ShutDown, Add does nothing.
func (q *Queue[K]) Add(k K) {
	s, i := q.shardOf(k)
	s.mu.Lock()
	if q.shutDown.Load() {
		s.mu.Unlock()
		return
	}
	e, ok := s.keys[k]
	if !ok {
		added := q.added()
		s.keys[k] = entry{ticket: q.ready.push(slot[K]{k, i, added})}
		s.mu.Unlock()
		q.wake()
		return
	}
	q.dedups.Add(1) // before reading popped: see Queue.dedups
	if !q.queued(e) && !e.dirty {
		// In flight: queued again at its Done.
		e.dirty = true
		e.added = q.added()
		s.keys[k] = e
	}
	s.mu.Unlock()
}

// queued reports whether e's key is ready: still in the ready queue.
// REQUIRES: the key's shard lock held.
func (q *Queue[K]) queued(e entry) bool { return e.ticket >= q.ready.popped() }

// added counts an add in the metrics and returns the time of it; zero when
// metrics are off.
func (q *Queue[K]) added() time.Duration {
	if q.m == nil {
		return 0
	}
	q.m.adds.Inc()
	q.m.depth.Inc()
	return q.now()
}

// wake is called after a push: it wakes one sleeping Get unless the Gets
// already on their way (woken but not yet looking, or spinning) are as many
// as the ready keys, so no two Gets are woken for one key.
//
// Why no key waits while a Get sleeps (all atomics are sequentially
// consistent): a Get announces itself idle and then looks at the ready
// queue; a push marks its cell full and then wake reads idle, so one of the
// two sees the other. A spinner clears spinning, and a woken Get decrements
// waking, before it pops; wake reads the queue length before spinning and
// waking, so a Get it counts as on its way pops after the push and the
// length counts the key it will take. Pushes complete out of ticket order,
// so an on-their-way Get may find an older key than the one it was counted
// for, or none yet; every Get that pops a key therefore calls wake again if
// another key is ready (chaining), and a Get that finds none looks again
// after announcing itself idle.
func (q *Queue[K]) wake() {
	w := &q.wait
	if w.idle.Load() == 0 {
		return
	}
	n := int64(q.ready.len()) - w.waking.Load()
	if w.spinning.Load() {
		n--
	}
	if n <= 0 {
		return
	}
	for {
		idle := w.idle.Load()
		if idle == 0 {
			return // every sleeper was claimed by another wake meanwhile
		}
		if w.idle.CompareAndSwap(idle, idle-1) {
			w.waking.Add(1)
			w.tokens <- struct{}{}
			return
		}
	}
}

// Get blocks until a key is ready and returns it, with shutdown false; the
// caller must call Done(k) when finished with it. Keys are handed out in
// the order they became ready, and a key is never handed out again before
// its Done.
//
// After ShutDown, Get keeps handing out ready keys; once none is ready it
// returns the zero key and shutdown true, without waiting for keys in
// flight (one that was added again while in flight becomes ready at its
// Done, and a later Get returns it). A worker returns when shutdown is true.
func (q *Queue[K]) Get() (k K, shutdown bool) {
	spun := false
	for {
		down := q.shutDown.Load() // before the pop: down and empty together mean shut down
		sl, _, ok := q.ready.tryPop()
		if ok {
			q.dedups.Load() // after the pop: see Queue.dedups
			q.inFlight.Add(1)
			if q.wait.idle.Load() > 0 && q.ready.ready() {
				q.wake() // chaining: see wake
			}
			if q.m != nil {
				q.started(sl)
			}
			return sl.key, false
		}
		if down {
			return k, true
		}
		if !spun && q.wait.spinning.CompareAndSwap(false, true) {
			spun = true // spin once, then sleep
			q.spin()
			q.wait.spinning.Store(false) // before the pop: see wake
			continue
		}
		q.sleep()
	}
}

// sleep waits until a wake or ShutDown claims this Get, unless a key is
// ready or the queue shut down after it announced itself idle.
func (q *Queue[K]) sleep() {
	w := &q.wait
	w.idle.Add(1) // before looking at the queue: see wake
	if !q.ready.ready() && !q.shutDown.Load() {
		<-w.tokens
		w.waking.Add(-1) // before the pop: see wake
		return
	}
	for { // take the announcement back, or the token of a wake that claimed it
		idle := w.idle.Load()
		if idle == 0 {
			<-w.tokens
			w.waking.Add(-1)
			return
		}
		if w.idle.CompareAndSwap(idle, idle-1) {
			return
		}
	}
}

// started records in the metrics that Get handed out sl's key.
func (q *Queue[K]) started(sl slot[K]) {
	s := &q.shards[sl.shard]
	s.mu.Lock()
	e := s.keys[sl.key]
	e.start, e.started = q.now(), true
	s.keys[sl.key] = e
	q.m.depth.Dec()
	q.m.latency.Observe((e.start - sl.added).Seconds())
	s.mu.Unlock()
	if !q.upd.running.Load() {
		q.startUpdater()
	}
}

// spinIterations bounds how long a Get spins for a key before it sleeps:
// each iteration yields the processor once (runtime.Gosched), a fraction of
// a microsecond when nothing else is runnable, so the bound is some tens of
// microseconds of one core's time.
const spinIterations = 64

// spin waits until a key is ready, the queue shuts down or spinIterations
// have passed. One Get at a time spins: when keys arrive as fast as workers
// take them, it takes the next key without the cost of being put to sleep
// and woken (a goroutine switch on each side).
func (q *Queue[K]) spin() {
	for range spinIterations {
		for range spinChecks {
			if q.ready.ready() || q.shutDown.Load() {
				return
			}
		}
		runtime.Gosched()
	}
}

// spinChecks is how often a spinning Get looks at the queue between two
// yields: a yield goes through the scheduler's global run queue, which
// costs more than a few hundred loads of a cached word.
const spinChecks = 64

// Done tells the queue that the worker finished with k, which Get returned.
// If k was added while it was in flight, it goes to the back of the ready
// queue, even after ShutDown. Calling Done for a key that is not in flight
// is a bug: it panics in race and invariants builds and is ignored
// otherwise.
func (q *Queue[K]) Done(k K) {
	s, i := q.shardOf(k)
	s.mu.Lock()
	e, ok := s.keys[k]
	if !ok || q.queued(e) {
		s.mu.Unlock()
		if invariants {
			panic(fmt.Sprintf("ratelimit: queue %q: Done(%v) of a key that is not in flight", q.name, k))
		}
		return
	}
	if q.m != nil {
		q.m.work.Observe((q.now() - e.start).Seconds())
	}
	if e.dirty {
		s.keys[k] = entry{ticket: q.ready.push(slot[K]{k, i, e.added})}
	} else {
		delete(s.keys, k)
	}
	s.mu.Unlock()
	if e.dirty {
		q.wake()
	}
	if q.inFlight.Add(-1) == 0 && q.draining.Load() {
		q.drain.Lock()
		q.drain.cond.Broadcast()
		q.drain.Unlock()
	}
}

// Len returns the number of ready keys: neither in flight nor delayed. Like
// client-go's, it is for information only.
func (q *Queue[K]) Len() int { return q.ready.len() }

// AddAfter adds k once d has passed on the queue's clock; d <= 0 is Add. A
// key waits at most once: if k is already delayed, the earlier due time
// wins. The delay is independent of k being ready or in flight meanwhile:
// at its due time k is added as by Add. After ShutDown, AddAfter does
// nothing. Each call before ShutDown counts one retry in the metrics, as in
// client-go.
func (q *Queue[K]) AddAfter(k K, d time.Duration) {
	if q.shutDown.Load() {
		return
	}
	if q.m != nil {
		q.m.retries.Inc()
	}
	if d <= 0 {
		q.Add(k)
		return
	}
	q.schedule(k, q.clock.Now().Add(d))
}

// AddRateLimited adds k after the delay the rate limiter returns for it
// (which counts one more requeue of k). As in client-go, the limiter is
// asked even after ShutDown, when the add itself is ignored.
func (q *Queue[K]) AddRateLimited(k K) {
	q.AddAfter(k, q.limiter.When(k))
}

// Forget tells the rate limiter to stop tracking k: its backoff starts
// over. It does not touch a pending delay. Call it once a key succeeds or is
// given up.
func (q *Queue[K]) Forget(k K) { q.limiter.Forget(k) }

// NumRequeues returns the rate limiter's count of requeues of k since its
// last Forget.
func (q *Queue[K]) NumRequeues(k K) int { return q.limiter.NumRequeues(k) }

// ShutDown makes the queue ignore new keys: later Add, AddAfter and
// AddRateLimited calls do nothing, and delayed keys are dropped. Blocked
// Gets return, ready keys are still handed out (see Get), and a
// ShutDownWithDrain waiting for keys in flight returns. ShutDown waits for
// the queue's goroutines to exit; it may be called more than once.
func (q *Queue[K]) ShutDown() {
	q.setShutDown(false)
	q.stopBackground()
	q.wg.Wait()
}

// ShutDownWithDrain is ShutDown, then waits until no key is in flight:
// every key handed out by Get (before or after the call) has been Done.
// Keys still ready then are not waited for. Workers must keep calling Get
// and Done, or it waits forever; a concurrent ShutDown ends the wait.
func (q *Queue[K]) ShutDownWithDrain() {
	q.setShutDown(true)
	q.stopBackground()
	q.drain.Lock()
	for q.drain.waiting && q.inFlight.Load() != 0 {
		q.drain.cond.Wait()
	}
	q.drain.Unlock()
	q.wg.Wait()
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (q *Queue[K]) ShuttingDown() bool { return q.shutDown.Load() }

// setShutDown sets the shutdown flag holding every shard lock, records
// whether a drain is waiting, and wakes every sleeping Get and drain.
func (q *Queue[K]) setShutDown(drain bool) {
	for i := range q.shards {
		q.shards[i].mu.Lock()
	}
	q.shutDown.Store(true)
	for i := range q.shards {
		q.shards[i].mu.Unlock()
	}
	// Every Get that announced itself idle before the Swap gets a token;
	// one that announces later sees shutDown and takes its announcement
	// back (see sleep).
	n := q.wait.idle.Swap(0)
	q.wait.waking.Add(n)
	for ; n > 0; n-- {
		q.wait.tokens <- struct{}{}
	}
	q.drain.Lock()
	q.drain.waiting = drain
	if drain {
		q.draining.Store(true)
	}
	q.drain.cond.Broadcast()
	q.drain.Unlock()
}

// stopBackground drops the delayed keys and tells the delay and
// unfinished-work goroutines to exit; q.wg.Wait waits for them.
func (q *Queue[K]) stopBackground() {
	q.stopOnce.Do(func() {
		q.delay.Lock()
		q.delay.stopped = true
		q.delay.heap.clear()
		q.delay.Unlock()
		q.upd.Lock()
		q.upd.stopped = true
		q.upd.Unlock()
		close(q.stop)
	})
}
