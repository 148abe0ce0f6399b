package ring

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/shardinformer/shardinformer/internal/doorbell"
)

// ErrCapacity is returned, wrapped with the offending value, by New for a
// capacity that is not positive or is larger than the supported maximum.
var ErrCapacity = errors.New("ring: capacity must be positive")

// maxCapacity bounds New's capacity so that rounding up to a power of two
// cannot overflow and a typo cannot ask for an absurd allocation.
const maxCapacity = 1 << 30

// cacheLinePad is the size of the gaps between groups of fields that are
// written by different goroutines. 64 bytes is the cache-line size of every
// platform we run on; we pad 128 because Intel's adjacent-line prefetcher
// pulls lines in pairs, so two hot fields 64 bytes apart can still interfere.
// Each gap is a whole pad on its own (not "pad minus the group's size"), so
// two fields of different groups never share a line whatever the alignment of
// the allocation. TestLayout checks this.
const cacheLinePad = 128

// Ring is a bounded single-producer/single-consumer FIFO of T with batch
// publication and a doorbell for each side.
//
// Concurrency: at any time at most one goroutine may call the producer methods
// (Push, Flush, Free, WaitSpace, Close) and at most one goroutine may call the
// consumer methods (Pop, Wait); the two may run in parallel. Cap and Len may be
// called from any goroutine. The producer and consumer roles may move between
// goroutines only through a happens-before edge (for example a channel handoff).
// A Ring must not be copied; create it with New.
//
// Memory order: Push only writes the item into a slot the consumer cannot see
// yet. The Flush (or Close) that publishes x synchronizes before the Pop that
// returns x, so everything the producer wrote before that Flush — including
// the memory x points to — is visible to the consumer once Pop returns x.
// Symmetrically, the Pop that frees a slot synchronizes before the Push that
// reuses it, so the producer never overwrites an item the consumer is still
// reading. Close synchronizes before the Wait that returns false because the
// ring is closed and drained.
//
// When full: Push returns false and stores nothing. The ring never blocks and
// never drops an item by itself; what to do with the item (coalesce, wait with
// WaitSpace, grow a side buffer) is the caller's policy.
type Ring[T any] struct {
	_ [cacheLinePad]byte // keep neighbouring heap objects off our first line

	// Read-only after New; read by both sides.
	buf      []T                // len(buf) is a power of two
	mask     uint64             // len(buf) - 1
	data     *doorbell.Doorbell // the consumer parks on it in Wait; Flush and Close ring it
	space    *doorbell.Doorbell // the producer parks on it in WaitSpace; Pop rings it
	testHook func(hookPoint)    // nil outside tests; consulted only on the parking path

	_ [cacheLinePad]byte // read-only line | consumer line

	// Consumer line: written only by the consumer goroutine.
	head       atomic.Uint64 // index of the next item to pop; read by the producer when the ring looks full
	cachedTail uint64        // consumer's copy of tail; reloaded only when the ring looks empty

	_ [cacheLinePad]byte // consumer line | producer line

	// Producer line: written only by the producer goroutine.
	tail       atomic.Uint64 // published end: items [head, tail) are visible to the consumer
	next       uint64        // index of the next Push; items [tail, next) are pushed but not flushed
	cachedHead uint64        // producer's copy of head; reloaded only when the ring looks full
	ended      bool          // producer's copy of closed, so Push can check it without an atomic load

	_ [cacheLinePad]byte // producer line | closed flag

	// Written once, read by the consumer when the ring looks empty. The
	// doorbells' armed flags, read on every Flush and Pop and written only
	// when a side parks or wakes, live in the doorbells' own allocations,
	// off the head and tail lines.
	closed atomic.Bool // set once by Close after the final publication

	_ [cacheLinePad]byte // keep neighbouring heap objects off our last line
}

// New returns a ring holding up to capacity items (rounded up to a power of
// two, minimum 2). It returns ErrCapacity, wrapped with the value, for
// capacity < 1 or capacity > 1<<30.
func New[T any](capacity int) (*Ring[T], error) {
	if capacity < 1 || capacity > maxCapacity {
		return nil, fmt.Errorf("%w: got %d, want 1..%d", ErrCapacity, capacity, maxCapacity)
	}
	n := 2
	for n < capacity {
		n <<= 1
	}
	return &Ring[T]{
		buf:   make([]T, n),
		mask:  uint64(n - 1),
		data:  doorbell.New(),
		space: doorbell.New(),
	}, nil
}

// Cap returns the number of items the ring can hold. Any goroutine.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Len returns the number of published items not yet popped. Any goroutine.
// It is a snapshot and may be stale by the time it returns; pushed but
// unflushed items are not counted.
func (r *Ring[T]) Len() int {
	// Load head first: tail only grows and never falls behind head, so the
	// difference cannot go negative. It can exceed the capacity if the
	// consumer pops and the producer refills between the two loads.
	h := r.head.Load()
	t := r.tail.Load()
	return int(min(t-h, uint64(len(r.buf))))
}

// Push stores v if there is room and reports whether it did. It does not make
// v visible to the consumer: call Flush once after a batch of pushes. When the
// ring is full Push returns false and leaves the ring unchanged. Producer only.
// Push panics if called after Close.
func (r *Ring[T]) Push(v T) bool {
	if r.ended {
		panic("ring: Push after Close")
	}
	n := r.next
	if n-r.cachedHead == uint64(len(r.buf)) {
		// Looks full: the consumer may have popped since we last looked.
		r.cachedHead = r.head.Load()
		if n-r.cachedHead == uint64(len(r.buf)) {
			return false
		}
	}
	r.buf[n&r.mask] = v
	r.next = n + 1
	return true
}

