// Package ratelimit provides Queue, a typed, deduplicating, rate-limited work
// queue for controllers. It implements client-go's
// workqueue.TypedRateLimitingInterface with client-go's semantics, accepts
// any workqueue.TypedRateLimiter and workqueue.MetricsProvider, allocates
// nothing per item and uses no more CPU per item than client-go's queue.
// BenchmarkQueue runs both side by side (figures: bench/results/queue.md).
// Both queues switch between a fast mode, the goroutines of the benchmark
// mostly on one core, and a slow one, busy on both, where every lock and
// key-table line moves between cores on each item. Two things make
// the difference with client-go: each shard's own hash table (one hash and
// one probe per Add and per Done) and a ready FIFO of two rings, so that
// producers and workers share a lock once per batch rather than per key.
// It knows nothing of Prometheus or the rest of shardinformer;
// promadapter.WorkqueueMetricsProvider exports its metrics.
//
// # Migration from client-go
//
// One line:
//
//	queue := workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[T]{Name: "pods", MetricsProvider: p})
//	queue, err := ratelimit.New(ratelimit.Config[T]{Name: "pods", RateLimiter: rl, MetricsProvider: p})
//
// (workqueue.NewTypedRateLimitingQueue(rl) is ratelimit.New(ratelimit.Config[T]{RateLimiter: rl}).)
// New returns an error only for an invalid Config. The result is a
// *Queue[T], usable wherever a workqueue.TypedRateLimitingInterface[T] is,
// e.g. as what controller-runtime's controller.TypedOptions.NewQueue
// returns:
//
//	NewQueue: func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
//		q, err := ratelimit.New(ratelimit.Config[reconcile.Request]{Name: name, RateLimiter: rl, MetricsProvider: p})
//		if err != nil {
//			panic(err) // only for an invalid Config
//		}
//		return q
//	},
//
// controller-runtime (v0.25) keeps its workqueue metrics provider's type
// internal; the module examples/controller-runtime shows a provider p that
// feeds controller-runtime's own workqueue_* series, and its test runs a
// manager on this queue. promadapter.NewWorkqueueMetricsProvider gives
// client-go's workqueue_* series on any registry.
//
// Two things differ from a client-go queue built the same way: there is no
// global metrics provider (workqueue.SetProvider does not reach this queue;
// pass Config.MetricsProvider), and a nil RateLimiter is allowed: it means
// the built-in limiter, which computes what
// workqueue.DefaultTypedControllerRateLimiter does (5ms–1000s per-key
// backoff, 10/s bucket of 100) but on Config.Clock, so a fake clock drives
// its bucket too.
//
// # Migration from the earlier ratelimit API
//
// Earlier versions had Get(ctx) (k, ok bool) and
// ShutDownWithDrain(ctx) error. Get now returns (k, shutdown bool), the
// opposite meaning, so that the queue is client-go's interface; old calls
// no longer compile rather than silently inverting:
//
//	k, ok := q.Get(ctx); if !ok { return }  →  k, shutdown := q.Get(); if shutdown { return }
//	err := q.ShutDownWithDrain(ctx)          →  q.ShutDownWithDrain() (a concurrent ShutDown ends the wait)
//	ratelimit.New[T](ratelimit.Config{...})  →  ratelimit.New(ratelimit.Config[T]{...})
//	Config.Observer                          →  Config.MetricsProvider (client-go's interface)
//
// A context-aware Get was not kept: it would need every waiting Get to
// select on a channel, where a sync.Cond is cheaper; and workers of a
// client-go queue stop through ShutDown, which a controller calls when its
// context is done. To stop one worker alone, let it return between items.
//
// # Guarantees (client-go's)
//
//   - Deduplication: a ready key is queued once however often it is added.
//   - Exclusion: from Get to Done a key is in flight, and Get never hands it
//     to another worker meanwhile.
//   - No lost adds: a key added while in flight is queued again at its Done,
//     at the back.
//   - FIFO: ready keys are handed out in the order they became ready.
//   - Delays: AddAfter keeps one due time per key, the earliest. At its due
//     time the key is added as by Add (deduplicated if ready, queued after
//     Done if in flight).
//   - Rate limiting: AddRateLimited(k) is AddAfter(k, RateLimiter.When(k));
//     Forget and NumRequeues are the limiter's. As in client-go, the limiter
//     is asked even after ShutDown.
//   - ShutDown: later adds are ignored, delayed keys dropped and blocked Gets
//     woken. Get keeps handing out ready keys, then returns shutdown=true
//     as soon as none is ready, even if a key in flight was added again (its
//     Done still queues it, and a later Get returns it).
//   - ShutDownWithDrain: ShutDown, then wait until no key is in flight
//     (ready keys are not waited for); a ShutDown call ends the wait.
//   - Metrics: the same calls as client-go's queue makes (see metrics.go),
//     so client-go's and controller-runtime's providers report the same
//     values for the same operations.
//
// The conformance tests (conformance_test.go) run one table of these
// behaviours against client-go's queue and this one; so do the race tests
// (race_test.go): an Add racing with the Done of its key, or with the Get
// that takes it, is never lost (racing Done, the key is handed out exactly
// once more).
//
// Differences: Done of a key that is not in flight panics in race and
// invariants builds (go test -race, or -tags invariants) and is ignored
// otherwise; client-go ignores it, or queues the key a second time if it was
// ready. Keys that fall due at the same instant become ready in AddAfter
// order (client-go: in no defined order).
//
// # Goroutines
//
// New starts nothing. Two goroutines run, each only while it has work:
//
//   - the delay goroutine, from the AddAfter that delays a key when none is
//     delayed until no key is delayed: it sleeps on a timer of Config.Clock
//     until the earliest due time and adds the keys then due, in due order;
//   - the unfinished-work goroutine (only with a MetricsProvider), from the
//     Get that puts a key in flight until a period passes with none in
//     flight: every UnfinishedWorkUpdatePeriod it sets the unfinished-work
//     and longest-running gauges, then 0 before it exits.
//
// ShutDown and ShutDownWithDrain stop both and wait for them, so an idle
// queue costs no CPU and a shut-down queue leaves no goroutine behind.
//
// # Locking
//
// Key state is split into 32 shards by a hash of the key, each with its own
// mutex and one hash table (table.go) holding its ready and in-flight keys:
// Add and Done hash the key once, for its shard and its slot, and look it up
// and insert or delete it in one probe sequence. The ready FIFO is two
// rings, each with its own mutex held only for O(1) ring operations: Add
// and Done push to the tail ring (lock fifo), Get pops from the head ring
// (lock out), and a Get that finds the head ring empty swaps the two, so
// producers and workers meet on one lock once per swap rather than once per
// key. Every key in the head ring was pushed before every key in the tail
// ring, so keys are handed out in push order. The FIFO numbers its pushes
// (tickets) and pops. Operations on different keys therefore wait for each
// other only on the FIFO locks. Lock order:
//
//	shard (one at a time; ShutDown takes all, in index order) → fifo
//	out → fifo (a Get swapping the rings)
//	delay, upd: each alone
//
// Add and Done hold their key's shard lock and take the fifo lock to queue
// the key, recording its ticket in the key's entry. Get takes only the FIFO
// locks: popping a key puts it in flight, because a key whose ticket is below
// the FIFO's pop count is no longer in the FIFO. (With metrics on, Get then
// takes the key's shard lock to record its start time.) An Add that finds
// its key ready is deduplicated; it increments a counter before it reads
// the pop count, and Get reads that counter after it writes the pop count,
// so either the Add sees the key popped and queues it again at its Done,
// or the Add is synchronized before the Get returns and the worker sees
// what the event handler wrote before its Add. No counter is shared by all
// workers: the keys in flight are the FIFO's pop count less the Dones,
// which each shard counts under its lock (ShutDownWithDrain sums them).
// The delay goroutine adds due keys after releasing the delay lock. The
// shutdown flag is set under every shard lock and the fifo lock, so each
// Add is wholly before or wholly after ShutDown. MetricsProvider metrics are
// called from the goroutine running the operation, sometimes under a shard
// lock: they must be safe for concurrent use and must not block or call the
// queue.
//
// Waiting: a Get that finds both rings empty first spins briefly outside
// the locks (one Get at a time, yielding the processor between checks),
// then sleeps on a sync.Cond of the fifo lock. A push wakes a sleeper only
// if the ready keys (in both rings) outnumber the Gets already on their way
// to take one, so no key waits
// while a Get sleeps, and no two Gets are woken for one key. When keys
// arrive about as fast as workers take them, the spinning Get takes each
// without a sleep and wake-up; the spin is bounded (spinIterations yields),
// so an idle queue does not use CPU.
//
// Memory is bounded by the number of distinct keys: each ready ring grows
// to the largest number of keys ready at once, and each shard's table to
// the largest number of its keys ready or in flight at once; neither
// shrinks.
package ratelimit
