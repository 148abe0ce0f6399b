package pipeline

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// This file holds the full-ring policies that keep an overflow (Buffer,
// Coalesce, Grow): the overflow of one outlet, and the backlog account its
// listener keeps over all of its outlets. The three differ only in the
// listener's budget: how many notifications overflows keep exactly before
// they merge per key (Buffer: WithBacklogBudget; Coalesce: 0; Grow: no limit).

// overflow holds, for one outlet, the notifications that did not fit its
// ring, oldest first: an exact part, delivered as produced, then a coalesced
// part with one entry per key. Once an outlet coalesces, every later
// notification is merged too until the consumer has taken the coalesced part,
// since it is delivered after the exact part. Not safe for concurrent use:
// guarded by its outlet's mutex.
type overflow struct {
	exact   [][]notification // chunks, oldest first; each at most maxChunk long
	held    int              // notifications in exact
	entries []pending        // coalesced, one per key in first-overflow order; nil when not coalescing
	index   map[string]int   // key -> position in entries
}

// Chunk sizes of the exact part: small for a short overflow, capped so that
// the consumer takes a bounded batch and memory goes back as it drains.
const (
	minChunk = 64
	maxChunk = 1024
)

func (o *overflow) empty() bool { return o.held == 0 && o.entries == nil }

func (o *overflow) coalescing() bool { return o.entries != nil }

// depth returns the notifications in the exact part plus the coalesced keys.
func (o *overflow) depth() int { return o.held + len(o.entries) }

// keep appends n to the exact part.
func (o *overflow) keep(n notification) {
	last := len(o.exact) - 1
	if last < 0 || len(o.exact[last]) == cap(o.exact[last]) {
		size := minChunk
		if last >= 0 {
			size = min(maxChunk, 2*cap(o.exact[last]))
		}
		o.exact = append(o.exact, make([]notification, 0, size))
		last++
	}
	o.exact[last] = append(o.exact[last], n)
	o.held++
}

// merge folds n into the coalesced part. It reports whether n was merged into
// an entry already waiting, the change in initial-list adds waiting (for
// HasSynced; negative when merging removed one), and whether this call
// started the coalesced part.
func (o *overflow) merge(n notification) (merged bool, initialDelta int, started bool) {
	if o.entries == nil {
		o.entries, o.index, started = make([]pending, 0, minChunk), make(map[string]int), true
	}
	i, ok := o.index[n.key]
	if !ok {
		o.index[n.key] = len(o.entries)
		o.entries = append(o.entries, newPending(n))
		return false, 0, started
	}
	p := &o.entries[i]
	before := p.initialAdds()
	p.apply(n)
	return true, p.initialAdds() - before - initialOf(n), started
}

// take removes what the consumer handles next: the oldest exact chunk, or,
// once the exact part is empty, the whole coalesced part.
func (o *overflow) take() (chunk []notification, entries []pending) {
	if len(o.exact) > 0 {
		chunk, o.exact[0] = o.exact[0], nil
		o.exact = o.exact[1:]
		if len(o.exact) == 0 {
			o.exact = nil // let the chunk index go too
		}
		o.held -= len(chunk)
		return chunk, nil
	}
	entries = o.entries
	o.entries, o.index = nil, nil
	return nil, entries
}

// backlog is a listener's account over all of its outlets: the notifications
// kept exactly in their overflows against the budget, and the coalescing
// episode. An episode starts when the first outlet starts coalescing and ends
// when no outlet coalesces any more; each change is reported once, in order,
// to the Observer and the log.
type backlog struct {
	budget int64
	held   atomic.Int64 // notifications in the exact parts; written under each outlet's mutex
	merged atomic.Int64 // notifications merged during the current episode

	mu struct { // taken under an outlet's mutex, only when an outlet starts or stops coalescing
		sync.Mutex
		coalescing int // outlets coalescing
		since      time.Time
	}
	name     string
	observer Observer
	logger   klog.Logger
	loud     bool // log episodes at Info (Buffer); under Coalesce they are routine
}

// admit takes a place for one more notification kept exactly, if the
// budget has one. Outlets admit under their own mutexes, concurrently, so
// the check and the count are one compare-and-swap: held never exceeds the
// budget (TestBacklogBudgetUnderConcurrency).
func (b *backlog) admit() bool {
	for {
		h := b.held.Load()
		if h >= b.budget {
			return false
		}
		if b.held.CompareAndSwap(h, h+1) {
			return true
		}
	}
}

