package pipeline

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/shardinformer/shardinformer/fifo"
)

// watermark is the store watermark (doc.go, "Cross-key order"): the stream
// position up to which every shard has applied every write.
//
// The reflector goroutine numbers the writes it makes to the store (store.go):
// an Add, Update or Delete is one position in the queue of its key's shard; a
// Replace or a Bookmark is one position in every shard's queue. Each write is
// queued with a fifo.Mark carrying its position, and each shard's queue
// publishes the position of its oldest mark not yet applied (fifo.Queue.Oldest,
// math.MaxUint64 for none). Then
//
//	position = min(issued, min over shards of Oldest - 1)
//
// where issued is the newest position handed out. Per shard, Oldest - 1 says
// that the shard has applied every write it was given up to there; a shard with
// nothing pending says nothing, so an idle shard never holds the watermark
// back. Globally, every write up to the position has been applied by its
// shard (or, for a Replace or Bookmark, by every shard).
//
// Memory order: a write's mark is recorded in its queue (making that queue's
// Oldest at most the write's position) before issued is stored, and a shard's
// Done stores a larger Oldest only after it has applied the writes below it.
// position loads issued first and each Oldest after, all sequentially
// consistent, so for every position p <= issued that it returns, each shard's
// Oldest it loaded is past p only if the Done that applied the shard's writes
// up to p happened before the load: everything those writes stored in the
// index partition happens before position returns. Positions only grow
// (reached keeps the largest computed), so once a goroutine has seen p, every
// later call from it returns at least p.
//
// Gated workers (listener.go) wait for the position to reach their next
// notification's; everything that advances it (store.issue, a shard's Done)
// then calls advanced. No lock is taken on the path of an event unless a
// worker is waiting.
type watermark struct {
	shards []*shard // their queues are set by Run; position reads them after

	// Each group on cache lines of its own (TestWatermarkLayout): issued and
	// hint are written once per event by the reflector, reached by whoever
	// computes a new position, gated read per event and per batch. Whole
	// pads of two lines, as package ring pads (the adjacent-line prefetcher).
	_      [pad]byte
	issued atomic.Uint64 // the newest position handed out; reflector goroutine only stores it
	// hint is the shard the newest write went to, -1 for every shard (stored
	// before issued); resourceVersion uses it to find that write's mark.
	hint    atomic.Int64
	_       [pad]byte
	reached atomic.Uint64 // the largest position computed so far
	_       [pad]byte
	gated   atomic.Int32 // workers registered in mu.waiters
	_       [pad]byte

	// mu guards the waiters and the last answer of resourceVersion, and is
	// held across its slow path (every queue held): taken with no queue held.
	mu struct {
		sync.Mutex
		waiters []*worker // workers whose next notification is past the position
		pos     uint64    // the newest position whose resource version was looked up
		rv      string    // and that resource version
	}
}

// pad separates the watermark's groups of fields.
const pad = 128

// issue records that the write at pos has been queued (its marks recorded in
// shard's queue, or every queue for shard -1). Reflector goroutine only; pos
// increases by one per call.
func (w *watermark) issue(pos uint64, shard int) {
	w.hint.Store(int64(shard))
	w.issued.Store(pos)
	w.advanced()
}

// position returns the store watermark. Any goroutine, once Run has built
// the queues.
func (w *watermark) position() uint64 {
	p := w.issued.Load()
	for _, s := range w.shards {
		if o := s.queue.Oldest(); o <= p {
			p = o - 1 // o >= 1: positions start at 1
		}
	}
	for {
		r := w.reached.Load()
		if p <= r {
			return r
		}
		if w.reached.CompareAndSwap(r, p) {
			return p
		}
	}
}

// reach returns the position, loading only reached when that is at least need.
func (w *watermark) reach(need uint64) uint64 {
	if r := w.reached.Load(); r >= need {
		return r
	}
	return w.position()
}

