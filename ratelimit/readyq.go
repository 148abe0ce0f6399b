package ratelimit

import (
	"sync/atomic"
)

// readyQueue is an unbounded, lock-free, multi-producer multi-consumer FIFO.
// Each push takes the next ticket (tail, by atomic add) and each pop the
// next ticket below tail (head, by compare-and-swap), so tickets number the
// elements in FIFO order and an element with ticket t has been popped iff
// t < head. The elements live in cells of linked fixed-size segments, one
// cell per ticket, never reused: a segment is garbage once head and tail
// have passed it.
//
// Memory order: push(x) writes x into its cell and then sets the cell's
// full flag; a pop takes ticket h only after it has seen cell h full, so a
// push synchronizes before the pop that returns its element, and a pop
// never waits for a push. A cell is written only by its push; a pop only
// reads it (it is not cleared: a segment keeps up to segSize popped
// elements reachable until it is garbage), so pushes and pops do not
// write each other's cache lines except for the head and tail counters.
//
// Neither operation blocks on a lock or allocates, except that one push in
// segSize allocates the next segment (a pop may allocate it first). The
// zero value is not usable; call init.
type readyQueue[T any] struct {
	// tail is the next push's ticket; written by pushes.
	tail atomic.Uint64
	_    [56]byte // keeps pushes' and pops' counters on separate cache lines
	// head is the next pop's ticket; head <= tail at all times, and every
	// cell below head is full.
	head atomic.Uint64
	_    [56]byte
	// tailSeg and headSeg point at or before the segment of the last
	// ticket pushed or popped: where a push or pop starts looking for its
	// segment. They only move forward.
	tailSeg, headSeg atomic.Pointer[segment[T]]
}

// segment holds the cells of tickets [id*segSize, (id+1)*segSize).
type segment[T any] struct {
	id    uint64
	next  atomic.Pointer[segment[T]]
	cells [segSize]cell[T]
}

// cell holds one element. v is written once, by the push holding its
// ticket, before full is set; it is read by the pop that moves head past
// the ticket after it sees full.
type cell[T any] struct {
	full atomic.Bool
	v    T
}

func (r *readyQueue[T]) init() {
	s := &segment[T]{}
	r.tailSeg.Store(s)
	r.headSeg.Store(s)
}

// len returns the number of elements pushed and not popped. It is exact
// only while no push or pop runs.
func (r *readyQueue[T]) len() int {
	h := r.head.Load() // before tail: tail >= head then, so len >= 0
	return int(r.tail.Load() - h)
}

// popped returns how many elements have been popped: an element whose
// ticket is below it is no longer in the queue.
func (r *readyQueue[T]) popped() uint64 { return r.head.Load() }

// push appends v and returns its ticket.
func (r *readyQueue[T]) push(v T) uint64 {
	s := r.tailSeg.Load() // before taking the ticket: s.id <= its segment
	t := r.tail.Add(1) - 1
	s = r.find(&r.tailSeg, s, t)
	c := &s.cells[t%segSize]
	c.v = v
	c.full.Store(true)
	return t
}

// tryPop removes the oldest element and returns it with its ticket; ok is
// false if the queue is empty or the oldest element's push has its ticket
// but has not yet written it (the push is then not complete, and its
// element not yet in the queue).
func (r *readyQueue[T]) tryPop() (v T, ticket uint64, ok bool) {
	s := r.headSeg.Load() // before reading head: s.id <= head's segment
	for {
		h := r.head.Load()
		s = r.find(&r.headSeg, s, h)
		c := &s.cells[h%segSize]
		if !c.full.Load() {
			return v, 0, false
		}
		// The cell stays full (cells are never reused), so whoever moves
		// head past h owns it.
		if r.head.CompareAndSwap(h, h+1) {
			return c.v, h, true
		}
	}
}

// ready reports whether tryPop would find an element now: the oldest
// ticket's push is complete.
func (r *readyQueue[T]) ready() bool {
	s := r.headSeg.Load()
	h := r.head.Load()
	return r.find(&r.headSeg, s, h).cells[h%segSize].full.Load()
}

// find returns the segment of ticket t, walking forward from s (whose id is
// at most t's segment) and adding segments where none exists yet, and moves
// *hint forward to it.
func (r *readyQueue[T]) find(hint *atomic.Pointer[segment[T]], s *segment[T], t uint64) *segment[T] {
	id := t / segSize
	for s.id < id {
		next := s.next.Load()
		if next == nil {
			next = &segment[T]{id: s.id + 1}
			if !s.next.CompareAndSwap(nil, next) {
				next = s.next.Load() // another push or pop added it
			}
		}
		s = next
	}
	for {
		h := hint.Load()
		if h.id >= id || hint.CompareAndSwap(h, s) {
			return s
		}
	}
}
