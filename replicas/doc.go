// Package replicas assigns the 64-bit hash space of shardselector.Hash
// (FNV-1a 64 of metadata.uid) to the live replicas of a controller. It is
// pure: no I/O, no clock, no goroutines. Around it:
//   - replicas/members: membership in coordination.k8s.io Leases (who is live);
//   - replicas/rangelw: a ListerWatcher that lists and watches only given
//     ranges (shardSelector, with client-side filtering as fallback);
//   - replicas/handover: the state machine that moves slots between
//     replicas without double dispatch, and the events handlers see;
//   - replicas/runner: one replica, the above put together.
//
// # Scheme: fixed slots, rendezvous weights, exact quotas, sticky
//
// The space is cut into Slots equal slots (a power of two, DefaultSlots =
// 256): slot s holds the hashes whose top log2(Slots) bits are s. Every
// (member, slot) pair has a weight w(member, slot), a 64-bit mix of
// FNV-1a 64 of the member's name and the slot number, as in rendezvous
// (highest-random-weight) hashing. With N members a member's quota is
// ⌊Slots/N⌋ slots, or ⌈Slots/N⌉ for Slots mod N of them.
//
// Sticky takes the live members and what each holds (the slots it claims
// in its Lease, package handover) and:
//
//  1. resolves a slot held by several members to the one of heaviest
//     weight for it (the slots of non-members are free);
//  2. gives the ⌈Slots/N⌉ quotas first to the members holding more than
//     ⌊Slots/N⌋, by decreasing FNV-1a 64 of the name (then the smaller
//     name) — the rank depends on whether a member holds more, not on how
//     many more;
//  3. lets every member keep its held slots up to its quota, its heaviest
//     pairs first;
//  4. gives the other slots (held by no member, or shed as surplus) by
//     taking the pairs (member, slot) by decreasing weight
//     (equal weights: the smaller name, then the smaller slot): a pair's
//     slot goes to its member if the slot is still free and the member
//     below its quota, or at ⌊Slots/N⌋ while ⌈Slots/N⌉ quotas remain
//     unclaimed and it held no more than ⌊Slots/N⌋ (the first members to
//     fill up get the extra slots).
//
// Every slot gets an owner: the quotas sum to Slots, so a slot still free
// at the end would leave some member below its quota, or a remaining
// ⌈Slots/N⌉ quota and a member that could take it, when the slot's pair
// came. Assign is Sticky with nothing held: bounded-load rendezvous
// hashing with the bound at exactly ⌈Slots/N⌉.
//
// Why this scheme:
//   - Deterministic: the owner of a slot is a function of the member set
//     and of who holds what — not of the order of either — so replicas
//     that read the same Leases agree without talking to each other.
//   - Exactly balanced: every member owns ⌊Slots/N⌋ or ⌈Slots/N⌉ slots,
//     so each decodes and holds ⌈Slots/N⌉/Slots of the space at most: with
//     the runner's 16 slots 8/16 for 2 members, 6/16 for 3 (plain
//     rendezvous hashing, used before, split 16 slots 10/6 and 8/4/4 for
//     the members of bench/results/replicas-scale.txt, and measured over
//     1,000 random sets of names with 256 slots its largest share exceeded
//     the mean by 9% at the 90th percentile for 2 members, 16% for 3, 27%
//     for 5, 45% for 10).
//   - The least movement, proven below.
//   - A fixed point: Sticky of its own result is that result, and a member
//     taking a free slot it is given, or letting go of a slot it is not
//     given, leaves the result unchanged — so replicas reading the Leases
//     at different moments of a hand-over compute the same target, and no
//     slot is sent back and forth.
//   - Slots rather than a ring of points: a slot is the unit of hand-over
//     (a range moves as a whole, and its new owner syncs it as a whole), and
//     a fixed count keeps the number of ranges and the selector's length
//     bounded whatever the membership: a member's slots are merged into
//     maximal ranges, one shardRange each.
//
// # Movement: exactly the least
//
// Let member m hold h(m) slots (after step 1), f = ⌊Slots/N⌋, r = Slots
// mod N. Any exactly balanced assignment gives m a quota q(m) of f or
// f+1, r of them f+1, and leaves m at most min(h(m), q(m)) of its slots,
// so at least Slots − Σ min(h(m), q(m)) slots change hands, and
// Σ min(h(m), q(m)) = Σ min(h(m), f) + #{m : q(m) = f+1, h(m) > f}
// ≤ Σ min(h(m), f) + min(r, #{m : h(m) > f}). Step 2 reaches that bound
// and step 3 keeps min(h(m), q(m)) of each member's slots (a member that
// gets an extra quota in step 4 holds at most f and keeps all), so only
// the others move: Sticky moves the fewest slots of any exactly balanced
// assignment, from any holdings — free, stale or overlapping.
//
// From an exactly balanced assignment of N members (what the replicas
// hold once converged):
//   - a join moves exactly ⌊Slots/(N+1)⌋ slots, all to the joiner, the
//     least any balanced scheme can: with f' = ⌊Slots/(N+1)⌋ and r' =
//     Slots mod (N+1), either ⌊Slots/N⌋ > f' and every old member holds
//     more than f' (and N ≥ r'), or ⌊Slots/N⌋ = f' and the Slots mod N =
//     r' + f' old members holding f'+1 are at least r'; either way the r'
//     larger quotas go to old members that hold more than f', every old
//     member keeps its quota, and the joiner's quota, f', is all that
//     moves;
//   - a leave moves exactly the leaver's slots: with f” =
//     ⌊Slots/(N−1)⌋ ≥ ⌊Slots/N⌋ = f, a member that stays holds f or f+1;
//     if f” > f none holds more than its quota, and if f” = f the at
//     most Slots mod N members holding f+1 all get the Slots mod (N−1) =
//     Slots mod N + f larger quotas, so every member that stays keeps
//     everything.
//
// TestMovement checks these equalities, and the general one against a
// brute force over the quota choices, over random member sets and
// holdings (free, stale, overlapping) for N = 1..10 and 16, 64 and 256
// slots; TestModel along random walks of joins and leaves; TestFollow the
// fixed-point property over random holdings and hand-over orders. Assign,
// which ignores holdings, moves more on the same joins (median and
// maximum as a multiple of the least, over 300 sets per N
// (-movement-sets=300): at 16 slots
// 1.20–2.00× and up to 7×, at 256 slots 1.04–1.39× and up to 1.72×; go
// test ./replicas -run TestMovement -v): with exact quotas a third
// member's presence can move a slot between two members that both stay.
//
// The fixed-point property, in brief: a slot a member lets go of was
// surplus, not among those it keeps, and its rank in step 2 does not
// change (it still holds more than ⌊Slots/N⌋ if it had the larger quota,
// and dropping to ⌊Slots/N⌋ from outside the ranks changes no one's); a
// member taking a slot given to it in step 4 was below its quota (it
// enters the ranks of step 2 only when step 4 had given it the larger
// quota); and taking out of step 4 a pair it matched leaves the other
// matches as they were.
//
// Cost: Sticky sorts the pairs of the members with room and the slots not
// kept — none once converged; Assign, all N·Slots pairs (a radix sort):
// about 6 µs for 16 slots and 3 members, 0.14 ms for 256 and 10, 20 ms
// for 2048 and 100 (BenchmarkAssign on a 2-core machine at load average
// 24); the runner calls Sticky once per membership round.
//
// # Leases that cannot be read
//
// A member whose Lease's slot annotations cannot be read (overwritten by
// someone else) is treated as synced nowhere and left out of the members
// given to Sticky at once, so its quota goes to the readable members; its
// claims count as covering every slot for its LeaseDuration after the
// first list that shows it so, and then as covering none. The member
// itself fences at its next renewal (a 409) and stays fenced until its
// Lease has held only its own writes for RenewDeadline (on standby: out of
// the members) and then LeaseDuration. Bound: no slot waits more than
// LeaseDuration + 3 × RenewInterval after the write that made the Lease
// unreadable before a readable member dispatches it (rounds on time,
// caches synced), and no slot is dispatched twice meanwhile — package
// runner states the rule and its argument, package members the
// quarantine. A member written for another slot count is the exception: it
// counts as claiming every slot for as long as it is live.
//
// # Usage
//
//	a, err := replicas.Assign([]string{"ctrl-0", "ctrl-1", "ctrl-2"}, replicas.DefaultSlots)
//	b, err := replicas.Sticky(live, replicas.DefaultSlots, held) // held: member → slots it claims
//	sel, ok := a.Selector("ctrl-1") // ListOptions.ShardSelector = sel.String()
//	owner, _ := a.Owner(shardselector.Hash(string(pod.UID)))
//	moves, err := replicas.Moves(before, after) // the slots that change hands
//
// An Assignment is immutable once built and safe for concurrent use; it
// may be copied.
package replicas
