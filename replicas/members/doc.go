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
//  1. renews that Lease (spec.renewTime = now and the pairs of
//     Config.Annotations — package handover publishes its slots there —
//     an Update with the resourceVersion last seen, so a stale writer
//     gets 409 and re-reads; created when absent);
//  2. lists the group's Leases and records, per Lease, when this replica
//     last saw it change (its resourceVersion);
//  3. computes the live members: the holders of the Leases seen changing
//     within their leaseDurationSeconds (Config.LeaseDuration when unset)
//     of this replica's clock, sorted, with their annotations (Round).
//
// Fenced reports whether RenewDeadline (< LeaseDuration) has passed since
// the start of this replica's last successful renewal: from then on its
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
// # Concurrency
//
// Sync must not be called concurrently with itself or with Run; Members,
// Fenced and Self may be called from any goroutine. Config.Annotations is
// called on the goroutine calling Sync. Run calls Sync from its own
// goroutine (the caller's) and Config.OnChange from there, after the live
// set changed; OnChange must not block for long, as it delays the next
// renewal. A Membership must not be copied.
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
//	// the members claim in their Leases' annotations (Round.Annotations),
//	// as package runner does with handover.Target (replicas.Sticky).
//	go m.Run(ctx, onError) // returns after deleting the Lease once ctx is done
package members
