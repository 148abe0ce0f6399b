package index

import (
	"hash/maphash"
	"iter"
	"sync/atomic"
)

// table is a hash set of cells, placed by the hash of their key: a partition's item map (cells
// found by key) and its large value sets (cells found by identity). One writer at a time (the owning
// Partition.mu) mutates it; any number of readers use it without a lock.
//
// It is open addressing with linear probing over a power-of-two array of cell pointers, plus per
// slot a tag byte (seven bits of the hash, so that a probe dereferences only cells that very likely
// match; what find reads) and a 16-bit insertion stamp (what scans read). A member costs 11 bytes
// per slot at a load between 1/4 and 3/4 (about 22 bytes on average), where a general concurrent
// map (xsync) costs an entry and a share of a bucket, about 50.
//
// Concurrency. Within one slot array a slot only ever goes empty -> cell, cell -> tombstone and
// tombstone -> cell; cells never move and slots never become empty again. Growing, shrinking,
// dropping tombstones and running out of stamps build a new array and publish it with one store;
// the old array is never written again.
//
// Stamps. Every insert takes the next number of the table's counter seq, and its slot records it
// (relative to the array's base, the counter when the array was built; a cell copied into a new
// array records 0). A scan loads the array, then seq, and skips slots stamped after that: cells
// inserted after the scan began. Without that, a scan could return one key twice: a member
// removed after the scan passed its slot, its tombstone taken by another key of its probe chain,
// then inserted again, lands further along the chain, where the scan would meet it again.
//
// Memory-order contract (Go memory model; the writer's stores are sequenced in this order):
//   - insert n stores the slot's stamp (n) and tag before the slot's pointer, and all three before
//     seq = n. A reader that loads the pointer stored by insert n therefore loads a stamp >= n
//     (n, or the stamp of a later insert into that slot: stamps only grow; a store for the
//     neighbour sharing the stamp's word keeps it) and the right tag;
//   - a removal stores the tombstone before the next seq store, so a scan that loads seq = s
//     never loads, from any slot of its array, a cell removed before the insert stamped s;
//   - a rebuild computes the new array, base included, before publishing it (arr.Store), so a
//     reader that loads the array then loads seq >= base.
//
// Hence what readers see. A find, which probes from the key's home slot to an empty slot, and a
// scan (each), which visits all slots of the array it loaded once:
//   - find or visit every cell that is a member throughout the call, exactly once;
//   - a scan never visits two cells of one key, nor one cell twice: of one key's memberships of
//     its array with stamps up to the seq it loaded, all but the last were removed before that load;
//   - may or may not see cells inserted or removed during the call (it may see a removed cell:
//     callers validate cells through their published version, as for every other map here).
type table struct {
	arr  atomic.Pointer[slots]
	live atomic.Int64  // members; written by the writer, read by anyone as a size hint
	seq  atomic.Uint64 // inserts ever made; the stamp of the last one. Written by the writer.
	used int           // slots of arr holding a cell or a tombstone; writer only
}

type slots struct {
	cells []atomic.Pointer[cell] // len is a power of two, at least minSlots
	tags  []atomic.Uint32        // the tag of slot i is byte i%4 of tags[i/4]; 0 until filled
	// The stamp of slot i, half i%2 of stamps[i/2], is the stamp of the insert that stored its
	// pointer minus base; 0 for a cell copied in when the array was built, or a slot never filled.
	stamps []atomic.Uint32
	base   uint64 // the table's seq when the array was built; immutable
}

const (
	minSlots  = 8
	stampBits = 16
)

// maxStamp is the largest stamp an array records (relative to its base); an insert that would
// exceed it builds a new array. A variable so that tests can reach it.
var maxStamp uint64 = 1<<stampBits - 1

// tombstone marks a slot whose cell was removed; it is never a member.
var tombstone = new(cell)

var hashSeed = maphash.MakeSeed()

func hashKey(key string) uint64 { return maphash.String(hashSeed, key) }

// tagOf is a slot tag for hash h: never zero, so that an unset tag matches nothing.
func tagOf(h uint64) uint32 { return uint32(h>>57) | 0x80 }

func newSlots(n int, base uint64) *slots {
	return &slots{
		cells:  make([]atomic.Pointer[cell], n),
		tags:   make([]atomic.Uint32, (n+3)/4),
		stamps: make([]atomic.Uint32, (n+1)/2),
		base:   base,
	}
}

func (a *slots) tag(i uint64) uint32   { return field(a.tags, i, 8) }
func (a *slots) stamp(i uint64) uint32 { return field(a.stamps, i, stampBits) }

