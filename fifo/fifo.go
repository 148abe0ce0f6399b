package fifo

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

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
	// Pos is the stream position the key's state reaches once the item is
	// applied: the Seq of its newest marked write. A delta written without a
	// mark (Add, Update, Delete, Replace, Resync's Sync) counts as the
	// queue's newest mark before it, 0 if none (see "Stream positions").
	Pos uint64

	entry *entry // the key's entry, for Done
}

// Mark is a write's place in its writer's stream (see "Stream positions" in
// the package documentation). Done reports a mark once every change queued
// before it, its own write's included, has been applied.
type Mark struct {
	// Seq is the write's position: positive, and increasing over the marks
	// given to one queue (WriteAt, ReplaceAt, Mark).
	Seq uint64
	// RV is the resource version the write brings the store to, and Before
	// the one the store is at just before it (the previous write's RV). The
	// queue only keeps them for OldestMark and LastMark.
	RV, Before string
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

// shrinkAbove is the key count above which a queue that empties reallocates
// its map and slice: Go maps keep their buckets, and a relist of 100k objects
// would otherwise pin them for the queue's life.
const shrinkAbove = 4096

// keepFree bounds the entries kept for reuse: a batch of keys at the
// pipeline's default batch size, about what the queue holds at a time in
// steady churn.
const keepFree = 256

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

	// oldest mirrors the Seq of mu.marks[0] (math.MaxUint64 while no mark
	// is pending) for Oldest. Stored only under mu; loaded without it. It
	// has cache lines of its own (TestOldestLayout; whole pads of two lines,
	// as package ring pads): other goroutines poll it while the writer and
	// the consumer write the mutex's line.
	_      [128]byte
	oldest atomic.Uint64
	_      [128]byte

	mu struct {
		sync.Mutex
		// entries holds every key that is queued, in flight, or both: one map
		// operation to write a key, none to Pop it, one to end its flight.
		entries map[string]*entry
		order   []*entry // queued entries, oldest first; order[head:] are live
		head    int
		free    []*entry      // entries to reuse (at most keepFree)
		popped  cache.Deltas  // the deltas of the last Pop's items
		marks   []pendingMark // not yet reported by Done, oldest first
		last    Mark          // the newest mark given (Seq 0: none)
		before  Mark          // the one given before last
		pushed  uint64        // keys ever appended to order
		done    uint64        // keys ever Done
		// populated is set by the first write; initial counts the keys of the
		// first Replace that are not yet Done, syncSeq is its mark's Seq (0:
		// none), which Done must have reported too.
		populated bool
		initial   int
		syncSeq   uint64
		synced    bool // synced is closed (a write checks this, not the channel)
		closed    bool
		deltas    int // deltas queued (not in flight)
		peak      int // most keys held since the last shrink
	}
}

// entry is one key's state in the queue. It exists while the key is queued
// (it has deltas in order), in flight (popped, not yet Done), or both (written
// again while in flight).
type entry struct {
	key    string
	first  cache.Delta  // the oldest queued delta
	more   cache.Deltas // the newer queued deltas (its array is reused)
	queued bool         // in order, with first (and more) set
	flying bool         // popped, not yet Done
	after  newest       // while flying: the state its popped deltas bring
	// While queued: the stream positions of the first and the newest queued
	// delta, and whether the first is a marked write's own (rather than one
	// counted at the position before it; see Item.Pos).
	firstPos, lastPos uint64
	firstMarked       bool
}

func (e *entry) last() *cache.Delta {
	if n := len(e.more); n > 0 {
		return &e.more[n-1]
	}
	return &e.first
}

func (e *entry) len() int { return 1 + len(e.more) }

// state is the key's state once everything queued and in flight is applied.
func (e *entry) state() newest {
	if e.queued {
		return stateAfter(*e.last())
	}
	return e.after
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
	q.mu.entries = make(map[string]*entry)
	q.oldest.Store(math.MaxUint64)
	return q, nil
}

// Add queues an Added delta.
func (q *Queue) Add(key string, obj any) error { return q.WriteAt(cache.Added, key, obj, Mark{}) }

// Update queues an Updated delta.
func (q *Queue) Update(key string, obj any) error { return q.WriteAt(cache.Updated, key, obj, Mark{}) }

// Delete queues a Deleted delta, unless the key is already gone everywhere.
func (q *Queue) Delete(key string, obj any) error { return q.WriteAt(cache.Deleted, key, obj, Mark{}) }

