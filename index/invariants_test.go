package index

import (
	"fmt"
	"slices"
	"unsafe"
)

// checkInvariants verifies a partition's internal structure. The partition's writer must be idle.
//   - every cell in the item map is published, under its own key; live counts them;
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
	n := 0
	s.items.Range(func(key string, c *cell) bool {
		n++
		if c.key != key {
			return fail("item %q holds cell of %q", key, c.key)
		}
		ver := c.cur.Load()
		if ver == nil {
			return fail("item %q is unpublished while the writer is idle", key)
		}
		if len(ver.vals) != len(s.idx) {
			return fail("item %q has values for %d indexes, want %d", key, len(ver.vals), len(s.idx))
		}
		for i, vals := range ver.vals {
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
	if live := s.live.Load(); live != int64(n) {
		return fmt.Errorf("live = %d, item map holds %d", live, n)
	}
	for pos, ix := range s.idx {
		ix.sets.Range(func(v string, vs *valueSet) bool {
			size := 0
			if vs.large != nil {
				if vs.small.Load() != nil {
					return fail("index %q value %q: large set with a small array", ix.name, v)
				}
				size = vs.large.Size()
				if size <= demoteAt {
					return fail("index %q value %q: large set of %d", ix.name, v, size)
				}
				vs.large.Range(func(key string, c *cell) bool {
					if c.key != key {
						return fail("index %q value %q: key %q holds cell of %q", ix.name, v, key, c.key)
					}
					return true
				})
				if err != nil {
					return false
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
				if got, ok := s.items.Load(c.key); !ok || got != c {
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
