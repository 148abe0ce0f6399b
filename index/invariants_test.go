package index

import (
	"fmt"
	"slices"
	"unsafe"
)

// checkInvariants verifies a partition's internal structure. The partition's writer must be idle.
//   - every table is well formed (checkTable); every cell in the item map is published;
//   - a version has one value list per index, without repeated values;
//   - cell c is in the set of (index i, value v) iff v is among its version's values for i;
//   - no set is empty; a small set has at most smallSetMax members; a large one more than demoteAt.
func checkInvariants(p *Partition) error {
	s := p.st.Load()
	if len(s.byName) != len(s.idx) {
		return fmt.Errorf("byName has %d names, idx %d indexes", len(s.byName), len(s.idx))
	}
	for name, pos := range s.byName {
		if s.idx[pos].name != name {
			return fmt.Errorf("byName[%q] = %d, which is index %q", name, pos, s.idx[pos].name)
		}
	}
	var err error
	fail := func(format string, args ...any) bool {
		err = fmt.Errorf(format, args...)
		return false
	}
	if err := checkTable(s.items); err != nil {
		return fmt.Errorf("item map: %w", err)
	}
	s.items.each(func(c *cell) bool {
		key := c.key
		ver := c.cur.Load()
		if ver == nil {
			return fail("item %q is unpublished while the writer is idle", key)
		}
		n := 0
		if ver.vals != nil {
			n = len(*ver.vals)
		}
		if n != len(s.idx) {
			return fail("item %q has values for %d indexes, want %d", key, n, len(s.idx))
		}
		for i := range s.idx {
			vals := ver.valuesOf(i)
			for j, v := range vals {
				if slices.Contains(vals[:j], v) {
					return fail("item %q index %q: value %q repeated in %q", key, s.idx[i].name, v, vals)
				}
				vs, ok := s.idx[i].sets.Load(v)
				if !ok || !setHas(vs, c) {
					return fail("item %q not in set %q of index %q", key, v, s.idx[i].name)
				}
				if unsafe.StringData(v) != unsafe.StringData(vs.value) {
					return fail("item %q index %q: value %q is not the set's string", key, s.idx[i].name, v)
				}
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	for pos, ix := range s.idx {
		ix.sets.Range(func(v string, vs *valueSet) bool {
			size := 0
			if vs.large != nil {
				if vs.small.Load() != nil {
					return fail("index %q value %q: large set with a small array", ix.name, v)
				}
				size = int(vs.large.live.Load())
				if size <= demoteAt {
					return fail("index %q value %q: large set of %d", ix.name, v, size)
				}
				if terr := checkTable(vs.large); terr != nil {
					return fail("index %q value %q: %w", ix.name, v, terr)
				}
			} else {
				sm := vs.small.Load()
				size = sm.n
				if sm.n > smallSetMax {
					return fail("index %q value %q: small set of %d", ix.name, v, sm.n)
				}
				for i, c := range sm.cells[:sm.n] {
					if slices.Contains(sm.cells[:i], c) {
						return fail("index %q value %q: %q twice", ix.name, v, c.key)
					}
				}
			}
			if size == 0 {
				return fail("index %q value %q: empty set kept", ix.name, v)
			}
			vs.each(func(c *cell) bool {
				if got := s.items.find(c.key, hashKey(c.key)); got != c {
					return fail("index %q value %q: member %q is not the item's cell", ix.name, v, c.key)
				}
				if !c.cur.Load().indexedUnder(pos, v) {
					return fail("index %q value %q: member %q is not indexed under it", ix.name, v, c.key)
				}
				return true
			})
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkTable verifies a table: live and used count its members and occupied slots, there are
// empty slots, each member is there once with its tag and is reached by probing from its hash
// without crossing an empty slot, the load is within the bounds the writer keeps, and the stamps
// are consistent: base <= seq, seq - base <= maxStamp, an empty slot has no tag nor stamp, no slot's stamp
// is above seq - base, and no two members have the same non-zero stamp (one insert, one stamp).
func checkTable(t *table) error {
	a := t.arr.Load()
	seq := t.seq.Load()
	if a.base > seq || seq-a.base > maxStamp {
		return fmt.Errorf("base %d, seq %d, maxStamp %d", a.base, seq, maxStamp)
	}
	if len(a.tags) != (len(a.cells)+3)/4 || len(a.stamps) != (len(a.cells)+1)/2 {
		return fmt.Errorf("%d tag and %d stamp words for %d slots", len(a.tags), len(a.stamps), len(a.cells))
	}
	n, used := 0, 0
	seen := make(map[*cell]bool)
	stamps := make(map[uint64]string)
	for i := range a.cells {
		c := a.cells[i].Load()
		tag, stamp := a.tag(uint64(i)), uint64(a.stamp(uint64(i)))
		if c == nil {
			if tag != 0 || stamp != 0 {
				return fmt.Errorf("empty slot %d has tag %#x, stamp %d", i, tag, stamp)
			}
			continue
		}
		if stamp > seq-a.base {
			return fmt.Errorf("slot %d: stamp %d after seq %d (base %d)", i, stamp, seq, a.base)
		}
		used++
		if c == tombstone {
			continue
		}
		n++
		if seen[c] {
			return fmt.Errorf("%q twice", c.key)
		}
		seen[c] = true
		if stamp != 0 {
			if other, dup := stamps[stamp]; dup {
				return fmt.Errorf("%q and %q both have stamp %d", other, c.key, stamp)
			}
			stamps[stamp] = c.key
		}
		h := hashKey(c.key)
		if tag != tagOf(h) {
			return fmt.Errorf("%q: tag %#x, want %#x", c.key, tag, tagOf(h))
		}
		mask := uint64(len(a.cells) - 1)
		for j := h & mask; j != uint64(i); j = (j + 1) & mask {
			if a.cells[j].Load() == nil {
				return fmt.Errorf("%q at slot %d is not reachable from slot %d", c.key, i, h&mask)
			}
		}
	}
	switch {
	case int64(n) != t.live.Load():
		return fmt.Errorf("live = %d, holds %d", t.live.Load(), n)
	case used != t.used:
		return fmt.Errorf("used = %d, %d slots occupied", t.used, used)
	case used*4 > len(a.cells)*3:
		return fmt.Errorf("%d of %d slots occupied", used, len(a.cells))
	case len(a.cells) > minSlots && n*8 < len(a.cells):
		return fmt.Errorf("%d members in %d slots: not shrunk", n, len(a.cells))
	}
	return nil
}

func setHas(vs *valueSet, c *cell) bool {
	found := false
	vs.each(func(x *cell) bool {
		found = x == c
		return !found
	})
	return found
}

// fnvShard returns a shardOf for n shards hashing keys with FNV-1a 64, as the pipeline does.
func fnvShard(n int) func(string) int {
	return func(key string) int {
		h := uint64(14695981039346656037)
		for i := 0; i < len(key); i++ {
			h ^= uint64(key[i])
			h *= 1099511628211
		}
		return int(h % uint64(n))
	}
}
