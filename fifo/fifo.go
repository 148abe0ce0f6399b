package fifo

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// ErrClosed is returned by writes to a closed queue.
var ErrClosed = errors.New("fifo: closed")

// Known is the part of a shard's index partition the queue reads: what the
// cache holds now. Reads must be safe while the drain goroutine writes.
type Known interface {
	Get(key string) (obj any, ok bool)
	Range(f func(key string, obj any) bool)
}

// Keyed is an object with its precomputed key.
type Keyed struct {
	Key    string
	Object any
}

// Item is one popped key with its deltas, oldest first.
type Item struct {
	Key string
	// Deltas is valid until the next Pop: it lives in a buffer the queue
	// reuses (a key's first delta is kept inline, so queuing a key does not
	// allocate a slice).
	Deltas cache.Deltas
	// Initial reports whether the key belongs to the initial population (the
	// isInInitialList flag of the notifications it produces).
	Initial bool
}

// Mark is a sync mark: every change queued before it has been applied.
type Mark struct {
	Seq uint64
	RV  string
}

// Config configures a Queue.
type Config struct {
	// Known is the shard's partition. Required.
	Known Known
	// Transform, if set, is applied to every object entering the queue except
	// tombstones and Sync deltas. It must be idempotent (see
	// cache.SharedInformer.SetTransform).
	Transform cache.TransformFunc
	// MaxQueued, if positive, bounds the deltas waiting in the queue: Add,
	// Update and Delete wait for the consumer while MaxQueued are queued, so a
	// stalled consumer stops the producer instead of growing the queue.
	// Replace and Resync never wait (they bring at most one delta per key).
	MaxQueued int
}

func (c Config) validate() error {
	if c.Known == nil {
		return errors.New("fifo: Config.Known is required")
	}
	if c.MaxQueued < 0 {
		return fmt.Errorf("fifo: Config.MaxQueued must not be negative, got %d", c.MaxQueued)
	}
	return nil
}

// shrinkAbove is the key count above which a queue that drains empty
// reallocates its map and slice: Go maps keep their buckets, and a relist of
// 100k objects would otherwise pin them for the queue's life.
const shrinkAbove = 4096

type pendingMark struct {
	at uint64 // the mark completes when this many keys have been Done
	Mark
}

// Queue is one shard's delta queue. It must not be copied after first use.
type Queue struct {
	known     Known
	transform cache.TransformFunc
	maxQueued int
	synced    chan struct{} // closed once HasSynced is true
	space     sync.Cond     // producers waiting for MaxQueued; L is &mu

	mu struct {
		sync.Mutex
		items    map[string]queued // queued keys
		order    []string          // queued keys, oldest first; order[head:] are live
		head     int
		inflight map[string]newest // popped, not yet Done: the state they bring
		popped   cache.Deltas      // the deltas of the last Pop's items
		marks    []pendingMark
		pushed   uint64 // keys ever appended to order
		done     uint64 // keys ever Done
		// populated is set by the first write; initial counts the keys of the
		// first Replace that are not yet Done.
		populated bool
		initial   int
		synced    bool // synced is closed (a write checks this, not the channel)
		closed    bool
		deltas    int // deltas queued (not in flight)
		peak      int // most keys queued since the last shrink
	}
}

// New returns an empty queue.
func New(cfg Config) (*Queue, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &Queue{
		known:     cfg.Known,
		transform: cfg.Transform,
		maxQueued: cfg.MaxQueued,
		synced:    make(chan struct{}),
	}
	q.space.L = &q.mu
	q.mu.items = make(map[string]queued)
	q.mu.inflight = make(map[string]newest)
	return q, nil
}

// Add queues an Added delta.
func (q *Queue) Add(key string, obj any) error { return q.write(cache.Added, key, obj) }

// Update queues an Updated delta.
func (q *Queue) Update(key string, obj any) error { return q.write(cache.Updated, key, obj) }

// Delete queues a Deleted delta, unless the key is already gone everywhere.
func (q *Queue) Delete(key string, obj any) error { return q.write(cache.Deleted, key, obj) }

func (q *Queue) write(t cache.DeltaType, key string, obj any) error {
	var err error
	if obj, err = q.transformed(obj); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.writeLocked(t, key, obj)
}