// advanced wakes the gated workers whose next notification the position now
// covers. Called after every store of issued and of a shard's Oldest (by the
// reflector goroutine, or whoever holds a drain role). With no worker gated it
// costs one atomic load: a worker registers (gated) before it loads the
// position, and the caller stored before it loads gated, so one of the two
// sees the other (doorbell's store-buffering argument).
func (w *watermark) advanced() {
	if w.gated.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.mu.waiters) == 0 {
		return
	}
	p := w.position()
	for _, wk := range w.mu.waiters {
		if wk.need.Load() <= p {
			wk.wake()
		}
	}
}

// wait registers wk as gated until unwait. Listener worker only, before it
// parks; wk.need must be stored first.
func (w *watermark) wait(wk *worker) {
	w.mu.Lock()
	w.mu.waiters = append(w.mu.waiters, wk)
	w.gated.Add(1)
	w.mu.Unlock()
}

// unwait undoes wait. Listener worker only.
func (w *watermark) unwait(wk *worker) {
	w.mu.Lock()
	if i := slices.Index(w.mu.waiters, wk); i >= 0 {
		w.mu.waiters = slices.Delete(w.mu.waiters, i, i+1)
		w.gated.Add(-1)
	}
	w.mu.Unlock()
}

// resourceVersion returns the resource version of the write at the
// position: LastStoreSyncResourceVersion. The write at the position p is
// either the newest one handed out (p == issued), whose mark is among the two
// newest of its shard's queue (fifo.Queue.RecentMark; the hint says which
// shard), or the one just before the oldest write pending in some shard u,
// whose mark carries the resource version before it (fifo.Mark.Before). The
// fast path reads one queue under its mutex and checks the mark against p;
// if the writes moved on in between, the slow path holds every queue's marks
// at one instant and reads the answer there. Answers never go back. Any
// goroutine; not on the path of events.
func (w *watermark) resourceVersion() string {
	issued, hint := w.issued.Load(), w.hint.Load()
	p, u := issued, -1
	for i, s := range w.shards {
		if o := s.queue.Oldest(); o <= p {
			p, u = o-1, i
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p <= w.mu.pos {
		return w.mu.rv
	}
	var m fifo.Mark
	var ok bool
	if u >= 0 {
		m, ok = w.shards[u].queue.OldestMark()
		ok = ok && m.Seq == p+1
		m.RV = m.Before
	} else {
		m, ok = w.shards[max(hint, 0)].queue.RecentMark(p)
	}
	if !ok {
		p, m = w.heldLocked()
	}
	if p > w.mu.pos {
		w.mu.pos, w.mu.rv = p, m.RV
	}
	return w.mu.rv
}

// heldLocked is resourceVersion's slow path: with every queue held, no mark
// can be given, so the marks show one instant. The reflector gives a write's
// marks before it stores issued, and the next write's only after, so the
// newest recorded mark is issued or issued+1: the write at issued is among
// the two newest marks of its queue. Holding several queues is safe under
// w.mu: nobody else holds two, and nobody takes w.mu while holding one.
// It returns the position and a mark whose RV is the position's.
// REQUIRES: w.mu held.
func (w *watermark) heldLocked() (uint64, fifo.Mark) {
	held := make([]fifo.HeldMarks, len(w.shards))
	for i, s := range w.shards {
		held[i] = s.queue.Hold()
	}
	defer func() {
		for _, h := range held {
			h.Release()
		}
	}()
	p, u := w.issued.Load(), -1
	for i, h := range held {
		if m, ok := h.Oldest(); ok && m.Seq <= p {
			p, u = m.Seq-1, i
		}
	}
	if p == 0 {
		return 0, fifo.Mark{}
	}
	if u >= 0 {
		m, _ := held[u].Oldest()
		return p, fifo.Mark{Seq: p, RV: m.Before}
	}
	for _, h := range held {
		if m, ok := h.Recent(p); ok {
			return p, m
		}
	}
	panic(fmt.Sprintf("pipeline: watermark at %d, but no queue has its mark", p)) // a broken invariant of store
}

// noPosition is what a gated worker needs when nothing is held.
const noPosition = math.MaxUint64
