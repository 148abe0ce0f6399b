// Package pipeline assembles a sharded informer that satisfies client-go's
// cache.SharedIndexInformer: swap cache.NewSharedIndexInformer for
// pipeline.NewSharedIndexInformer and keep everything else, listers included.
//
//	inf := pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0,
//		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
//	inf.AddEventHandler(handler)                 // never called concurrently
//	inf.AddParallelEventHandler(reconciler, 8)   // up to 8 calls at once, ordered per key
//	go inf.RunWithContext(ctx)
//	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
//	pods := corev1listers.NewPodLister(inf.GetIndexer())
//
// # Data flow and goroutines
//
// client-go's Reflector lists and watches (pagination, resourceVersion, 410
// relist, bookmarks and WatchList are all client-go's) and writes into a store
// that hashes each key ("ns/name") to one of N shards and queues the delta in
// that shard's fifo.Queue. Every event of a key takes the same path, so order
// per key holds end to end.
//
//   - reflector goroutine (1): client-go's ListAndWatch in a backoff loop;
//     computes keys, numbers the writes (stream positions, below), routes
//     them. Its resync goroutine calls Resync.
//   - drain role (one per shard): the only writer of the shard's
//     index.Partition and the only producer of the shard's outlets. It pops a
//     batch of keys (a segment of the stream, below), applies their deltas to
//     the partition, pushes one notification per delta and listener (under
//     Block only once the batch is Done), reports the batch Done to the queue,
//     which moves the shard's part of the store watermark, then flushes each
//     touched ring once and wakes parked workers. Before it applies a batch
//     it has the partition prefetch the batch's keys
//     (index.Partition.Prefetch), so that the cache misses of a large cache's
//     item map overlap rather than come one per key. It is held, under the
//     shard's mutex, by the shard's drain goroutine, which parks on a
//     doorbell when nothing is pending, or by the reflector goroutine: a
//     watch event reaching a shard
//     whose drain goroutine is parked is applied and published by the
//     reflector itself, which saves a goroutine handoff per event at the
//     rates where the shard keeps up (on a busy machine a woken goroutine
//     waits in the scheduler's run queue behind whatever else is runnable).
//     When such a pass woke a parked listener worker, the reflector yields
//     (runtime.Gosched) before it takes the next event: a woken goroutine
//     waits in its waker's run queue until the waker blocks, and a reflector
//     with events waiting does not block, so the handler would otherwise wait
//     for the reflector to catch up with the stream. A yield that took
//     over a millisecond (the scheduler ran CPU-bound goroutines, such as
//     cache readers, for whole time slices first) stops the yields for the
//     next 100 ms. Not under Block, where the drain may wait for ring space.
//     A listener worker waiting for the store watermark takes the role too,
//     of a shard that holds the watermark back and whose role is free (its
//     drain goroutine rung but not yet run), and applies a batch itself
//     (worker.help): on a busy machine it would otherwise wait for that
//     goroutine to be scheduled and then to be scheduled again itself. Not
//     under Block either.
//   - listener worker (one per handler, W for a parallel handler): the only
//     consumer of its outlets, one per shard. It takes ring items in batches,
//     calls the handler for those the store watermark covers, keeps the rest
//     of an outlet's batch until it does (going on with its other outlets),
//     and parks on its doorbell when every outlet is empty or waits for the
//     watermark, so an idle informer uses no CPU. A parallel handler's key goes
//     to worker hash(key) mod W, so calls for one key never overlap and stay
//     ordered.
//   - sync watcher (1): closes the informer's synced channel once every shard
//     has applied its initial list.
//   - mutation detector (1): client-go's cache.MutationDetector, which runs
//     only with KUBE_CACHE_MUTATION_DETECTOR=true (see below).
//
// RunWithContext starts all of these and returns after every one has exited,
// including the workers of handlers removed earlier that were still inside a
// call. When its context is done it closes the queues and releases drain
// roles waiting for ring space; IsStopped turns true once the reflector and
// the drain goroutines have exited (nothing writes the cache any more: where
// client-go's turns true, once its controller has returned), and only then do
// the listener workers stop. Every parking goroutine uses package
// internal/doorbell, which states the memory-order contract of the wake-ups
// once.
//
// # Cross-key order: the store watermark
//
// client-go applies and delivers its one stream in order, so once a handler
// has seen a write, the cache holds every write before it, of every key:
// controller-runtime's read-your-writes client and "I saw it, so the lister
// has the rest" rely on it, and GetIndexer().LastStoreSyncResourceVersion
// names the newest write applied. Shards apply in parallel, so the informer
// keeps a store watermark (watermark.go):
//
//   - Stream positions: the reflector goroutine numbers its writes to the
//     store 1, 2, 3, … as they reach it. An Add, Update or Delete is one
//     position in its key's shard; a Replace (a relist, the initial list
//     included) or a Bookmark is one position in every shard. Each is queued
//     with a fifo.Mark of its position; a Resync is no write of the stream.
//   - Per shard: its queue publishes the oldest position it has not applied
//     (fifo.Queue.Oldest): the shard holds every write it was given below it.
//     The drain role takes segments (fifo.Queue.PopSegment): a batch goes on
//     until no key left in the queue has a write at or before the batch's
//     newest, so once it is Done the shard holds every one of its writes up to
//     there. A relist's part is one batch.
//   - Globally: the watermark is min(newest position handed out, every
//     shard's oldest pending position - 1); a shard with nothing pending
//     does not hold it back. Every write up to it is in the cache, in every
//     shard. It is computed from atomics (one per shard, padded, plus the
//     newest position) without a lock; its memory-order contract is in
//     watermark.go: a position loaded p happens after every partition write
//     of the writes up to p.
//   - Delivery: each notification carries its write's position (a key's
//     newest in its batch; a joining handler's adds, the shard's newest
//     applied) and reaches its handler only once the watermark has reached
//     it. A worker that waits registers with the watermark, and whoever moves
//     it (the reflector after a write, a drain role after Done) wakes the
//     workers it now covers; with none waiting that costs one atomic load.
//     Per key, order is as before. A drain role reports a batch Done before
//     it publishes the batch's rings, so a worker waits, if at all, for other
//     shards; under Block it also pushes only after Done, since a push waits
//     for a worker and the worker for the watermark.
//   - LastStoreSyncResourceVersion is the resource version of the write at
//     the watermark, as client-go's store records it: a watch event's
//     object's (add, update, delete), a relist's or a bookmark's own; a resync
//     changes nothing. Looking it up takes one queue's mutex (each mark keeps
//     the version before it), or, when the writes moved on meanwhile, every
//     queue's at one instant; never on the path of events.
//
// What it costs: a handler waits for the slowest shard to catch up with the
// writes before the one it is handed; a relist's notifications wait until
// every shard has applied the whole list, as client-go's wait in its
// listeners' buffers while it replaces its store, so for a list larger than a
// ring they are kept in the overflow (a list larger than the backlog budget
// per handler coalesces, which for an initial list changes nothing the
// handler sees). The cost, measured beside client-go
// (bench/results/watermark.md): update throughput without cache readers
// unchanged or better (a gated worker applies the lagging shard's batch
// itself), with readers somewhat lower, write-to-handler latency slightly
// higher, an initial sync to one handler slower, to four handlers and
// CPU-bound handlers unchanged. WithRelaxedOrder restores
// shard-by-shard delivery and those figures: a handler may then see a write
// before the cache holds earlier writes of other shards.
//
// # Handlers and full rings
//
// Each (shard, worker) pair has a bounded lock-free single-producer ring
// (package ring). When a ring is full the listener's FullRingPolicy applies:
//
//   - Buffer (default): the notification goes to the outlet's overflow, where
//     it is kept as produced; the worker handles the ring (older) first, then
//     the overflow in order. The handler receives exactly what client-go
//     delivers: every OnAdd, OnUpdate(old, new) and OnDelete, in order per
//     key. This holds while the listener's backlog (notifications kept in its
//     overflows, over all shards and workers) is below its budget,
//     WithBacklogBudget (DefaultBacklogBudget = 262,144 notifications). At the
//     budget the listener starts coalescing: an overflow that spills again
//     merges its new notifications per key, after what it already kept
//     exactly, until the worker has taken the merged part; then every
//     notification is kept again. Observer.Coalescing reports each switch
//     (promadapter: shardinformer_listener_coalescing), and each is logged
//     once. Memory stays within the budget plus one entry per key, and a
//     stalled handler never holds up the shard or other handlers.
//   - Coalesce: Buffer with a budget of zero, merging from the first
//     notification that does not fit. Memory is bounded by the number of
//     keys.
//   - Block: the drain goroutine waits for space, and once its queue holds
//     4×batch-size deltas the reflector waits as well, so memory stays
//     bounded (plus one batch's notifications per shard, pushed once the
//     batch is applied; a relist's part is one batch) and the pressure
//     reaches the watch stream; every notification is delivered; the shard's
//     other handlers wait too.
//   - Grow: Buffer with no budget: every notification is kept, like
//     client-go's listeners, and memory grows with the backlog.
//
// While coalescing, a handler receives, for each key it fell behind on and
// after the notifications kept exactly, one step from the state it was last
// told about to the latest state:
//
//	it held the key   the key exists now   it receives
//	no                no                   nothing: the key came and went
//	no                yes                  OnAdd(latest), with the initial-list flag of the first add
//	yes               no                   OnDelete(final state, or the DeletedFinalStateUnknown)
//	yes               yes                  OnUpdate(the object it last saw, latest): also for a key
//	                                       deleted and re-created, the case client-go documents for a
//	                                       missed delete; OnDelete then OnAdd when the object it held
//	                                       is unknown (a tombstone without one)
//
// so it always ends at the latest state of every key, as a level-triggered
// controller needs.
//
// A handler panic is recovered, logged with the key and counted
// (Observer.HandlerPanicked) and delivery goes on with the next notification;
// WithCrashOnPanic restores client-go's crash.
//
// # Semantics kept from client-go
//
// Keys are cache.DeletionHandlingMetaNamespaceKeyFunc keys; Add/Update/Delete
// follow processDeltas (an update of an unknown key is an add; a delete is
// published with the object or a cache.DeletedFinalStateUnknown from a
// relist); updates that keep the resourceVersion are resyncs and reach only
// handlers whose resync period has elapsed (every handler until the first
// resync check, so without resync periods a relist reaches all of them); a handler added after Run first
// receives the cache contents as initial-list adds; a registration's
// HasSynced turns true once the informer has synced and the handler has
// processed every initial-list add; RemoveEventHandler, SetTransform,
// SetWatchErrorHandler(WithContext), AddIndexers (also after Run) and
// LastSyncResourceVersion behave as in client-go.
//
// The cache mutation detector is client-go's: with the environment variable
// KUBE_CACHE_MUTATION_DETECTOR=true the drain roles hand every object they
// store to cache.NewCacheMutationDetector, which keeps a deep copy of it for
// a few minutes, compares the two every second and panics ("cache
// <informer name> modified", after a side-by-side diff naming the object)
// once a handler, transform or reader has modified a cached object in place.
// Parts the wire package's diet shares between objects are covered too: a
// change through one object shows in its own copy's diff, and the wire
// checks the parts it hands out again (package wire, "Aliasing contract").
//
// One difference follows from sharding. isInInitialList is tracked per shard
// (an add is initial while its shard is still applying the first list).
// Cross-key order and GetIndexer().LastStoreSyncResourceVersion are
// client-go's (above), unless WithRelaxedOrder gives up the first; IsStopped
// turns true when client-go's does.
//
// # Allocation and garbage collection
//
// After the sync, an event allocates what its decoder makes (the new
// object) and about 100 bytes in 3 objects on the informer's own path (the
// partition's new version record, the index functions' value slices), where
// client-go's informer allocates about 430 bytes in 11 objects:
// notifications travel by value in the rings and the queues reuse their
// buffers. The library does not collect by itself. The last collection of a
// growing initial list may run while the cache holds half of it, so right
// after the sync the heap can be close to the next goal and the first
// collection falls into the first events; a collection forced before
// HasSynced avoids that but delayed a 100k-pod sync by 5–9 s, so it was
// measured and not kept (bench/results/informer-latency.md).
//
// # The compact store
//
// Under WithCompactStore the cache holds package compact's Objects (a
// pod's protobuf as a delta against a similar pod's, in bytes the collector
// does not scan). Objects are encoded by the transform the reflector and
// the queues apply, after the informer's own, so the reflector's WatchList
// store and the queues hold them too; the partitions store them and decode
// them only for index functions other than the namespace index; the
// listener workers decode a notification's objects right before the
// handler is called (a decode, tens of microseconds a pod, moves from the
// producer to the workers, in parallel); readers of GetStore and GetIndexer
// get decoded objects. The codec keeps the objects it decoded or encoded
// last (compact.Config.Decoded), so a handler and a lister reading the
// object just delivered share one decoded object; OnUpdate's old object is
// decoded again once it has left them, like the new one
// (compact.Codec.DecodeLike: a pod's unchanged spec or status is shared). Notifications, overflow backlogs and
// late handlers' initial adds carry Objects, not decoded objects.
//
// # Bad input
//
// An object without a key is rejected with a cache.KeyError (watch events:
// the reflector logs it; relists: the object is left out, the rest applied,
// and the error logged). A failing transform leaves the object's cached state
// untouched. A failing index function stores the object but leaves it out of
// that index, with a logged index.ErrIndexFunc error. Every rejection is also
// reported to Observer.Dropped. Dropped watches, 410 Gone and relists are the
// reflector's, with client-go's backoff; SetWatchErrorHandler sees the errors.
//
// # Locks
//
// Lock order: Informer.mu, then a shard's drain-role mutex, then its ctl
// mutex, then a queue's mutex, then an outlet's overflow mutex, then its
// listener's backlog mutex. The store watermark's mutex (its waiting workers
// and the last resource version looked up) comes after a drain-role mutex (a
// drain role that moved the watermark while workers wait) and before queue
// mutexes: LastStoreSyncResourceVersion holds it while it reads one queue's
// marks, or, on its slow path, every queue's at once, taken in shard order.
// Nothing else holds two queues' mutexes, and nobody takes the watermark's
// while holding a queue's. No lock is held while a handler runs; under Block
// the drain role is held while waiting for ring space (which the worker frees
// without locks).
package pipeline
