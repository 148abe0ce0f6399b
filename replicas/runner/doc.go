// Package runner runs one replica of a controller group: membership
// (package members), the hand-over state machine (package handover) fed
// once per renewal round, one informer per slot the replica syncs or
// holds (each on a rangelw.ListerWatcher of the slot's range), and the
// gated dispatch of the active slots to one handler, with exactly the
// events package handover documents: a slot moving in arrives as
// OnAdd(obj, true) for its cached objects, then its events; a slot moving
// out leaves as OnDelete(cache.DeletedFinalStateUnknown) for every object
// the handler was told of and not told deleted.
//
// Each round's target is handover.Target of the live members and the
// slots their Leases claim (replicas.Sticky), this replica's own Lease
// included as written: once the group has converged, a join moves exactly
// ⌊Slots/N⌋ slots, all to the joiner, and a leave exactly the leaver's.
// When the round's list of Leases fails, the last Leases read stand in
// and no slot is activated on them (the claims may have changed since).
//
// # Concurrency
//
// Run's goroutine (the caller's) owns the membership, the state machine
// and the slot table; it starts one goroutine per slot informer
// (RunWithContext) and stops it, waiting for it to exit, on StopCache and
// when Run returns. Handler calls come from the informers' listener
// goroutines through one gate per active slot:
//
//   - Workers ≤ 1: each slot's gate is an ordinary handler
//     (AddEventHandler) and every call holds the Runner's dispatch mutex,
//     so Handler is never called concurrently with itself, as with
//     client-go.
//   - Workers > 1: each slot's gate is registered with
//     AddParallelEventHandler(gate, Workers) on a pipeline informer, so
//     the slot's events are split again by key across the pipeline's
//     shards and workers: calls for one key never overlap and keep their
//     order, calls for other keys run in parallel (up to Workers per
//     active slot, since each slot has its own informer).
//
// Each call holds its gate's lock for reading across the handler call; a
// slot's deactivation takes it for writing, so it waits for the calls in
// flight and no call of the slot's events follows its tombstones (which
// it delivers on Run's goroutine, one at a time). Lock order: a gate's
// lock, the dispatch mutex (Workers ≤ 1), the gate's map of keys passed,
// then the membership's (Fenced, checked at every handler call); nothing
// is locked under the latter.
//
// A key lives in the slot of its object's uid. A key deleted and
// re-created gets a new uid and so, in general, another slot: its delete
// and its add come from two slot informers (of one replica or of two) and
// are not ordered with each other — the one exception to order per key,
// inherent in ranges of uid hashes (KEP-5866).
//
// # Fencing
//
// Every handler call first checks members.Fenced: once RenewDeadline has
// passed since the last successful renewal, no event is dispatched any
// more, even if Run's goroutine is held up in a request (each Sync is
// bounded by RenewDeadline); the next round then stops every slot, with
// tombstones, and the replica syncs its slots again from scratch. Peers
// may take the slots over once LeaseDuration has passed since they last
// saw the replica's Lease change, so LeaseDuration − RenewDeadline is the
// margin for differences in clock rates. A replica killed without
// releasing its Lease leaves its claims written: its peers take its slots
// over once they have seen no renewal for LeaseDuration (the scenario
// test kills one and measures the takeover).
//
// A replica whose server ignores shardSelector logs one line, at the
// first slot informer that falls back (rangelw's own line is silenced),
// and calls Config.Hooks.Fallback once per such informer.
//
// # Cost of one informer per slot, and the merged design not built
//
// Each slot the replica syncs or holds has its own informer: one list and
// one watch per slot (Config.Slots, default 16, so ⌊16/N⌋ or ⌈16/N⌉
// watches per replica of N), and with Workers > 1 its own pipeline shards and
// workers. With server-side filtering each replica decodes only its own
// slots' objects — the scenario test measures exactly its slots' events
// and about 1/N of the bytes. Without (the fallback) every slot informer
// receives and decodes the whole stream, so a replica holding k slots
// decodes k times what one unsharded informer does (measured: 3 and 4
// times for replicas holding 3 and 4 of 8 slots), which makes the
// fallback worse than not sharding at all, except for handler work.
//
// What would remove that cost, not built: one informer for all the
// slots the replica caches, on a single rangelw selector with one range
// per maximal run of its slots (shardSelector takes several ranges), with
// one registration per active slot filtered to the slot
// (cache.FilteringResourceEventHandler on the uid hash; the informer
// hands a new registration its cache contents as initial adds, which the
// filter narrows to the slot). The cache set changes at every StartCache
// and StopCache, so the merged informer must be rebuilt then, and a
// rebuild must not disturb the active slots: build and sync the new
// informer beside the old one, then, for each active slot under its gate
// lock, diff the gate's map of keys passed against the new cache's
// objects of the slot (same resourceVersion: nothing; different:
// OnUpdate; gone: OnDelete(cache.DeletedFinalStateUnknown); new: OnAdd),
// move the gate to the new informer with its initial adds suppressed,
// and stop the old one. Cost then: one watch per replica, and one list
// of the replica's whole share per change of its cache set (instead of
// one list per moved slot); slots in transit could keep their own
// informers and be folded into the merged one once stable, so that a
// join costs one list per moved slot plus one fold. The per-slot filter
// costs a notification per event and active slot in the informer; a
// pipeline registration option that filters before the rings would
// remove that (a pipeline change, not made here).
//
// # Usage
//
//	r, err := runner.New(runner.Config{
//		Members:     members.Config{Leases: leases, Group: "my-controller", Identity: podName},
//		Inner:       lw, // the whole resource
//		NewInformer: func(lw cache.ListerWatcher) cache.SharedIndexInformer { return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}) },
//		Handler:     handler, // safe for concurrent use
//		Workers:     8,       // parallel calls per active slot, ordered per key
//	})
//	err = r.Run(ctx) // until ctx is done; hands its slots over and deletes its Lease
package runner