// WriteAt queues a delta of type t (Added, Updated or Deleted; a Deleted one
// is dropped as Delete drops it) and, if m.Seq is not 0, records m behind it,
// in one step: Done reports m once the delta, and everything queued before
// it, has been applied. It records m if and only if it returns nil (a write
// the transform rejects, or made to a closed queue, leaves no mark).
func (q *Queue) WriteAt(t cache.DeltaType, key string, obj any, m Mark) error {
	var err error
	if obj, err = q.transformed(obj); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.writeLocked(t, key, obj, m.Seq); err != nil {
		return err
	}
	q.markLocked(m)
	return nil
}

// REQUIRES: q.mu held.
func (q *Queue) writeLocked(t cache.DeltaType, key string, obj any, pos uint64) error {
	for q.maxQueued > 0 && q.mu.deltas >= q.maxQueued && !q.mu.closed {
		q.space.Wait()
	}
	if q.mu.closed {
		return ErrClosed
	}
	q.mu.populated = true
	q.checkSyncedLocked()
	e := q.mu.entries[key]
	if t == cache.Deleted && (e == nil || !e.queued) {
		if _, exists := q.existsAfterPendingLocked(key, e); !exists {
			return nil // already reported, presumably by a relist
		}
	}
	q.appendLocked(key, e, cache.Delta{Type: t, Object: obj}, q.posLocked(pos))
	q.checkSyncedLocked()
	return nil
}

// place says where a delta stands in the stream: its position and whether it is
// the marked write's own.
type place struct {
	pos    uint64
	marked bool
}

