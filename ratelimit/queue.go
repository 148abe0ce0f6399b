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
// while its ticket is still in the ready FIFO (ticket >= out.popped), and
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

// numShards is the number of key-state shards, 1<<shardBits. Keys hash to
// shards (by the top bits of Queue.hash), so operations on different keys
// rarely wait for each other.
const (
	shardBits = 5
	numShards = 1 << shardBits
)

// shard holds the state of the keys that hash to it: a key ready or in
// flight has an entry; an idle key has none. Add and Done touch the table;
// Get does not (with metrics on it records the start time there).
type shard[K comparable] struct {
	mu sync.Mutex
	// keys holds the ready and in-flight keys. Guarded by mu.
	keys table[K]
	// dones counts the Dones of keys in flight in this shard. Written under
	// mu (an atomic so that Queue.inFlight can sum the shards without their
	// locks): a per-shard count spares Get and Done a counter shared by all
	// workers.
	dones atomic.Uint64
	// Keeps two shards' hot fields out of one cache line: the other core's
	// shard operations would otherwise invalidate ours.
	_ [64]byte
}

// slot is one key in the ready FIFO, with its hash so that Get does not
// hash it again (metrics only), and when it became ready (metrics only).
type slot[K comparable] struct {
	key   K
	hash  uint64
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

	// shutDown is set once, holding every shard lock and fifo's lock, so
	// that it reads the same within any of those critical sections; it is
	// also read without a lock.
	shutDown atomic.Bool
	// draining is set (and never cleared) when ShutDownWithDrain starts:
	// from then on a Done that empties the in-flight keys wakes
	// fifo.drained. Done increments its shard's dones before it reads
	// draining, and ShutDownWithDrain sets draining before it counts the
	// keys in flight, so either Done wakes it or it counts that Done.
	draining atomic.Bool
	// Keeps the flags above, read by every Add and Done, out of the line of
	// out's lock, which every Get writes.
	_ [64]byte

	// The ready FIFO is two rings: Add and Done push to fifo.ready, Get
	// pops from out.ready, and a Get that finds out.ready empty swaps the
	// two rings (O(1)), taking every key then in fifo.ready. Every key in
	// out.ready was pushed before every key in fifo.ready, so keys are
	// handed out in push order, while producers and workers take the same
	// lock only once per swap rather than once per key. Lock order: out,
	// then fifo (a Get swapping; it releases out before it waits on
	// fifo.nonEmpty).
	out struct {
		sync.Mutex
		ready ring[slot[K]]
		// popped counts the pops from out.ready, written under out's lock
		// and read by Add and Done under a shard lock: an entry whose
		// ticket is below it is in flight.
		popped atomic.Uint64
		// end is the ticket after the last key swapped into out.ready,
		// written by the swap (holding both locks): out.ready holds
		// end - popped keys. An atomic so that push (holding fifo's
		// lock, which keeps it still) and a spinning Get can read it
		// without out's lock.
		end atomic.Uint64
		_   [64]byte // keeps the workers' lock apart from the producers'
	}

	// fifo is the tail of the ready FIFO and the state of waiting Gets.
	// Its lock is taken after a shard's lock (and after out's), never
	// before, and is held only for O(1) ring operations.
	fifo struct {
		sync.Mutex
		ready ring[slot[K]]
		// pushed counts the pushes to ready: the next push's ticket.
		pushed uint64
		// dedups counts the Adds that found their key ready or in flight.
		// Such an Add increments it before it reads popped, and Get
		// reads it after it writes popped, so either the Add sees the key
		// popped (and marks it dirty) or Get's load observes the Add's
		// increment: the Add is then synchronized before Get returns, as
		// an Add is before the Get of the key it found ready.
		dedups atomic.Uint64
		// n mirrors ready.len(), written under the lock, so that a
		// spinning Get can watch it without taking the lock. (Keys in
		// out.ready have a Get on its way: the one that swapped them, or
		// others woken for them, see push.)
		n atomic.Int64
		// nonEmpty wakes Gets sleeping for a ready key or for ShutDown.
		nonEmpty sync.Cond
		// sleepers counts Gets in nonEmpty.Wait; waking counts those of
		// them signalled but not yet holding the lock again; spinning is
		// true while one Get spins for a key outside the lock. A push
		// signals only if the ready keys outnumber the Gets already on
		// their way (waking, plus the spinner), so a key is never left
		// without a Get to take it while one sleeps, and no two Gets are
		// woken for one key.
		sleepers, waking int
		spinning         bool
		// drained wakes ShutDownWithDrain when no key is in flight or
		// ShutDown cancels the drain.
		drained sync.Cond
		// drain is true while ShutDownWithDrain waits; ShutDown clears it.
		drain bool
		_     [64]byte // keeps the shards' lines apart from this hot lock
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
	q.fifo.nonEmpty.L = &q.fifo.Mutex
	q.fifo.drained.L = &q.fifo.Mutex
	q.delay.poke = make(chan struct{}, 1)
	return q, nil
}

// hash returns k's hash, never 0 (the empty slot of a table): its top
// shardBits pick k's shard, its low bits k's slot in the shard's table.
func (q *Queue[K]) hash(k K) uint64 {
	h := maphash.Comparable(q.seed, k)
	if h == 0 {
		h = 1
	}
	return h
}

// shardOf returns the shard of the key whose hash is h.
func (q *Queue[K]) shardOf(h uint64) *shard[K] { return &q.shards[h>>(64-shardBits)] }

// now returns the clock's time as an offset from q.epoch.
func (q *Queue[K]) now() time.Duration { return q.clock.Since(q.epoch) }

// Add marks k as needing processing. If k is ready already, it stays where
// it is; if it is in flight, it is handed out again after its Done. After
// ShutDown, Add does nothing.
func (q *Queue[K]) Add(k K) {
	h := q.hash(k)
	s := q.shardOf(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.shutDown.Load() {
		return
	}
	i, ok := s.keys.upsert(h, k)
	e := &s.keys.slots[i].e
	if !ok {
		added := q.added()
		e.ticket = q.push(k, h, added)
		return
	}
	q.fifo.dedups.Add(1) // before reading popped: see fifo.dedups
	if q.queued(*e) || e.dirty {
		return // ready, or in flight and queued again at its Done
	}
	e.dirty = true
	e.added = q.added()
}

// queued reports whether e's key is ready: still in the ready FIFO.
// REQUIRES: the key's shard lock held.
func (q *Queue[K]) queued(e entry) bool { return e.ticket >= q.out.popped.Load() }

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

// push appends k, just made ready at added, to the ready FIFO, wakes one
// waiting Get, and returns k's ticket.
// REQUIRES: k's shard lock held (so that lock order is shard, then fifo).
func (q *Queue[K]) push(k K, h uint64, added time.Duration) uint64 {
	f := &q.fifo
	f.Lock()
	f.ready.push(slot[K]{k, h, added})
	ticket := f.pushed
	f.pushed++
	f.n.Store(int64(f.ready.len()))
	wake := false
	if f.sleepers > f.waking { // else every sleeper is woken already
		onTheirWay := f.waking
		if f.spinning {
			onTheirWay++
		}
		wake = q.readyLen() > onTheirWay
		if wake {
			f.waking++
		}
	}
	f.Unlock()
	if wake {
		f.nonEmpty.Signal()
	}
	return ticket
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
	o, f := &q.out, &q.fifo
	spun := false
	for o.Lock(); o.ready.len() == 0; o.Lock() {
		f.Lock()
		if f.ready.len() > 0 {
			o.ready, f.ready = f.ready, o.ready // o.ready is empty
			o.end.Store(f.pushed)
			f.n.Store(0)
			f.Unlock()
			break
		}
		if q.shutDown.Load() {
			f.Unlock()
			o.Unlock()
			return k, true
		}
		// Both rings are empty, and stay so while f is held: a swap
		// needs f too. Wait holding f only.
		o.Unlock()
		if !spun && !f.spinning { // spin once, then sleep
			spun = true
			f.spinning = true
			f.Unlock()
			q.spin()
			f.Lock()
			f.spinning = false
		} else {
			f.sleepers++
			f.nonEmpty.Wait()
			f.sleepers--
			if f.waking > 0 { // zero after a Broadcast woke everyone
				f.waking--
			}
		}
		f.Unlock() // then look again, in lock order
	}
	sl := o.ready.pop()
	o.popped.Add(1)      // sl.key is in flight now
	q.fifo.dedups.Load() // after writing popped: see fifo.dedups
	o.Unlock()
	if q.m != nil {
		q.started(sl)
	}
	return sl.key, false
}

// started records in the metrics that Get handed out sl's key.
func (q *Queue[K]) started(sl slot[K]) {
	s := q.shardOf(sl.hash)
	s.mu.Lock()
	now := q.now()
	// The key is absent only if a Done of it ran before Get returned it (a
	// caller's bug): nothing to record then.
	if i := s.keys.lookup(sl.hash, sl.key); i >= 0 {
		e := &s.keys.slots[i].e
		e.start, e.started = now, true
	}
	q.m.depth.Dec()
	q.m.latency.Observe((now - sl.added).Seconds())
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

// spin waits, outside the fifo lock, until a key is ready, the queue shuts
// down or spinIterations have passed. One Get at a time spins: when keys
// arrive as fast as workers take them, it takes the next key without the
// cost of being put to sleep and woken (a goroutine switch on each side).
func (q *Queue[K]) spin() {
	for range spinIterations {
		for range spinChecks {
			if q.fifo.n.Load() > 0 || q.out.end.Load() != q.out.popped.Load() || q.shutDown.Load() {
				return
			}
		}
		runtime.Gosched()
	}
}

// spinChecks is how often a spinning Get looks at the FIFO between two
// yields: a yield goes through the scheduler's global run queue, which
// costs more than a few hundred loads of a cached word.
const spinChecks = 64

// Done tells the queue that the worker finished with k, which Get returned.
// If k was added while it was in flight, it goes to the back of the ready
// FIFO, even after ShutDown. Calling Done for a key that is not in flight is
// a bug: it panics in race and invariants builds and is ignored otherwise.
func (q *Queue[K]) Done(k K) {
	h := q.hash(k)
	s := q.shardOf(h)
	s.mu.Lock()
	i := s.keys.lookup(h, k)
	if i < 0 || q.queued(s.keys.slots[i].e) {
		s.mu.Unlock()
		if invariants {
			panic(fmt.Sprintf("ratelimit: queue %q: Done(%v) of a key that is not in flight", q.name, k))
		}
		return
	}
	e := &s.keys.slots[i].e
	if q.m != nil {
		q.m.work.Observe((q.now() - e.start).Seconds())
	}
	if e.dirty {
		*e = entry{ticket: q.push(k, h, e.added)}
	} else {
		s.keys.removeAt(i)
	}
	s.dones.Add(1) // before reading draining: see Queue.draining
	s.mu.Unlock()
	if q.draining.Load() {
		q.fifo.Lock()
		if q.inFlight() == 0 {
			q.fifo.drained.Broadcast()
		}
		q.fifo.Unlock()
	}
}

// inFlight returns the number of keys in flight: handed out by Get (counted
// by out.popped) and not yet Done (counted by the shards' dones). It reads
// the Dones first, each of a key popped before, so it never counts a key
// popped after it started as Done: it may count a key Done meanwhile as
// still in flight, never the reverse, so 0 means none is in flight.
func (q *Queue[K]) inFlight() uint64 {
	var dones uint64
	for i := range q.shards {
		dones += q.shards[i].dones.Load()
	}
	return q.out.popped.Load() - dones
}

// readyLen returns the number of ready keys, or more if a Get pops one
// meanwhile.
// REQUIRES: fifo's lock held.
func (q *Queue[K]) readyLen() int {
	return q.fifo.ready.len() + int(q.out.end.Load()-q.out.popped.Load())
}

// Len returns the number of ready keys: neither in flight nor delayed. Like
// client-go's, it is for information only.
func (q *Queue[K]) Len() int {
	q.out.Lock()
	q.fifo.Lock()
	defer q.out.Unlock()
	defer q.fifo.Unlock()
	return q.out.ready.len() + q.fifo.ready.len()
}

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
	q.fifo.Unlock()
	q.stopBackground()
	q.wg.Wait()
}

// ShutDownWithDrain is ShutDown, then waits until no key is in flight:
// every key handed out by Get (before or after the call) has been Done.
// Keys still ready then are not waited for. Workers must keep calling Get
// and Done, or it waits forever; a concurrent ShutDown ends the wait.
func (q *Queue[K]) ShutDownWithDrain() {
	q.setShutDown(true)
	q.fifo.Unlock()
	q.stopBackground()
	q.fifo.Lock()
	for q.fifo.drain && q.inFlight() != 0 {
		q.fifo.drained.Wait()
	}
	q.fifo.Unlock()
	q.wg.Wait()
}

// ShuttingDown reports whether ShutDown or ShutDownWithDrain was called.
func (q *Queue[K]) ShuttingDown() bool { return q.shutDown.Load() }

// setShutDown sets the shutdown flag holding every shard lock and the fifo
// lock, records whether a drain is waiting, and wakes every waiter. It
// returns with the fifo lock held.
func (q *Queue[K]) setShutDown(drain bool) {
	for i := range q.shards {
		q.shards[i].mu.Lock()
	}
	q.fifo.Lock()
	q.shutDown.Store(true)
	q.fifo.drain = drain
	if drain {
		q.draining.Store(true)
	}
	for i := range q.shards {
		q.shards[i].mu.Unlock()
	}
	q.fifo.nonEmpty.Broadcast()
	q.fifo.drained.Broadcast()
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