// field returns field i of width bits (dividing 32) of the array packed into words.
func field(words []atomic.Uint32, i uint64, bits uint) uint32 {
	per := uint64(32 / bits)
	return words[i/per].Load() >> (bits * uint(i%per)) & (1<<bits - 1)
}

// setField sets field i of width bits of words to v. REQUIRES: the table's writer (the only
// writer of words, so the other fields of the word keep their values).
func setField(words []atomic.Uint32, i uint64, bits uint, v uint32) {
	per := uint64(32 / bits)
	w := &words[i/per]
	shift := bits * uint(i%per)
	w.Store(w.Load()&^((1<<bits-1)<<shift) | v<<shift)
}

// newTable returns a table sized for n members.
func newTable(n int) *table {
	t := &table{}
	t.arr.Store(newSlots(slotsFor(n), 0))
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

// touch reads, for each key of keys, what a find of it reads first — its home slot and tag, the
// cell there, that cell's key bytes and current version — and returns a value computed from them
// so that the loads cannot be dropped. Its loop iterations are independent, so a CPU overlaps
// their cache misses, where the finds that follow would take them one after the other. It stops
// after PrefetchKeys keys (the lines loaded must still be cached when the finds come).
//
//go:noinline
func (t *table) touch(keys iter.Seq[string]) (sink uint64) {
	a := t.arr.Load()
	mask := uint64(len(a.cells) - 1)
	var cells [PrefetchKeys]*cell
	n := 0
	for key := range keys {
		i := hashKey(key) & mask
		cells[n] = a.cells[i].Load()
		sink += uint64(a.tags[i/4].Load())
		if n++; n == PrefetchKeys {
			break
		}
	}
	for _, c := range cells[:n] {
		if c == nil || len(c.key) == 0 { // empty slot, tombstone (or the key "")
			continue
		}
		sink += uint64(c.key[0])
		if v := c.cur.Load(); v != nil {
			sink += v.stamp
		}
	}
	return sink
}

// scan is one scan of a table: the array, loaded once, and the largest stamp to visit, from the
// table's seq loaded after the array. Slots stamped above it were filled after the scan began.
// Loops over at(i) for i < len() take no closure (the hot path of ByIndex and List).
type scan struct {
	cells  []atomic.Pointer[cell]
	stamps []atomic.Uint32
	limit  uint64
}

// scan starts a scan (see table for what a concurrent writer does to it: each key at most once).
func (t *table) scan() scan {
	a := t.arr.Load()
	// seq >= a.base (see table); an old array's limit may exceed maxStamp, and then every
	// slot qualifies.
	return scan{cells: a.cells, stamps: a.stamps, limit: t.seq.Load() - a.base}
}

func (s scan) len() int { return len(s.cells) }

// at returns the cell in slot i if it is a member inserted before the scan began, or nil.
func (s scan) at(i int) *cell {
	c := s.cells[i].Load()
	if c == nil || c == tombstone || uint64(field(s.stamps, uint64(i), stampBits)) > s.limit {
		return nil
	}
	return c
}

// each calls f for every member until f returns false, skipping members inserted after the call
// began (see scan).
func (t *table) each(f func(c *cell) bool) {
	sc := t.scan()
	for i := range sc.len() {
		if c := sc.at(i); c != nil && !f(c) {
			return
		}
	}
}

// insert adds c, whose key hashes to h. REQUIRES: the table's writer; c (or another cell with its
// key) is not a member.
func (t *table) insert(c *cell, h uint64) {
	a := t.arr.Load()
	stamp := t.seq.Load() + 1
	if (t.used+1)*4 > len(a.cells)*3 || stamp-a.base > maxStamp {
		a = t.rebuild(int(t.live.Load()) + 1)
	}
	mask := uint64(len(a.cells) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		x := a.cells[i].Load()
		if x == nil || x == tombstone {
			setField(a.stamps, i, stampBits, uint32(stamp-a.base))
			setField(a.tags, i, 8, tagOf(h))
			a.cells[i].Store(c)
			t.seq.Store(stamp)
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

// rebuild publishes a new array holding the members, sized for n of them, and returns it. The
// members keep no stamp: they are older than any scan of the new array.
// REQUIRES: the table's writer; n >= the number of members.
func (t *table) rebuild(n int) *slots {
	old := t.arr.Load()
	a := newSlots(slotsFor(n), t.seq.Load())
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
		setField(a.tags, j, 8, tagOf(h))
		a.cells[j].Store(c)
		used++
	}
	t.used = used
	t.arr.Store(a)
	return a
}