// posLocked returns the place of a delta written with mark number seq (0: an
// unmarked write, counted at the newest mark so far).
// REQUIRES: q.mu held.
func (q *Queue) posLocked(seq uint64) place {
	if seq == 0 {
		return place{pos: q.mu.last.Seq}
	}
	return place{pos: seq, marked: true}
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
func (q *Queue) Replace(list []Keyed) error { return q.ReplaceAt(list, Mark{}) }

// ReplaceAt is Replace and, if m.Seq is not 0, records m behind the list in
// the same step (every delta of the list is m's write). It records m unless
// it returns ErrClosed.
func (q *Queue) ReplaceAt(list []Keyed, m Mark) error {
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
	pos := q.posLocked(m.Seq)
	listed := make(map[string]struct{}, len(list))
	for i, kv := range list {
		listed[kv.Key] = struct{}{}
		if objs[i] != nil {
			q.appendLocked(kv.Key, q.mu.entries[kv.Key], cache.Delta{Type: cache.Replaced, Object: objs[i]}, pos)
		}
	}
	// Deletion detection: every key that will still exist once pending work is
	// applied, and is missing from the new list, gets a tombstone.
	tombstone := func(key string, e *entry) {
		if _, ok := listed[key]; ok {
			return
		}
		if obj, exists := q.existsAfterPendingLocked(key, e); exists {
			q.appendLocked(key, e, cache.Delta{Type: cache.Deleted, Object: cache.DeletedFinalStateUnknown{Key: key, Obj: obj}}, pos)
		}
	}
	for key, e := range q.mu.entries { // queued or in flight (no key is added meanwhile)
		tombstone(key, e)
	}
	q.known.Range(func(key string, _ any) bool {
		if _, held := q.mu.entries[key]; !held {
			tombstone(key, nil)
		}
		return true
	})
	if !q.mu.populated {
		q.mu.populated = true
		q.mu.initial = len(q.mu.order) - q.mu.head
		q.mu.syncSeq = m.Seq
	}
	q.markLocked(m)
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
	pos := q.posLocked(0)
	q.known.Range(func(key string, obj any) bool {
		if _, held := q.mu.entries[key]; !held {
			q.appendLocked(key, nil, cache.Delta{Type: cache.Sync, Object: obj}, pos)
		}
		return true
	})
	return nil
}

// Mark records m behind everything queued so far, for a write that queues
// nothing (a bookmark); Done reports it once all of that has been applied.
// A mark with Seq 0 is ignored.
func (q *Queue) Mark(m Mark) {
	q.mu.Lock()
	q.markLocked(m)
	q.mu.Unlock()
}

// markLocked records m (unless its Seq is 0) behind everything queued so far.
// REQUIRES: q.mu held.
func (q *Queue) markLocked(m Mark) {
	if m.Seq == 0 {
		return
	}
	if len(q.mu.marks) == 0 {
		q.oldest.Store(m.Seq)
	}
	q.mu.marks = append(q.mu.marks, pendingMark{at: q.mu.pushed, Mark: m})
	q.mu.before, q.mu.last = q.mu.last, m
}

// Oldest returns the Seq of the oldest mark Done has not reported yet, or
// math.MaxUint64 if there is none. It takes no lock. Memory order: the Done
// that reports a mark stores the new value before it returns, and a mark is
// counted from the write that records it, before that write returns; so a
// load that returns more than s happens after the Done that reported every
// mark up to s, and after everything its caller did before that Done. Any
// goroutine.
func (q *Queue) Oldest() uint64 { return q.oldest.Load() }

// OldestMark returns the oldest mark Done has not reported yet.
func (q *Queue) OldestMark() (Mark, bool) {
	h := q.Hold()
	defer h.Release()
	return h.Oldest()
}

// RecentMark returns the mark numbered seq if it is one of the two newest
// marks given to the queue, reported or not.
func (q *Queue) RecentMark(seq uint64) (Mark, bool) {
	h := q.Hold()
	defer h.Release()
	return h.Recent(seq)
}

// LastMark returns the newest mark given to the queue, reported or not.
func (q *Queue) LastMark() (Mark, bool) {
	h := q.Hold()
	defer h.Release()
	return q.mu.last, q.mu.last.Seq != 0
}

// HeldMarks reads a queue's marks while Hold keeps them still: its writers and
// its consumer wait until Release. A caller that needs several queues' marks
// at one instant holds them all, always in the same order, and only where no
// goroutine it waits for may be holding one (the pipeline does it under a
// mutex of its own, with no queue held by the waiters).
type HeldMarks struct{ q *Queue }

// Hold takes the queue's mutex. Any goroutine; Release soon.
func (q *Queue) Hold() HeldMarks {
	q.mu.Lock()
	return HeldMarks{q}
}

// Release ends the hold.
func (h HeldMarks) Release() { h.q.mu.Unlock() }

// Oldest is OldestMark.
func (h HeldMarks) Oldest() (Mark, bool) {
	if len(h.q.mu.marks) == 0 {
		return Mark{}, false
	}
	return h.q.mu.marks[0].Mark, true
}

// Recent is RecentMark.
func (h HeldMarks) Recent(seq uint64) (Mark, bool) {
	switch {
	case seq == 0:
	case h.q.mu.last.Seq == seq:
		return h.q.mu.last, true
	case h.q.mu.before.Seq == seq:
		return h.q.mu.before, true
	}
	return Mark{}, false
}

// existsAfterPendingLocked reports the state key will have once everything
// queued and in flight is applied. e is the key's entry, nil if it has none.
// REQUIRES: q.mu held.
func (q *Queue) existsAfterPendingLocked(key string, e *entry) (any, bool) {
	if e != nil {
		n := e.state()
		return n.obj, n.exists
	}
	return q.known.Get(key)
}

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

// appendLocked adds a delta to key's list, collapsing duplicate deletions. e
// is the key's entry, nil if it has none; p is the delta's place in the
// stream.
// REQUIRES: q.mu held.
func (q *Queue) appendLocked(key string, e *entry, d cache.Delta, p place) {
	if e == nil {
		e = q.newEntryLocked(key)
	}
	if e.queued {
		e.lastPos = max(e.lastPos, p.pos)
		if last := e.last(); d.Type == cache.Deleted && last.Type == cache.Deleted {
			if _, tomb := last.Object.(cache.DeletedFinalStateUnknown); tomb {
				*last = d // keep the deletion that carries the real final state
			}
			return
		}
		e.more = append(e.more, d)
	} else {
		e.first, e.queued = d, true
		e.firstPos, e.lastPos, e.firstMarked = p.pos, p.pos, p.marked
		q.mu.order = append(q.mu.order, e)
		q.mu.pushed++
	}
	q.mu.deltas++
}

// newEntryLocked adds an entry for key, which has none.
// REQUIRES: q.mu held.
func (q *Queue) newEntryLocked(key string) *entry {
	var e *entry
	if n := len(q.mu.free); n > 0 {
		e = q.mu.free[n-1]
		q.mu.free[n-1] = nil
		q.mu.free = q.mu.free[:n-1]
	} else {
		e = new(entry)
	}
	e.key = key
	q.mu.entries[key] = e
	q.mu.peak = max(q.mu.peak, len(q.mu.entries))
	return e
}

// Pop moves up to limit queued keys (at least one) into dst and marks them in
// flight. It never blocks; it returns dst unchanged when nothing is queued.
// Every Pop (or PopSegment) must be followed by Done with the same items
// before the next one. The items' Deltas are valid until the next Pop. Consumer
// only.
func (q *Queue) Pop(dst []Item, limit int) []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	live := q.mu.order[q.mu.head:]
	return q.popLocked(dst, min(max(limit, 1), len(live)))
}

