// Package handover is the state machine that moves slots of the hash space
// (package replicas) between controller replicas without two replicas
// ever dispatching the same slot to handlers at once, and without leaving a
// slot undispatched while its old owner could still serve it. It is pure:
// the shell (package runner: one control goroutine per replica) feeds it
// one View per membership round and carries out the Actions it returns.
//
// # Per slot, per replica
//
//	Idle ──(target owner)──► Syncing ──(cache synced)──► Synced ──(no live claim)──► Claimed ──(claim seen written, still no other claim)──► Active
//	  ▲                         │                          │  ▲                        │                                                       │
//	  └──────(not the target owner: stop the cache)────────┘  └──(another claim: withdraw)                                                       │
//	  └────────────(not the target owner, and the target owner is live and publishes the slot synced: deactivate, stop the cache)──────────────┘
//	  any phase ──(Fenced)──► Idle (deactivating first if Active)
//
// A replica publishes in its Lease (annotations written by each renewal)
// the slots it has synced (phase ≥ Synced) and the slots it claims
// (phase ≥ Claimed). One round of the shell is: members.Sync (renew the
// Lease with the current Published, then list the Leases), build a View
// from the live members' Leases, Step, carry out the actions in order.
//
// # Why no slot is dispatched twice
//
//  1. A replica activates a slot only on a view read after its claim was
//     written (View.ClaimsVisible) that shows no claim by another live
//     member, and its claim stays written until after it has deactivated.
//     Of two replicas that claim the same slot, the one whose claim was
//     written second reads the first one's claim (the API server's writes
//     and consistent lists are linearizable), so it cannot activate while
//     the first might; the first, if it read before the second claim was
//     written, may activate.
//  2. A claim counts while its holder is live in the reader's view. A
//     replica drops a peer after LeaseDuration without an observed
//     renewal; the peer itself must stop dispatching (View.Fenced) when
//     RenewDeadline has passed since it sent its last successful renewal
//     — RenewDeadline < LeaseDuration, measured from before the request,
//     so that the holder fences before any peer can have dropped it, as
//     in client-go's leader election (which assumes clock rates agree
//     within the margin, not clocks).
//  3. Owners need not agree between views. The target is
//     replicas.Sticky of the live members from the slots they claim
//     (Target), so it depends on the claims a view shows as well as on the
//     membership: a replica taking a slot it is given, or letting go of
//     one it is not, leaves the target unchanged, but views of different
//     memberships, or of claims made under an older view, can differ, and
//     two replicas, each live in the other's view, can both hold a slot as
//     their own (TestModel counts such steps and fails if it sees none).
//     Rules 1 and 2 do not depend on owners agreeing. The withdraw
//     transition is a defence: TestModel passes with and without it, and
//     fails without the claim-then-read rule.
//
// # Converging, and not oscillating
//
// Once membership stops changing and every replica reads the Leases
// again, all compute the same target, and every step a replica then takes
// follows it (it claims only slots the target gives it, and lets go only
// of slots it does not), which leaves the target unchanged: each slot
// moves at most once more, to its target owner, and the target is then
// held — a fixed point of Sticky, exactly balanced. A claim left by an
// older view (a rival) makes the target differ until it is withdrawn or
// its holder let go. Since the target follows the claims, a converged
// group keeps its slots: a join moves exactly ⌊Slots/N⌋ slots, all to the
// joiner, and a leave exactly the leaver's (package replicas). TestModel
// checks all of this after each random schedule: rounds until one changes
// nothing (at most 7 over 20,000 seeds), no slot activated twice, every
// replica's target the same and equal to what is claimed and dispatched;
// then a join and a clean leave, each moving exactly the least.
//
// A peer whose annotations cannot be read (Decode) is the shell's to
// judge: package runner leaves it out of Target's members at once (its
// quota goes to the others), counts it as claiming every slot for its
// LeaseDuration and then as claiming nothing — which keeps rules 1 and 2,
// given package members' quarantine (runner's documentation has the
// argument); a peer written for another slot count (ErrSlotCount) claims
// every slot while it is live.
//
// # Why no slot is left behind
//
// An Active replica lets a slot go only when the slot's target owner is
// live and publishes it synced: the new owner has listed it and follows
// its watch. Until then the old owner keeps dispatching, so a new owner
// that cannot sync (or crashes) costs no availability. The gap between
// the old owner's deactivation and the new owner's activation is at most
// two membership rounds (the old owner's unclaim is written at its next
// renewal; the new owner claims on the next view and activates on the one
// after) — events in the gap are not lost: they are in the new owner's
// cache, and dispatched as its initial adds. When a member leaves or dies,
// its slots have no old owner: after it is dropped (or deletes its Lease)
// the new owners sync, claim and activate.
//
// # What a handler sees
//
// Range moves in (Activate): for each object in the slot's cache at that
// moment, OnAdd(obj, isInInitialList=true) — as for a handler added to a
// running informer — then OnAdd/OnUpdate/OnDelete for the slot's later
// events, in order per key. The cache has synced before, so this is the
// slot's complete state at activation.
//
// Range moves out (Deactivate): no more events of the slot are dispatched
// (the cache may still be updated until it is stopped, but handlers no
// longer hear of it); then, for each object the handler was told of
// (added or updated) and not told deleted — the slot's cached objects,
// once the activation's adds have been delivered —
// OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/name", Obj: the last
// state the handler saw}) — the tombstone client-go uses for an object that disappeared
// from view without a known deletion, so a handler can tell "no longer
// mine" from "deleted" and must not act on the server (for example remove
// finalizers) because of it. Listers of the replica's informer stop
// returning the slot's objects once its cache is stopped, right after.
//
// Fenced: as moves out, for every active slot.
//
// A key whose last event was handled by the old owner may be handled again
// by the new one (as its initial add): hand-over is at-least-once per key
// state, never concurrent — what a level-triggered controller needs.
//
// Inside a replica, each slot's events can be split again across the
// pipeline's shard goroutines and workers by key (package runner,
// Workers > 1): the slot is the unit of hand-over, the shard the unit of
// parallelism. Deactivation waits for the slot's calls in flight before
// its tombstones.
//
// # Status
//
// This package: the state machine (Step, Published, the Lease annotation
// encoding) and its randomized model test (model_test.go: joins, clean
// leaves, crashes, partitions with fencing, expiries, stale views; safety
// at every activation; after quiescence, convergence to one sticky target
// without oscillation, then exact-least movement on a join and a
// leave). The shell is package runner (one informer per slot; dispatch
// serialised by one mutex, or parallel per key on pipeline informers),
// tested with three in-process replicas against apisim (joins, a clean
// leave, a killed replica whose Lease expires) and, under the e2e build
// tag, against a real API server. Not done: one informer per replica
// instead of per slot (package runner documents the design and its
// cost).
package handover