// Flush publishes every pushed item with one atomic store and wakes the
// consumer if it is parked in Wait. When the consumer is not parked the only
// extra cost is one atomic load of its flag. Flush with nothing pushed since
// the last Flush does nothing. Producer only.
func (r *Ring[T]) Flush() {
	if r.next == r.tail.Load() {
		return
	}
	// Store tail, then ring: a consumer that armed before loading tail (Wait)
	// either sees the item or is woken (package doorbell).
	r.tail.Store(r.next)
	r.data.Ring()
}

// Free reports how many more items Push would accept right now. It reloads
// the consumer's head, so it is exact as of the call. Producer only.
func (r *Ring[T]) Free() int {
	r.cachedHead = r.head.Load()
	return len(r.buf) - int(r.next-r.cachedHead)
}

// WaitSpace parks the producer until at least one slot is free (returns true),
// or the ring is closed or ctx is done (returns false). It returns true
// without consulting ctx when a slot is already free. It is meant for a
// blocking (backpressure) policy. The producer should Flush before waiting;
// WaitSpace flushes pending pushes itself so that forgetting cannot deadlock.
// Producer only.
func (r *Ring[T]) WaitSpace(ctx context.Context) bool {
	r.Flush()
	for {
		if r.closed.Load() {
			return false
		}
		if r.hasSpace() {
			return true
		}
		r.hookCall(hookProducerBeforeFlag)
		// Arm, then re-check head: Pop stores head, then rings (package
		// doorbell), so no wake-up can be lost.
		r.space.Arm()
		if r.hasSpace() || r.closed.Load() {
			r.space.Disarm()
			continue
		}
		r.hookCall(hookProducerBeforeBlock)
		if !r.space.Sleep(ctx) {
			return false
		}
		// Woken, or a stale token from an earlier round: loop and re-check.
	}
}

// hasSpace reports whether Push would accept an item, reloading head.
// REQUIRES: called by the producer.
func (r *Ring[T]) hasSpace() bool {
	r.cachedHead = r.head.Load()
	return r.next-r.cachedHead < uint64(len(r.buf))
}

// Close marks the end of the stream. It first publishes pending pushes, so
// the consumer still receives every item pushed before Close; once it has
// popped them all, Wait returns false. Push after Close panics; Close is
// idempotent. Producer only.
func (r *Ring[T]) Close() {
	if r.ended {
		return
	}
	r.ended = true
	r.Flush()
	// Store closed, then ring: the same handshake as Flush.
	r.closed.Store(true)
	r.data.Ring()
}

// Pop moves up to len(dst) published items into dst in FIFO order, clears
// their slots so the garbage collector can free what they reference,
// publishes the new head with one atomic store, wakes a producer parked in
// WaitSpace, and returns how many items it moved (0 when none is published).
// Pop refreshes its copy of the producer's tail only when the copy says the
// ring is empty, so it may move fewer items than are published; it returns 0
// only when nothing is. Consumer only.
func (r *Ring[T]) Pop(dst []T) int {
	if len(dst) == 0 {
		return 0
	}
	h := r.head.Load()
	avail := r.cachedTail - h
	if avail == 0 {
		// Looks empty: the producer may have flushed since we last looked.
		r.cachedTail = r.tail.Load()
		avail = r.cachedTail - h
		if avail == 0 {
			return 0
		}
	}
	n := min(avail, uint64(len(dst)))
	// Copy out in at most two contiguous runs: up to the end of buf, then
	// from its start.
	start := h & r.mask
	first := min(n, uint64(len(r.buf))-start)
	run := r.buf[start : start+first]
	copy(dst, run)
	clear(run)
	if first < n {
		run = r.buf[:n-first]
		copy(dst[first:n], run)
		clear(run)
	}
	// Store head, then ring a producer parked in WaitSpace.
	r.head.Store(h + n)
	r.space.Ring()
	return int(n)
}

// Wait parks the consumer until at least one item is published (returns
// true), or the ring is closed and fully drained (returns false), or ctx is
// done (returns false). It returns true without consulting ctx when an item
// is already published. Consumer only.
func (r *Ring[T]) Wait(ctx context.Context) bool {
	for {
		if r.hasItems() {
			return true
		}
		if r.closed.Load() {
			// Close published its last items before storing closed, so
			// this reload of tail sees them.
			return r.hasItems()
		}
		r.hookCall(hookConsumerBeforeFlag)
		// Arm, then re-check tail and closed. Flush and Close store, then
		// ring (package doorbell), so no wake-up can be lost.
		r.data.Arm()
		if r.hasItems() || r.closed.Load() {
			r.data.Disarm()
			continue
		}
		r.hookCall(hookConsumerBeforeBlock)
		if !r.data.Sleep(ctx) {
			return false
		}
		// Woken, or a stale token from an earlier round: loop and re-check.
	}
}

// hasItems reports whether an item is published and not yet popped,
// reloading tail only when the cached copy says the ring is empty.
// REQUIRES: called by the consumer.
func (r *Ring[T]) hasItems() bool {
	h := r.head.Load()
	if r.cachedTail != h {
		return true
	}
	r.cachedTail = r.tail.Load()
	return r.cachedTail != h
}

// hookPoint names a place on the slow (parking) path where tests can pause a
// goroutine to force an interleaving.
type hookPoint int

const (
	hookConsumerBeforeFlag  hookPoint = iota // Wait: found the ring empty, flag not yet set
	hookConsumerBeforeBlock                  // Wait: flag set, re-check found it empty, about to block
	hookProducerBeforeFlag                   // WaitSpace: found the ring full, flag not yet set
	hookProducerBeforeBlock                  // WaitSpace: flag set, re-check found it full, about to block
)

func (r *Ring[T]) hookCall(p hookPoint) {
	if r.testHook != nil {
		r.testHook(p)
	}
}
