package ratelimit

import "iter"

// table is a shard's hash table from keys to their entries: open
// addressing with linear probing over a power-of-two array, keyed by a hash
// the caller computes once per operation (the same hash picks the shard, see
// Queue.hash). Against a Go map it saves hashing the key again for every
// map operation and lets Add look up and insert, and Done look up and
// delete, in one probe sequence.
//
// The hashes are kept in their own array, eight to a cache line, so that a
// probe compares keys only on a full hash match. Hash 0 marks an empty slot
// (Queue.hash never returns it). Deletion shifts later entries of the probe
// sequence back, so there are no tombstones. The table grows by doubling
// above 3/4 full and, like a Go map, never shrinks: its memory is bounded
// by the largest number of keys ready or in flight at once in the shard.
//
// It is not safe for concurrent use: the shard's mutex guards it. A slot
// index is valid until the next upsert or removeAt.
type table[K comparable] struct {
	hashes []uint64 // len is 0 or a power of two; 0 marks an empty slot
	slots  []tslot[K]
	n      int // keys in the table
}

// tslot is one key and its entry.
type tslot[K comparable] struct {
	key K
	e   entry
}

// minTableSize is the size of a table's first array.
const minTableSize = 8

// lookup returns the slot of k, whose hash is h, or -1 if k is absent.
func (t *table[K]) lookup(h uint64, k K) int {
	if t.n == 0 {
		return -1
	}
	mask := uint64(len(t.hashes) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.hashes[i] {
		case 0:
			return -1
		case h:
			if t.slots[i].key == k {
				return int(i)
			}
		}
	}
}

// upsert returns the slot of k, whose hash is h, and whether k was there;
// if it was not, it inserts k with a zero entry.
func (t *table[K]) upsert(h uint64, k K) (int, bool) {
	if 4*(t.n+1) > 3*len(t.hashes) {
		if i := t.lookup(h, k); i >= 0 {
			return i, true // full, but no insert needed
		}
		t.grow()
	}
	mask := uint64(len(t.hashes) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.hashes[i] {
		case 0:
			t.hashes[i] = h
			t.slots[i] = tslot[K]{key: k}
			t.n++
			return int(i), false
		case h:
			if t.slots[i].key == k {
				return int(i), true
			}
		}
	}
}

// removeAt deletes the key in slot i, which must hold one, and moves back
// the keys after it in its probe sequence that would no longer be found.
func (t *table[K]) removeAt(i int) {
	mask := len(t.hashes) - 1
	for j := i; ; {
		j = (j + 1) & mask
		h := t.hashes[j]
		if h == 0 {
			break
		}
		// The key in j may move to the hole in i unless its home slot lies
		// cyclically in (i, j]: it would then be found before reaching i.
		home := int(h) & mask
		if (j-home)&mask < (j-i)&mask {
			continue
		}
		t.hashes[i], t.slots[i] = h, t.slots[j]
		i = j
	}
	t.hashes[i] = 0
	t.slots[i] = tslot[K]{} // let the GC reclaim what the key points to
	t.n--
}

func (t *table[K]) grow() {
	size := 2 * len(t.hashes)
	if size == 0 {
		size = minTableSize
	}
	old, oldSlots := t.hashes, t.slots
	t.hashes, t.slots = make([]uint64, size), make([]tslot[K], size)
	mask := uint64(size - 1)
	for j, h := range old {
		if h == 0 {
			continue
		}
		i := h & mask
		for t.hashes[i] != 0 {
			i = (i + 1) & mask
		}
		t.hashes[i], t.slots[i] = h, oldSlots[j]
	}
}

// all yields the keys and their entries, in no particular order.
func (t *table[K]) all() iter.Seq2[K, entry] {
	return func(yield func(K, entry) bool) {
		for i, h := range t.hashes {
			if h != 0 && !yield(t.slots[i].key, t.slots[i].e) {
				return
			}
		}
	}
}
