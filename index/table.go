package index

import (
	"hash/maphash"
	"sync/atomic"
)

// table is a hash set of cells, placed by the hash of their key: a partition's item map (cells
// found by key) and its large value sets (cells found by identity). One writer at a time (the owning
// Partition.mu) mutates it; any number of readers use it without a lock.
//
// It is open addressing with linear probing over a power-of-two array of cell pointers, plus one
// tag byte per slot (seven bits of the hash) so that a probe dereferences only cells that very
// likely match. A member costs 9 bytes per slot at a load between 1/4 and 3/4 (about 18 bytes on
// average), where a general concurrent map (xsync) costs an entry and a share of a bucket, about 50.
//
// Concurrency. Within one slot array a slot only ever goes empty -> cell, cell -> tombstone and
// tombstone -> cell; cells never move and slots never become empty again. An insert writes the
// slot's tag before its pointer, so a reader that sees the pointer sees the tag. Growing,
// shrinking and dropping tombstones build a new array and publish it with one store; the old
// array is never written again. So a reader that loads the array once and probes until an empty
// slot (find) or over all slots (each):
//   - finds or visits every cell present throughout the call, exactly once;
//   - may or may not see cells inserted or removed during the call (it may see a removed cell:
//     callers validate cells through their published version, as for every other map here).
type table struct {
	arr  atomic.Pointer[slots]
	live atomic.Int64 // members; written by the writer, read by anyone as a size hint
	used int          // slots of arr holding a cell or a tombstone; writer only
}

type slots struct {
	cells []atomic.Pointer[cell] // len is a power of two, at least minSlots
	tags  []atomic.Uint32        // the tag of slot i is byte i%4 of tags[i/4]
}

const minSlots = 8

// tombstone marks a slot whose cell was removed; it is never a member.
var tombstone = new(cell)

var hashSeed = maphash.MakeSeed()

func hashKey(key string) uint64 { return maphash.String(hashSeed, key) }

// tagOf is a slot tag for hash h: never zero, so a tag word's unset bytes match nothing.
func tagOf(h uint64) uint32 { return uint32(h>>57) | 0x80 }

func newSlots(n int) *slots {
	return &slots{cells: make([]atomic.Pointer[cell], n), tags: make([]atomic.Uint32, (n+3)/4)}
}

func (a *slots) tag(i uint64) uint32 { return a.tags[i/4].Load() >> (8 * (i % 4)) & 0xff }

// setTag writes the tag of slot i. REQUIRES: the table's writer.
func (a *slots) setTag(i uint64, tag uint32) {
	w := &a.tags[i/4]
	shift := 8 * (i % 4)
	w.Store(w.Load()&^(0xff<<shift) | tag<<shift)
}

// newTable returns a table sized for n members.
func newTable(n int) *table {
	t := &table{}
	t.arr.Store(newSlots(slotsFor(n)))
	return t
}

// slotsFor returns the array length for n members right after a rebuild: a load of at most 1/2.
func slotsFor(n int) int {
	size := minSlots
	for size < 2*n {
		size *= 2
	}
	return size
}

// find returns the member with key (whose hash is h), or nil.
func (t *table) find(key string, h uint64) *cell {
	a := t.arr.Load()
	mask := uint64(len(a.cells) - 1)
	tag := tagOf(h)
	for i := h & mask; ; i = (i + 1) & mask {
		c := a.cells[i].Load()
		if c == nil {
			return nil
		}
		if c != tombstone && a.tag(i) == tag && c.key == key {
			return c
		}
	}
}

// each calls f for every member until f returns false (see table for what a concurrent writer
// does to the visit).
func (t *table) each(f func(c *cell) bool) {
	a := t.arr.Load()
	for i := range a.cells {
		if c := a.cells[i].Load(); c != nil && c != tombstone && !f(c) {
			return
		}
	}
}

// insert adds c, whose key hashes to h. REQUIRES: the table's writer; c (or another cell with its
// key) is not a member.
func (t *table) insert(c *cell, h uint64) {
	a := t.arr.Load()
	if (t.used+1)*4 > len(a.cells)*3 {
		a = t.rebuild(int(t.live.Load()) + 1)
	}
	mask := uint64(len(a.cells) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		x := a.cells[i].Load()
		if x == nil || x == tombstone {
			a.setTag(i, tagOf(h))
			a.cells[i].Store(c)
			if x == nil {
				t.used++
			}
			t.live.Add(1)
			return
		}
	}
}

// remove removes c, whose key hashes to h, if it is a member. REQUIRES: the table's writer.
func (t *table) remove(c *cell, h uint64) {
	a := t.arr.Load()
	mask := uint64(len(a.cells) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch a.cells[i].Load() {
		case nil:
			return
		case c:
			a.cells[i].Store(tombstone)
			if n := t.live.Add(-1); n*8 < int64(len(a.cells)) && len(a.cells) > minSlots {
				t.rebuild(int(n))
			}
			return
		}
	}
}

// rebuild publishes a new array holding the members, sized for n of them, and returns it.
// REQUIRES: the table's writer; n >= the number of members.
func (t *table) rebuild(n int) *slots {
	old := t.arr.Load()
	a := newSlots(slotsFor(n))
	mask := uint64(len(a.cells) - 1)
	used := 0
	for i := range old.cells {
		c := old.cells[i].Load()
		if c == nil || c == tombstone {
			continue
		}
		h := hashKey(c.key)
		j := h & mask
		for a.cells[j].Load() != nil {
			j = (j + 1) & mask
		}
		a.setTag(j, tagOf(h))
		a.cells[j].Store(c)
		used++
	}
	t.used = used
	t.arr.Store(a)
	return a
}
