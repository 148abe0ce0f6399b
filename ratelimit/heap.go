package ratelimit

import "time"

// delayed is one key waiting in the delay heap for its due time.
type delayed[K comparable] struct {
	key K
	due time.Time
	seq uint64 // insertion order; breaks ties between equal due times (FIFO)
	idx int    // position in delayHeap.items, maintained by the heap
}

// delayHeap is a min-heap of delayed keys ordered by (due, seq), with at most
// one entry per key so that a later AddAfter never postpones an earlier one.
//
// It is not safe for concurrent use; the Queue guards it with its mutex.
type delayHeap[K comparable] struct {
	items []*delayed[K]
	byKey map[K]*delayed[K]
	seq   uint64
}

func (h *delayHeap[K]) len() int { return len(h.items) }

// min returns the entry due first.
// REQUIRES: h.len() > 0.
func (h *delayHeap[K]) min() *delayed[K] { return h.items[0] }

// schedule makes k due at due unless it is already due no later, and reports
// whether the heap changed.
func (h *delayHeap[K]) schedule(k K, due time.Time) bool {
	h.seq++
	if e, ok := h.byKey[k]; ok {
		if !due.Before(e.due) {
			return false // the earlier due time wins
		}
		e.due, e.seq = due, h.seq
		h.up(e.idx) // due only moved earlier
		return true
	}
	if h.byKey == nil {
		h.byKey = make(map[K]*delayed[K])
	}
	e := &delayed[K]{key: k, due: due, seq: h.seq, idx: len(h.items)}
	h.items = append(h.items, e)
	h.byKey[k] = e
	h.up(e.idx)
	return true
}

// popMin removes and returns the entry due first.
// REQUIRES: h.len() > 0.
func (h *delayHeap[K]) popMin() *delayed[K] {
	e := h.items[0]
	last := len(h.items) - 1
	h.swap(0, last)
	h.items[last] = nil
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	delete(h.byKey, e.key)
	return e
}

// clear drops every entry.
func (h *delayHeap[K]) clear() {
	clear(h.items)
	h.items = h.items[:0]
	clear(h.byKey)
}

func (h *delayHeap[K]) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if !a.due.Equal(b.due) {
		return a.due.Before(b.due)
	}
	return a.seq < b.seq
}

func (h *delayHeap[K]) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].idx = i
	h.items[j].idx = j
}

func (h *delayHeap[K]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *delayHeap[K]) down(i int) {
	n := len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			return
		}
		h.swap(i, c)
		i = c
	}
}