// PopSegment is Pop, except that after limit keys it goes on taking keys
// until the batch is a segment of the stream: with p the largest Item.Pos of
// the batch, every marked write up to p that is queued is in the batch, and
// none of the keys left has a marked write at or before p. So once the batch
// is Done, every mark up to p has been reported (Oldest() > p), and a
// Replace's part is taken whole. The batch may hold many more than limit
// keys: a Replace's part, or a key written over and over while queued, draws
// in every key queued behind it. Consumer only.
func (q *Queue) PopSegment(dst []Item, limit int) []Item {
	q.mu.Lock()
	defer q.mu.Unlock()
	live := q.mu.order[q.mu.head:]
	n := min(max(limit, 1), len(live))
	var p uint64
	for _, e := range live[:n] {
		p = max(p, e.lastPos)
	}
	// Entries are in order of their first delta, and an entry's first
	// position only grows along the order (an unmarked delta counts at the
	// newest mark before it, a marked one at its own, larger, Seq), so the
	// first entry beyond p ends the segment. Only its own marked write can
	// sit at p exactly: a Replace's other keys, which belong in the batch.
	for n < len(live) && (live[n].firstPos < p || live[n].firstPos == p && live[n].firstMarked) {
		p = max(p, live[n].lastPos)
		n++
	}
	return q.popLocked(dst, n)
}

// popLocked moves the first n queued keys into dst. REQUIRES: q.mu held.
func (q *Queue) popLocked(dst []Item, n int) []Item {
	clear(q.mu.popped) // drop the last Pop's objects
	buf := q.mu.popped[:0]
	live := q.mu.order[q.mu.head:]
	first := len(dst)
	for i, e := range live[:n] {
		k := e.len()
		buf = append(append(buf, e.first), e.more...)
		pos := e.lastPos
		e.after, e.flying, e.queued = stateAfter(buf[len(buf)-1]), true, false
		e.firstPos, e.lastPos, e.firstMarked = 0, 0, false
		e.first = cache.Delta{}
		clear(e.more)
		e.more = e.more[:0]
		q.mu.deltas -= k
		dst = append(dst, Item{Key: e.key, Deltas: buf[len(buf)-k:], Initial: i < q.mu.initial, Pos: pos, entry: e})
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
			// Every entry left is one just popped (the last Pop's are Done).
			entries := make(map[string]*entry, n)
			for _, it := range dst[first:] {
				entries[it.Key] = it.entry
			}
			q.mu.entries, q.mu.order, q.mu.peak = entries, nil, n
		}
		q.mu.order, q.mu.head = q.mu.order[:0], 0
	} else if q.mu.head > 1024 && q.mu.head > len(q.mu.order)/2 {
		q.mu.order = append(q.mu.order[:0], q.mu.order[q.mu.head:]...)
		q.mu.head = 0
	}
	return dst
}

// Done ends the flight of items popped by the last Pop and returns the newest
// mark that is now complete, if any. items must be what Pop returned (an Item
// carries its key's entry in the queue); Done panics on an Item made
// otherwise. Consumer only.
func (q *Queue) Done(items []Item) (Mark, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range items {
		e := it.entry
		e.flying, e.after = false, newest{}
		if !e.queued {
			delete(q.mu.entries, e.key)
			q.releaseLocked(e)
		}
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
	if ok {
		q.dropMarksLocked(i)
	}
	q.checkSyncedLocked()
	return last, ok
}

// dropMarksLocked removes the n oldest pending marks and publishes the new
// oldest (see Oldest).
// REQUIRES: q.mu held.
func (q *Queue) dropMarksLocked(n int) {
	marks := q.mu.marks
	clear(marks[:n]) // their strings
	if rest := len(marks) - n; rest == 0 {
		q.mu.marks = marks[:0]
	} else if n >= rest { // move the live tail to the front rather than let the slice creep
		q.mu.marks = marks[:copy(marks, marks[n:])]
		clear(marks[len(q.mu.marks):])
	} else {
		q.mu.marks = marks[n:]
	}
	if cap(q.mu.marks) > shrinkAbove && len(q.mu.marks) < cap(q.mu.marks)/8 {
		q.mu.marks = append([]pendingMark(nil), q.mu.marks...)
	}
	if len(q.mu.marks) == 0 {
		q.oldest.Store(math.MaxUint64)
	} else {
		q.oldest.Store(q.mu.marks[0].Seq)
	}
}

// releaseLocked keeps e, which left the queue, for reuse.
// REQUIRES: q.mu held.
func (q *Queue) releaseLocked(e *entry) {
	if len(q.mu.free) >= keepFree {
		return
	}
	more := e.more
	if cap(more) > 8 {
		more = nil // a burst's array is not kept for the next key
	}
	*e = entry{more: more}
	q.mu.free = append(q.mu.free, e)
}

// REQUIRES: q.mu held.
func (q *Queue) checkSyncedLocked() {
	if !q.mu.synced && q.mu.populated && q.mu.initial == 0 &&
		(len(q.mu.marks) == 0 || q.mu.marks[0].Seq > q.mu.syncSeq) {
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

// Synced is closed once the initial population has been applied (and, for a
// first Replace made by ReplaceAt with a mark, Done has reported the mark).
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
