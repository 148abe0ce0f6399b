package pipeline

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/shardinformer/shardinformer/ring"
)

// outlet carries notifications from one shard to one listener worker: a
// bounded lock-free ring, plus an overflow used only once the ring is full.
//
// Producer: the shard's drain goroutine (push, flush). Consumer: the listener
// worker (take). The overflow is shared under mu; the hot path never touches
// it: the producer checks its own spilling flag, the consumer an atomic.
//
// Order: once the ring is full, every later notification goes to the overflow
// until the consumer has emptied the ring and taken the whole overflow, so the
// consumer always sees ring items (older) before overflow items (newer).
type outlet struct {
	ring   *ring.Ring[notification]
	policy FullRingPolicy
	worker *worker // the consumer, woken before the producer waits for space

	// Producer-owned.
	spilling bool // overflow was active at the producer's last look
	touched  bool // pushed since the last flush

	hasOverflow atomic.Bool // mirrors mu.active for the consumer's fast path

	mu struct {
		sync.Mutex
		active  bool
		fifo    []notification // Grow
		entries []pending      // Coalesce: one per key, in first-overflow order
		index   map[string]int // Coalesce: key -> position in entries
	}
}

func newOutlet(w *worker, capacity int, policy FullRingPolicy) (*outlet, error) {
	r, err := ring.New[notification](capacity)
	if err != nil {
		return nil, err
	}
	return &outlet{ring: r, policy: policy, worker: w}, nil
}

// push hands n to the consumer. It reports how many notifications went to the
// overflow (0 or 1) and how many of those were merged into one already waiting,
// and the change in initial-list adds waiting (negative when merging removed
// one). Under Block it waits for space until ctx is done and then gives up on n.
// Producer only.
func (o *outlet) push(ctx context.Context, n notification) (spilled, merged, initialDelta int) {
	if o.spilling {
		o.mu.Lock()
		if o.mu.active {
			merged, initialDelta = o.spillLocked(n)
			o.mu.Unlock()
			return 1, merged, initialDelta
		}
		o.mu.Unlock()
		o.spilling = false
	}
	if o.ring.Push(n) {
		o.touched = true
		return 0, 0, 0
	}
	// Full. Publish, wake the consumer and give it one chance to run before
	// falling back to the policy: on a busy machine a worker that was merely
	// descheduled usually catches up in one time slice.
	o.ring.Flush()
	o.worker.wake()
	runtime.Gosched()
	if o.ring.Push(n) {
		o.touched = true
		return 0, 0, 0
	}
	if o.policy == Block {
		for !o.ring.Push(n) {
			if !o.ring.WaitSpace(ctx) {
				return 0, 0, -initialOf(n) // given up: n will never be handled
			}
		}
		o.touched = true
		return 0, 0, 0
	}
	// The ring was flushed above, before the consumer can see the overflow:
	// take returns overflow only after the ring is empty, so ring items (older)
	// are always handled first.
	o.mu.Lock()
	o.mu.active = true
	merged, initialDelta = o.spillLocked(n)
	o.hasOverflow.Store(true)
	o.mu.Unlock()
	o.spilling, o.touched = true, true
	return 1, merged, initialDelta
}

func initialOf(n notification) int {
	if n.kind == KindAdd && n.initial {
		return 1
	}
	return 0
}

// spillLocked stores n in the overflow.
// REQUIRES: o.mu held.
func (o *outlet) spillLocked(n notification) (merged, initialDelta int) {
	if o.policy != Coalesce {
		o.mu.fifo = append(o.mu.fifo, n)
		return 0, 0
	}
	if o.mu.index == nil {
		o.mu.index = make(map[string]int)
	}
	i, ok := o.mu.index[n.key]
	if !ok {
		o.mu.index[n.key] = len(o.mu.entries)
		o.mu.entries = append(o.mu.entries, newPending(n))
		return 0, 0
	}
	p := &o.mu.entries[i]
	before := p.initialAdds()
	p.apply(n)
	return 1, p.initialAdds() - before - initialOf(n)
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

// take returns what the consumer should handle next, reusing buf's storage
// (buf must have a non-zero capacity): ring items first, and the whole
// overflow only once the ring is empty. The overflow containers are swapped
// out under the lock and copied outside it, so the producer waits for a few
// pointer moves at most. Consumer only.
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
	fifo, entries := o.mu.fifo, o.mu.entries
	o.mu.fifo, o.mu.entries, o.mu.index = nil, nil, nil
	o.mu.active = false
	o.hasOverflow.Store(false)
	o.mu.Unlock()

	dst := append(buf[:0], fifo...)
	for i := range entries {
		dst = entries[i].appendTo(dst)
	}
	return dst
}

// ready reports whether take would return something. Consumer only.
func (o *outlet) ready() bool {
	return o.ring.Len() > 0 || o.hasOverflow.Load()
}

// depth returns the notifications waiting in the ring and in the overflow.
func (o *outlet) depth() (inRing, inOverflow int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ring.Len(), len(o.mu.fifo) + len(o.mu.entries)
}
