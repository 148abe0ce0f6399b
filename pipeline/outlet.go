package pipeline

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/shardinformer/shardinformer/ring"
)

// outlet carries notifications from one shard to one listener worker: a
// bounded lock-free ring, plus an overflow (overflow.go) used only once the
// ring is full, except under Block, where the producer waits for space.
//
// Producer: the shard's drain goroutine (push, flush). Consumer: the listener
// worker (take). The overflow is shared under mu; the hot path never touches
// it: the producer checks its own spilling flag, the consumer an atomic.
//
// Order: once the ring is full, every later notification goes to the overflow
// until the consumer has emptied the ring and the whole overflow, so the
// consumer always sees ring items (older) before overflow items (newer).
type outlet struct {
	ring    *ring.Ring[notification]
	block   bool     // Block policy: wait for space instead of overflowing
	backlog *backlog // the listener's account, shared by its outlets
	worker  *worker  // the consumer, woken before the producer waits for space

	// Producer-owned.
	spilling bool // overflow was active at the producer's last look
	touched  bool // pushed since the last flush

	hasOverflow atomic.Bool // mirrors mu.active for the consumer's fast path

	mu struct {
		sync.Mutex
		active bool // over is not empty, or the consumer has not yet seen it empty
		over   overflow
	}
}

func newOutlet(w *worker, capacity int, block bool, b *backlog) (*outlet, error) {
	r, err := ring.New[notification](capacity)
	if err != nil {
		return nil, err
	}
	return &outlet{ring: r, block: block, backlog: b, worker: w}, nil
}

// pushed says what push did with a notification that did not fit the ring.
type pushed struct {
	spilled      bool // it went to the overflow
	merged       bool // and was merged into an entry already waiting for its key
	initialDelta int  // change in initial-list adds waiting (negative when merging removed one, or when Block gave up)
}

// push hands n to the consumer. Under Block it waits for space until ctx is
// done and then gives up on n. Producer only.
func (o *outlet) push(ctx context.Context, n notification) pushed {
	if o.spilling {
		o.mu.Lock()
		if o.mu.active {
			p := o.spillLocked(n)
			o.mu.Unlock()
			return p
		}
		o.mu.Unlock()
		o.spilling = false
	}
	if o.ring.Push(n) {
		o.touched = true
		return pushed{}
	}
	// Full: publish and wake the consumer, then apply the policy. (Yielding
	// here to let the consumer catch up would put the drain goroutine at the
	// back of the scheduler's global queue, behind every runnable goroutine.)
	o.ring.Flush()
	o.worker.wake()
	if o.block {
		for !o.ring.Push(n) {
			if !o.ring.WaitSpace(ctx) {
				return pushed{initialDelta: -initialOf(n)} // given up: n will never be handled
			}
		}
		o.touched = true
		return pushed{}
	}
	// The ring was flushed above, before the consumer can see the overflow:
	// take returns overflow only after the ring is empty, so ring items (older)
	// are always handled first.
	o.mu.Lock()
	o.mu.active = true
	p := o.spillLocked(n)
	o.hasOverflow.Store(true)
	o.mu.Unlock()
	o.spilling, o.touched = true, true
	return p
}

// spillLocked stores n in the overflow: exactly while the listener's backlog
// is within its budget and this overflow has not started coalescing, merged
// per key otherwise.
// REQUIRES: o.mu held.
func (o *outlet) spillLocked(n notification) pushed {
	over := &o.mu.over
	if !over.coalescing() && o.backlog.admit() {
		over.keep(n)
		return pushed{spilled: true}
	}
	merged, initialDelta, started := over.merge(n)
	if started {
		o.backlog.startCoalescing()
	}
	return pushed{spilled: true, merged: merged, initialDelta: initialDelta}
}

// flush publishes pushed notifications. It reports whether the consumer may
// need waking. Producer only.
func (o *outlet) flush() bool {
	if !o.touched {
		return false
	}
	o.touched = false
	o.ring.Flush()
	return true
}

// take returns what the consumer should handle next: ring items first, then
// the overflow once the ring is empty, one exact chunk at a time and the
// coalesced entries last. It fills buf (which must have a non-zero capacity)
// or returns an overflow chunk in its place, which the caller may keep as its
// next buffer. The overflow's containers are moved out under the lock and
// expanded outside it, so the producer waits for a few pointer moves at most.
// Consumer only.
func (o *outlet) take(buf []notification) []notification {
	if n := o.ring.Pop(buf[:cap(buf)]); n > 0 {
		return buf[:n]
	}
	if !o.hasOverflow.Load() {
		return buf[:0]
	}
	o.mu.Lock()
	if o.ring.Len() > 0 { // the producer pushed again before overflowing; keep order
		o.mu.Unlock()
		return buf[:0]
	}
	chunk, entries := o.mu.over.take()
	if chunk != nil {
		o.backlog.held.Add(-int64(len(chunk)))
	} else if entries != nil {
		o.backlog.stopCoalescing()
	}
	if o.mu.over.empty() {
		o.mu.active = false
		o.hasOverflow.Store(false)
	}
	o.mu.Unlock()

	if chunk != nil {
		return chunk
	}
	dst := buf[:0]
	for i := range entries {
		dst = entries[i].appendTo(dst)
	}
	return dst
}

// ready reports whether take would return something. Consumer only.
func (o *outlet) ready() bool {
	return o.ring.Len() > 0 || o.hasOverflow.Load()
}

// depth returns the notifications waiting in the ring, and in the overflow
// (exact notifications plus coalesced keys).
func (o *outlet) depth() (inRing, inOverflow int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ring.Len(), o.mu.over.depth()
}
