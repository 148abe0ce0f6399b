// Package fifo is one shard's delta queue: client-go's DeltaFIFO semantics,
// split so that the queue lock is never held while a batch is applied.
//
// The reflector (through the pipeline's router) writes Add, Update, Delete,
// Replace and Resync; the shard's drain goroutine Pops batches of keys, applies
// them to the shard's index partition and publishes notifications, then calls
// Done. Between Pop and Done the popped keys are "in flight": Replace, Resync
// and Delete treat an in-flight key as still pending, which is what DeltaFIFO
// gets by holding its lock across processing.
//
// # Semantics kept from client-go's DeltaFIFO
//
//   - Each key has a list of deltas, oldest first; keys leave the queue in the
//     order they first entered it.
//   - Two consecutive deletions of a key collapse into one, keeping the one that
//     is not a DeletedFinalStateUnknown.
//   - Replace queues Replaced deltas for the new list and a Deleted delta with a
//     cache.DeletedFinalStateUnknown for every key that is queued, in flight or
//     known to the partition, absent from the list, and not already going away.
//   - Resync queues a Sync delta for every known key with nothing pending.
//   - Delete of a key that is not queued and will not exist once everything in
//     flight is applied is dropped: it was already reported, presumably by a
//     relist.
//   - The transform runs once per object entering the queue, never on a
//     tombstone or a Sync.
//   - HasSynced becomes true once the first Replace (or any write before it) has
//     happened and every key queued by that Replace has been popped and Done;
//     if that Replace carried a mark (ReplaceAt), once Done has reported the
//     mark too, so that a shard whose part of the list is empty is synced
//     only when its consumer has seen the list's position.
//
// # Stream positions and marks
//
// The writer may number its writes: WriteAt and ReplaceAt queue a write with a
// Mark (its position Seq, increasing over the queue's marks, and two resource
// versions the queue only keeps), and Mark records one for a write that queues
// nothing (a bookmark). Done reports the newest mark whose write, and
// everything queued before it, has been applied. Oldest returns the position
// of the oldest mark not yet reported (math.MaxUint64 for none) without a
// lock; OldestMark and LastMark return the oldest pending and the newest mark.
// The pipeline builds its store watermark on these: it polls every shard's
// Oldest, and names LastStoreSyncResourceVersion from one mark.
//
// Each popped Item carries Pos, the position the key reaches once the item is
// applied (its newest marked write; an unmarked delta, such as a Sync, counts
// at the newest mark before it). PopSegment takes a segment of the stream:
// after the limit it goes on until none of the keys left has a marked write at
// or before the batch's largest Pos, so once the batch is Done, Oldest is past
// it. A key written again while queued keeps its place (DeltaFIFO's order),
// which is why a segment may be longer than the limit: it draws in every key
// queued before the key's newest write, and a Replace's part is one segment.
//
// # Concurrency
//
// Any number of goroutines may write. One consumer at a time calls Pop and
// Done (the pipeline's shard: its drain goroutine, or the reflector goroutine
// draining an idle shard itself; the role moves between them under the
// shard's mutex). All state is guarded by one mutex, held only for map and
// slice operations; the partition passed as Known is read under it (reads take
// no lock there). The queue never blocks its consumer: Pending says whether
// there is work, and the consumer parks as it sees fit, woken by its writers
// (the pipeline parks its drain goroutine on a doorbell it rings after every
// write). Only under MaxQueued do writers wait, for Pop.
package fifo
