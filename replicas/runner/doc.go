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
// Each round's target is handover.Target of the live members whose Leases
// can be read (below) and the slots those Leases claim (replicas.Sticky),
// this replica's own Lease included as written: once the group has
// converged, a join moves exactly ⌊Slots/N⌋ slots, all to the joiner, and a
// leave exactly the leaver's. When the round's list of Leases fails, the
// last readings stand in and no slot is activated on them (the claims may
// have changed since).
//
// # Leases that cannot be read
//
// A Lease may carry slot annotations its readers cannot decode: written
// over by someone else (a person, a tool, a controller that does not know
// them), or by a replica with another slot count. Each list gives one
// reading per live member (leases.go):
//
//   - readable (handover.Decode succeeds, members.StandbyAnnotation
//     "false" or absent): a member of the target, its claims as written;
//   - on standby (StandbyAnnotation "true": the member is in members'
//     quarantine, hence fenced): not a member, its claims as written;
//   - unreadable: not a member, and counted as synced nowhere and
//     claiming every slot until its Lease's LeaseDuration has passed since
//     the first list of the current stretch, then as claiming nothing. A
//     stretch is a run of lists, each showing the Lease (one uid)
//     unreadable or on standby and each ending less than RenewDeadline
//     after the start of the one before; a readable list ends it, a longer
//     gap or another uid starts a new one;
//   - written for another slot count (handover.ErrSlotCount): not a
//     member, claiming every slot for as long as it is live. Two
//     replicas of different slot counts each read the other so, and if
//     either let go of the other's claims both would dispatch everything;
//     a group must not mix slot counts, and this blocks every activation
//     (logged) until it does not.
//
// Leaving such a member out of the target at once gives its quota to the
// readable members, which start syncing those slots at that list.
//
// Why no slot is dispatched twice. Package members' quarantine gives,
// under the assumption that only its holder writes readable slot
// annotations into a Lease (anyone else's write leaves them as they were
// or makes them unreadable): every renewal of a replica P that counts
// (keeps P unfenced for RenewDeadline from its start) comes after a window
// W of at least LeaseDuration in which P's Lease showed P's own
// annotations, not on standby — or P created the Lease (a new uid) and W
// began then. Suppose replica Q lets go of P's claims on a list ending at
// T: the list showed P unreadable, and its stretch began at t0 ≤ T −
// LeaseDuration. Let r be P's last renewal that counted before T, and W
// the window around it, up to the write that made the Lease unreadable.
// No list of the stretch fell in W (Q would have read P as readable), nor
// did the last one fall before W (r would then be after T). If the
// stretch's first list fell after W, the Lease was made unreadable after r
// and before t0: P was fenced at r + RenewDeadline < t0 + LeaseDuration ≤
// T. Otherwise one list of the stretch fell before W and the next after it
// (with a new uid, none can fall before W): they are further apart than W,
// at least LeaseDuration > RenewDeadline, so they are not in one stretch.
// So P is fenced at T, and the same holds at every later list of the
// stretch; when P counts renewals again, it reads Q's claims before it
// activates anything (handover's rule 1). A list showing P on standby
// means P was fenced when it wrote that version and has not counted a
// renewal since (one needs LeaseDuration not on standby first), so Q may go
// by its claims as written — at once. Durations on different clocks are
// compared within the margin LeaseDuration − RenewDeadline, as for
// fencing.
//
// The bound. Once a member's Lease is made unreadable and stays so, each
// readable replica leaves it out of the target at its first list that shows
// it, at most a round after the write, and its claims stop counting
// LeaseDuration after that list (or at once, in a list that shows it on
// standby): no slot then waits more than LeaseDuration + 3 ×
// RenewInterval after the write that made the Lease unreadable before a
// readable replica dispatches it (its claim is written at the next renewal
// and activated on the list after it), provided rounds run every
// RenewInterval and the slots' caches have synced by then (they start at
// the first list). The member itself fences at its next renewal or list
// (package members) and hands its slots over with tombstones; it takes
// part again RenewDeadline + LeaseDuration after its Lease stopped being
// made unreadable. For the last LeaseDuration of that it is readable, a
// member again, and still fenced: slots the target gives it stay with
// their owners (an active one is let go only once it has synced), and a
// free one waits for it at most that long. TestUnreadableLease measures these with a foreign
// writer that garbles a replica's Lease every 20ms, while the replica runs
// (its peers read it on standby now and then, and take over sooner) and
// after it was killed (they never do: LeaseDuration + 3 rounds).
//
// # Concurrency
//
// Run's goroutine (the caller's) owns the membership, the state machine,
// the Lease reader (leases.go) and the slot table; it starts one goroutine per slot informer
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
// passed since the last renewal that counted (at once when someone else
// made the replica's Lease unreadable: members' quarantine), no event is
// dispatched any more, even if Run's goroutine is held up in a request
// (each Sync is bounded by RenewDeadline); the next round then stops every
// slot, with
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
