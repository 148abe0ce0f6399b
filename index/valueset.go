package index

import (
	"reflect"
	"sync/atomic"

	"github.com/puzpuzpuz/xsync/v3"
	"k8s.io/client-go/tools/cache"
)

// Value sets small enough to copy are kept as an immutable array replaced on every change; larger
// ones are a table. Copying 8 pointers is cheap, and the typical index value (an owner UID, a node
// with a few pods) has few members.
const (
	smallSetMax = 8               // largest set kept as an array; one more member promotes it
	demoteAt    = smallSetMax / 2 // a map that shrinks to this size becomes an array again
)

// smallSet is an immutable array of members. The writer never modifies a published smallSet; it
// publishes a new one.
type smallSet struct {
	n     int
	cells [smallSetMax]*cell
}

// valueSet is the set of cells indexed under one value of one index. A valueSet is either small or
// large for its whole life: promotion and demotion replace the valueSet in the index's map, so a
// reader holding the old one keeps a view frozen at the moment of the replacement (which the cell
// validation in readers makes harmless; see doc.go).
//
// Written only by the owning partition's writer (REQUIRES: Partition.mu held); read by anyone without
// a lock. Must not be copied.
type valueSet struct {
	// value is the set's value, and the one string instance of it that versions record (see
	// version.valuesOf): a reader checking a member compares string pointers, not bytes, in the common
	// case.
	value string
	// one is []string{value}: what a version records when this is its only value in the index;
	// tuple is &[][]string{one}: all it records in a partition with one index.
	one   []string
	tuple *[][]string
	small atomic.Pointer[smallSet] // the members when large == nil
	large *table                   // fixed at creation, nil for a small set
}

func newSmallValueSet(v string, c *cell) *valueSet {
	one := []string{v}
	vs := &valueSet{value: v, one: one, tuple: &[][]string{one}}
	sm := &smallSet{n: 1}
	sm.cells[0] = c
	vs.small.Store(sm)
	return vs
}

// sizeHint returns the number of members (valid or not) for preallocation.
func (vs *valueSet) sizeHint() int {
	if vs.large != nil {
		return int(vs.large.live.Load())
	}
	return vs.small.Load().n
}

// each calls f for every member until f returns false. Members added or removed concurrently may or
// may not be visited; every member is visited at most once, and one present throughout the call
// exactly once (a small set is an immutable array; a large one a table, whose each says so).
func (vs *valueSet) each(f func(c *cell) bool) {
	if vs.large != nil {
		vs.large.each(f)
		return
	}
	sm := vs.small.Load()
	for _, c := range sm.cells[:sm.n] {
		if !f(c) {
			return
		}
	}
}

// eachIndexed calls f, until it returns false, for every member whose version, loaded once, is
// indexed under the set's value at index position pos; with that version. It is each with the
// readers' validation (doc.go): a key at most once, one indexed under the value throughout the
// call exactly once.
func (vs *valueSet) eachIndexed(pos int, f func(c *cell, ver *version) bool) {
	v := vs.value
	vs.each(func(c *cell) bool {
		if ver := c.cur.Load(); ver.indexedUnder(pos, v) {
			return f(c, ver)
		}
		return true
	})
}

// appendObjects appends the object of every member currently indexed under the set's value at
// index position pos: eachIndexed without a closure, the hot path of ByIndex.
func (vs *valueSet) appendObjects(dst []any, pos int) []any {
	v := vs.value
	if vs.large == nil {
		sm := vs.small.Load()
		for _, c := range sm.cells[:sm.n] {
			if ver := c.cur.Load(); ver.indexedUnder(pos, v) {
				dst = append(dst, ver.obj)
			}
		}
		return dst
	}
	sc := vs.large.scan()
	for i := range sc.len() {
		if c := sc.at(i); c != nil {
			if ver := c.cur.Load(); ver.indexedUnder(pos, v) {
				dst = append(dst, ver.obj)
			}
		}
	}
	return dst
}

// appendKeys is appendObjects for keys.
func (vs *valueSet) appendKeys(dst []string, pos int) []string {
	vs.eachIndexed(pos, func(c *cell, _ *version) bool {
		dst = append(dst, c.key)
		return true
	})
	return dst
}

// anyValid reports whether some member is currently indexed under the set's value at pos.
func (vs *valueSet) anyValid(pos int) bool {
	found := false
	vs.eachIndexed(pos, func(*cell, *version) bool {
		found = true
		return false
	})
	return found
}

// index is one named index of a partition state: value -> set of cells. The sets map and the sets
// are written only by the partition's writer and read without a lock.
type index struct {
	name string
	fn   func(obj any) ([]string, error)
	sets *xsync.MapOf[string, *valueSet]
	// namespaceOnly: fn is cache.MetaNamespaceIndexFunc, which reads the namespace alone, so a
	// stored form with metadata can be indexed without decoding it (Partition.indexed).
	namespaceOnly bool
}

var namespaceIndexFunc = reflect.ValueOf(cache.MetaNamespaceIndexFunc).Pointer()

func newIndex(name string, fn func(obj any) ([]string, error)) *index {
	return &index{name: name, fn: fn, sets: xsync.NewMapOf[string, *valueSet](),
		namespaceOnly: reflect.ValueOf(fn).Pointer() == namespaceIndexFunc}
}

// addLocked adds c to the set of value v, creating the set if needed, and returns the set, whose
// value (or one) the caller records in c's version.
// REQUIRES: the owning Partition.mu held; c is not already in the set.
func (ix *index) addLocked(v string, c *cell) *valueSet {
	vs, ok := ix.sets.Load(v)
	if !ok {
		vs = newSmallValueSet(v, c)
		ix.sets.Store(v, vs)
		return vs
	}
	if vs.large != nil {
		vs.large.insert(c, hashKey(c.key))
		return vs
	}
	sm := vs.small.Load()
	if sm.n < smallSetMax {
		next := *sm
		next.cells[next.n] = c
		next.n++
		vs.small.Store(&next)
		return vs
	}
	// Promote: build the table fully, then publish it with one store into the index. The new set
	// keeps the value strings that versions record.
	t := newTable(sm.n + 1)
	for _, x := range sm.cells[:sm.n] {
		t.insert(x, hashKey(x.key))
	}
	t.insert(c, hashKey(c.key))
	large := &valueSet{value: vs.value, one: vs.one, tuple: vs.tuple, large: t}
	ix.sets.Store(v, large)
	return large
}

// removeLocked removes c from the set of value v and deletes the set once it is empty (an index over
// short-lived values would otherwise grow without bound; kubernetes#84959).
// REQUIRES: the owning Partition.mu held.
func (ix *index) removeLocked(v string, c *cell) {
	vs, ok := ix.sets.Load(v)
	if !ok {
		return
	}
	if vs.large != nil {
		vs.large.remove(c, hashKey(c.key))
		switch n := vs.large.live.Load(); {
		case n == 0:
			ix.sets.Delete(v)
		case n <= demoteAt:
			small := &valueSet{value: vs.value, one: vs.one, tuple: vs.tuple}
			sm := &smallSet{}
			vs.large.each(func(x *cell) bool {
				sm.cells[sm.n] = x
				sm.n++
				return sm.n < smallSetMax
			})
			small.small.Store(sm)
			ix.sets.Store(v, small)
		}
		return
	}
	sm := vs.small.Load()
	next := &smallSet{}
	for _, x := range sm.cells[:sm.n] {
		if x != c {
			next.cells[next.n] = x
			next.n++
		}
	}
	if next.n == 0 {
		ix.sets.Delete(v)
		return
	}
	vs.small.Store(next)
}