// REQUIRES: q.mu held.
func (q *Queue) writeLocked(t cache.DeltaType, key string, obj any) error {
	for q.maxQueued > 0 && q.mu.deltas >= q.maxQueued && !q.mu.closed {
		q.space.Wait()
	}
	if q.mu.closed {
		return ErrClosed
	}
	q.mu.populated = true
	q.checkSyncedLocked()
	if t == cache.Deleted {
		_, queued := q.mu.items[key]
		if _, exists := q.existsAfterPendingLocked(key); !queued && !exists {
			return nil // already reported, presumably by a relist
		}
	}
	q.appendLocked(key, cache.Delta{Type: t, Object: obj})
	q.checkSyncedLocked()
	return nil
}

func (q *Queue) transformed(obj any) (any, error) {
	if q.transform == nil {
		return obj, nil
	}
	if _, tomb := obj.(cache.DeletedFinalStateUnknown); tomb {
		return obj, nil
	}
	out, err := q.transform(obj)
	if err != nil {
		return nil, fmt.Errorf("fifo: transform: %w", err)
	}
	if out == nil {
		return nil, errors.New("fifo: transform returned no object")
	}
	return out, nil
}

// Replace queues the shard's part of a full list. list must hold this shard's
// keys only. An object the transform rejects is left out and its key keeps
// whatever the cache holds (no tombstone); the rest of the list is queued and
// the rejections are returned together.
func (q *Queue) Replace(list []Keyed) error {
	objs := make([]any, len(list))
	var errs []error
	for i, kv := range list {
		obj, err := q.transformed(kv.Object)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w (key %q)", err, kv.Key))
		}
		objs[i] = obj
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return ErrClosed
	}
	listed := make(map[string]struct{}, len(list))
	for i, kv := range list {
		listed[kv.Key] = struct{}{}
		if objs[i] != nil {
			q.appendLocked(kv.Key, cache.Delta{Type: cache.Replaced, Object: objs[i]})
		}
	}
	// Deletion detection: every key that will still exist once pending work is
	// applied, and is missing from the new list, gets a tombstone.
	tombstone := func(key string) {
		if _, ok := listed[key]; ok {
			return
		}
		if obj, exists := q.existsAfterPendingLocked(key); exists {
			q.appendLocked(key, cache.Delta{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: key, Obj: obj}})
		}
	}
	for _, key := range q.mu.order[q.mu.head:] {
		tombstone(key)
	}
	for key := range q.mu.inflight {
		if _, queued := q.mu.items[key]; !queued {
			tombstone(key)
		}
	}
	q.known.Range(func(key string, _ any) bool {
		if _, queued := q.mu.items[key]; !queued {
			if _, flying := q.mu.inflight[key]; !flying {
				tombstone(key)
			}
		}
		return true
	})
	if !q.mu.populated {
		q.mu.populated = true
		q.mu.initial = len(q.mu.order) - q.mu.head
	}
	q.checkSyncedLocked()
	return errors.Join(errs...)
}

// Resync queues a Sync delta for every known key that has nothing pending.
func (q *Queue) Resync() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.closed {
		return ErrClosed
	}
	q.known.Range(func(key string, obj any) bool {
		_, queued := q.mu.items[key]
		_, flying := q.mu.inflight[key]
		if !queued && !flying {
			q.appendLocked(key, cache.Delta{Type: cache.Sync, Object: obj})
		}
		return true
	})
	return nil
}

// Mark records m behind everything queued so far; Done reports it once all of
// that has been applied.
func (q *Queue) Mark(m Mark) {
	q.mu.Lock()
	q.mu.marks = append(q.mu.marks, pendingMark{at: q.mu.pushed, Mark: m})
	q.mu.Unlock()
}

// existsAfterPendingLocked reports the state key will have once everything
// queued and in flight is applied.
// REQUIRES: q.mu held.
func (q *Queue) existsAfterPendingLocked(key string) (any, bool) {
	if e, ok := q.mu.items[key]; ok {
		n := stateAfter(*e.last())
		return n.obj, n.exists
	}
	if n, ok := q.mu.inflight[key]; ok {
		return n.obj, n.exists
	}
	return q.known.Get(key)
}

// queued is a queued key's deltas, oldest first: first, then more.
type queued struct {
	first cache.Delta
	more  cache.Deltas
}

func (e *queued) last() *cache.Delta {
	if n := len(e.more); n > 0 {
		return &e.more[n-1]
	}
	return &e.first
}

func (e *queued) len() int { return 1 + len(e.more) }

// newest is the state of a key once a delta is applied.
type newest struct {
	obj    any
	exists bool
}

func stateAfter(d cache.Delta) newest {
	if d.Type == cache.Deleted {
		return newest{}
	}
	return newest{obj: d.Object, exists: true}
}