// startCoalescing records that one more outlet coalesces.
func (b *backlog) startCoalescing() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.coalescing++
	if b.mu.coalescing > 1 {
		return
	}
	b.mu.since = time.Now()
	b.merged.Store(0)
	b.observer.Coalescing(b.name, true)
	b.log().Info("Event handler fell behind by more than its backlog budget; its notifications are merged per key until it catches up",
		"handler", b.name, "budget", b.budget)
}

// stopCoalescing records that an outlet's coalesced part was taken.
func (b *backlog) stopCoalescing() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.coalescing--
	if b.mu.coalescing > 0 {
		return
	}
	b.observer.Coalescing(b.name, false)
	b.log().Info("Event handler caught up; every notification is delivered again",
		"handler", b.name, "coalescedFor", time.Since(b.mu.since), "merged", b.merged.Load())
}

func (b *backlog) log() klog.Logger {
	if b.loud {
		return b.logger
	}
	return b.logger.V(4)
}

// isCoalescing reports whether an episode is under way. Any goroutine.
func (b *backlog) isCoalescing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.coalescing > 0
}

// pending is what a coalesced overflow holds for one key: the state the
// listener knew before the first merged notification, and the state after
// the latest one. The notifications the listener receives are derived from
// the two when the overflow is drained (see appendTo), so any number of
// notifications for a key cost one entry.
type pending struct {
	key     string
	knew    bool   // the listener held the key before
	known   any    // the object it held (nil when only a tombstone without object says what it was)
	tomb    any    // the first notification's delete object, when it was a delete
	initial bool   // the first notification was an initial-list add
	exists  bool   // the key exists after the latest notification
	latest  any    // the latest object, or the final state for a delete
	pos     uint64 // the latest notification's position (notification.pos)
}

func newPending(n notification) pending {
	p := pending{key: n.key}
	switch n.kind {
	case KindAdd:
		p.initial = n.initial
	case KindUpdate:
		p.knew, p.known = true, n.old
	case KindDelete:
		// The object the listener last saw is the one the cache held, not the
		// final state, which a real API server gives a newer resourceVersion.
		p.knew, p.tomb, p.known = true, n.obj, n.old
		if p.known == nil {
			p.known = n.obj
			if t, ok := n.obj.(cache.DeletedFinalStateUnknown); ok {
				p.known = t.Obj
			}
		}
	}
	p.apply(n)
	return p
}

// apply records a newer notification for the same key.
func (p *pending) apply(n notification) {
	p.exists = n.kind != KindDelete
	p.latest = n.obj
	p.pos = max(p.pos, n.pos)
}

// appendTo appends the notifications that take the listener from the state it
// knew to the latest one:
//
//	knew  exists  notifications
//	no    no      none: the key came and went
//	no    yes     Add(latest), with the initial-list flag of the first add
//	yes   no      Delete(final state)
//	yes   yes     Update(known, latest): also for a key deleted and re-created,
//	              the case client-go documents for a missed delete; Delete then
//	              Add when the known object is unknown (a tombstone without one)
func (p *pending) appendTo(dst []notification) []notification {
	switch {
	case !p.knew && !p.exists:
		return dst
	case !p.knew:
		return append(dst, notification{kind: KindAdd, key: p.key, obj: p.latest, initial: p.initial, pos: p.pos})
	case !p.exists:
		return append(dst, notification{kind: KindDelete, key: p.key, obj: p.latest, pos: p.pos})
	case p.known == nil:
		return append(dst,
			notification{kind: KindDelete, key: p.key, obj: p.tomb, pos: p.pos},
			notification{kind: KindAdd, key: p.key, obj: p.latest, pos: p.pos})
	}
	return append(dst, notification{kind: KindUpdate, key: p.key, old: p.known, obj: p.latest, pos: p.pos})
}

// initialAdds counts the initial-list adds appendTo would produce (for
// HasSynced accounting).
func (p *pending) initialAdds() int {
	if !p.knew && p.exists && p.initial {
		return 1
	}
	return 0
}

func initialOf(n notification) int {
	if n.kind == KindAdd && n.initial {
		return 1
	}
	return 0
}
