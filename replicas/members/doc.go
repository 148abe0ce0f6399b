// Package members keeps the membership of a group of controller replicas
// in coordination.k8s.io/v1 Leases: one Lease per replica, renewed by it,
// and every replica's view of who is live, which package replicas turns
// into an assignment of the hash space.
//
// # Protocol
//
// Replica X of group G owns the Lease named "G-X" labelled
// shardinformer.io/replica-group=G with spec.holderIdentity X. Every
// RenewInterval, Sync:
//  1. renews that Lease (spec.renewTime = now, the pairs of
//     Config.Annotations — package handover publishes its slots there —
//     and StandbyAnnotation; an Update with the resourceVersion last
//     written, so that a write by anyone else makes it a 409, after which
//     it reads the Lease and updates that version; created when absent);
//  2. lists the group's Leases and records, per Lease, when this replica
//     last saw it change (its resourceVersion);
//  3. computes the live members: the holders of the Leases seen changing
//     within their leaseDurationSeconds (Config.LeaseDuration when unset)
//     of this replica's clock, sorted, with their Leases' uids and
//     annotations and when the list was made (Round).
//
// Fenced reports whether RenewDeadline (< LeaseDuration) has passed since
// the start of this replica's last renewal that counted: from then on its
// peers may drop it, so it must stop acting on the slots it holds.
//
// Liveness is judged by when a change was observed on the local clock,
// never by comparing the Lease's renewTime with the local clock, so
// replicas need not have synchronised clocks (client-go's leader election
// does the same). A Lease first seen counts as just observed, so a
// replica that starts finds every Lease live for up to one lease
// duration, and a dead replica is dropped at most LeaseDuration plus
// RenewInterval after its last renewal. Run deletes the replica's own
// Lease when it stops (with a uid precondition), so peers drop a replica
// that leaves cleanly at their next Sync. Identities must be unique in a
// group (the pod name is a good one); two processes with one identity
// would renew one Lease and count as one member.
//
// # Quarantine: someone else made the Lease unreadable
//
// A renewal's Update fails with 409 when anyone else wrote the Lease since,
// and the list shows such a version at once. A write that left the
// annotations readable (Config.Readable, and StandbyAnnotation "true" or
// "false") — a label, another annotation, a renewal of this replica whose
// response was lost — changes nothing. One that left them unreadable
// fences the replica at once and starts a quarantine: renewals go on
// writing the annotations back, with StandbyAnnotation "true" until the
// Lease has held only the replica's own writes for RenewDeadline, then
// "false"; the first renewal that starts LeaseDuration after the first
// write with "false" counts (Fenced is false again) and ends the
// quarantine. Unreadable annotations during a quarantine start it again.
// So, under the assumption that only a Lease's holder writes readable
// annotations into it (anyone else's write leaves them as they were or
// makes them unreadable), the Lease has shown only its holder's
// annotations, not on standby, from LeaseDuration before any renewal that
// counts — or from the holder's creating it (another uid) — up to it: a
// peer that lists at least once every RenewDeadline (< LeaseDuration) has
// seen them. Package runner builds its rule for unreadable Leases on that.
// A Lease left by an earlier run of this identity, whose history this run
// cannot check, is deleted and created anew rather than taken over.
//
// # Concurrency
//
// Sync must not be called concurrently with itself or with Run; Members,
// Fenced and Self may be called from any goroutine. Config.Annotations and
// Config.Readable are called on the goroutine calling Sync. Run calls Sync
// from its own goroutine (the caller's) and Config.OnChange from there,
// after the live set changed; OnChange must not block for long, as it
// delays the next renewal. A Membership must not be copied.
//
// # Usage
//
//	m, err := members.New(members.Config{
//		Leases:   clientset.CoordinationV1().Leases("ctrl-system"),
//		Group:    "my-controller",
//		Identity: os.Getenv("POD_NAME"),
//		OnChange: func(live []string) { a, _ := replicas.Assign(live, replicas.DefaultSlots); … },
//	})
//	// OnChange sees names only; to move the fewest slots, assign from what
//	// the members claim in their Leases' annotations (Round.Leases),
//	// as package runner does with handover.Target (replicas.Sticky).
//	go m.Run(ctx, onError) // returns after deleting the Lease once ctx is done
package members