// appendLocked adds a delta to key's list, collapsing duplicate deletions.
// REQUIRES: q.mu held.
func (q *Queue) appendLocked(key string, d cache.Delta) {
	e, queued := q.mu.items[key]
	if queued {
		if last := e.last(); d.Type == cache.Deleted && last.Type == cache.Deleted {
			if _, tomb := last.Object.(cache.DeletedFinalStateUnknown); tomb {
				*last = d // keep the deletion that carries the real final state
				q.mu.items[key] = e
			}
			return
		}
		e.more = append(e.more, d)
	} else {
		e.first = d
	}
	q.mu.items[key] = e
	q.mu.deltas++
	if !queued {
		q.mu.order = append(q.mu.order, key)
		q.mu.pushed++
		q.mu.peak = max(q.mu.peak, len(q.mu.order)-q.mu.head)
	}
}

// Pop moves up to limit queued keys (at least one) into dst and marks them in
// flight. It never blocks; it returns dst unchanged when nothing is queued.
// Every Pop must be followed by Done with the same items. The items' Deltas
// are valid until the next Pop. Consumer only.
func (q *Queue) Pop(dst []Item, limit int) []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	clear(q.mu.popped) // drop the last Pop's objects
	buf := q.mu.popped[:0]
	live := q.mu.order[q.mu.head:]
	n := min(max(limit, 1), len(live))
	first := len(dst)
	for i, key := range live[:n] {
		e := q.mu.items[key]
		delete(q.mu.items, key)
		q.mu.inflight[key] = stateAfter(*e.last())
		q.mu.deltas -= e.len()
		buf = append(append(buf, e.first), e.more...)
		dst = append(dst, Item{Key: key, Deltas: buf[len(buf)-e.len():], Initial: i < q.mu.initial})
	}
	// Point the items into the final buffer (appending may have moved it),
	// each capped so that appending to one cannot overwrite the next.
	at := 0
	for i := first; i < len(dst); i++ {
		k := len(dst[i].Deltas)
		dst[i].Deltas = buf[at : at+k : at+k]
		at += k
	}
	q.mu.popped = buf
	clear(live[:n])
	q.mu.head += n
	if n > 0 && q.maxQueued > 0 {
		q.space.Broadcast()
	}
	if q.mu.head == len(q.mu.order) {
		if q.mu.peak > shrinkAbove {
			q.mu.items, q.mu.order, q.mu.peak = make(map[string]queued), nil, 0
		}
		q.mu.order, q.mu.head = q.mu.order[:0], 0
	} else if q.mu.head > 1024 && q.mu.head > len(q.mu.order)/2 {
		q.mu.order = append(q.mu.order[:0], q.mu.order[q.mu.head:]...)
		q.mu.head = 0
	}
	return dst
}

// Done ends the flight of items popped by the last Pop and returns the newest
// mark that is now complete, if any. Consumer only.
func (q *Queue) Done(items []Item) (Mark, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range items {
		delete(q.mu.inflight, it.Key)
		if it.Initial {
			q.mu.initial--
		}
	}
	q.mu.done += uint64(len(items))
	var last Mark
	var ok bool
	i := 0
	for ; i < len(q.mu.marks) && q.mu.marks[i].at <= q.mu.done; i++ {
		last, ok = q.mu.marks[i].Mark, true
	}
	q.mu.marks = q.mu.marks[i:]
	q.checkSyncedLocked()
	return last, ok
}

// REQUIRES: q.mu held.
func (q *Queue) checkSyncedLocked() {
	if !q.mu.synced && q.mu.populated && q.mu.initial == 0 {
		q.mu.synced = true
		close(q.synced)
	}
}

// Pending reports whether the consumer has work: keys queued, or a mark that
// Done would report. Any goroutine; the answer may be stale on return. A
// consumer that parks while nothing is pending must be woken by whoever
// writes next (the pipeline rings its drain goroutine's doorbell after every
// write): Pending reads under the queue's mutex, which every write holds.
func (q *Queue) Pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.head < len(q.mu.order) || (len(q.mu.marks) > 0 && q.mu.marks[0].at <= q.mu.done)
}

// Close stops the queue: writes fail with ErrClosed, and writers waiting for
// MaxQueued return it.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.closed = true
	q.space.Broadcast()
}

// Synced is closed once the initial population has been applied.
func (q *Queue) Synced() <-chan struct{} { return q.synced }

// HasSynced reports whether Synced is closed.
func (q *Queue) HasSynced() bool {
	select {
	case <-q.synced:
		return true
	default:
		return false
	}
}

// Len returns the number of queued keys (not counting keys in flight).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.mu.order) - q.mu.head
}
