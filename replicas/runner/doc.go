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
// # Concurrency
//
// Run's goroutine (the caller's) owns the membership, the state machine
// and the slot table; it starts one goroutine per slot informer
// (RunWithContext) and stops it, waiting for it to exit, on StopCache and
// when Run returns. Handler calls come from the informers' listener
// goroutines, serialised by one mutex for all slots (so Handler is never
// called concurrently with itself, as with client-go); a slot's
// deactivation takes that mutex, so no call of the slot's events follows
// its tombstones. Lock order: the dispatch mutex, then the membership's
// (Fenced, checked at every handler call); nothing is locked under the
// latter.
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
// margin for differences in clock rates.
//
// A replica whose server ignores shardSelector logs one line, at the
// first slot informer that falls back (rangelw's own line is silenced),
// and calls Config.Hooks.Fallback once per such informer.
//
// # Status
//
// One informer per slot keeps the hand-over simple but costs a list and
// a watch per slot: use few slots (Config.Slots, default 16). Merging a
// replica's stable slots into one informer, and dispatching through the
// pipeline's shards with parallel handlers instead of one mutex, are not
// done.
//
// # Usage
//
//	r, err := runner.New(runner.Config{
//		Members:     members.Config{Leases: leases, Group: "my-controller", Identity: podName},
//		Inner:       lw, // the whole resource
//		NewInformer: func(lw cache.ListerWatcher) cache.SharedIndexInformer { return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}) },
//		Handler:     handler,
//	})
//	err = r.Run(ctx) // until ctx is done; hands its slots over and deletes its Lease
package runner
