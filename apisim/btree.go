package apisim

import (
	"slices"
	"sort"
)

// btreeMaxEntries is the most keys a node holds (entries in a leaf, children
// in an inner node). A write copies one node per level; with 32 a 100k-key
// tree is four levels deep, so a write allocates about 4 nodes (~3 KB).
const btreeMaxEntries = 32

// btreeMinEntries is the fill below which a node is merged into a
// neighbour after a delete.
const btreeMinEntries = btreeMaxEntries / 4

// btree is a persistent (immutable, path-copying) B+tree mapping keys
// ("namespace/name") to object versions, ordered bytewise like etcd keys.
//
// A btree value is a snapshot: Set and Delete return a new tree and never
// modify the receiver or any node reachable from it, so a btree may be read
// by any number of goroutines without locks while writers derive new trees.
// The zero value is an empty tree. A btree may be copied.
type btree struct {
	root *btnode
}

// btnode is a leaf (children == nil; keys[i] maps to vals[i]) or an inner
// node (vals == nil; keys[i] is the smallest key under children[i]).
// Nodes are immutable once published in a tree.
type btnode struct {
	keys     []string
	vals     []*object
	children []*btnode
	size     int // entries in the subtree
	// owner is the batch that built the node, which may still modify it
	// (SetIn); nil for nodes built by Set and Delete.
	owner *btreeBatch
}

// btreeBatch lets a sequence of SetIn calls modify, in place, the nodes the
// earlier calls of the sequence built, instead of copying them again: a
// bulk load copies each path once per batch rather than once per key. The
// trees the calls return are not snapshots: only the last may be
// published, and once it is the batch must not be used again.
type btreeBatch struct{ _ byte }

func (n *btnode) leaf() bool { return n.children == nil }

// Len returns the number of entries.
func (t btree) Len() int {
	if t.root == nil {
		return 0
	}
	return t.root.size
}

// Get returns the value stored under key, or nil.
func (t btree) Get(key string) *object {
	n := t.root
	if n == nil {
		return nil
	}
	for !n.leaf() {
		n = n.children[childIndex(n.keys, key)]
	}
	i := sort.SearchStrings(n.keys, key)
	if i < len(n.keys) && n.keys[i] == key {
		return n.vals[i]
	}
	return nil
}

// Set returns a tree in which key maps to v.
func (t btree) Set(key string, v *object) btree { return t.SetIn(nil, key, v) }

// SetIn is Set within batch b (see btreeBatch); a nil b is Set.
func (t btree) SetIn(b *btreeBatch, key string, v *object) btree {
	if t.root == nil {
		return btree{root: &btnode{keys: []string{key}, vals: []*object{v}, size: 1, owner: b}}
	}
	n, split := t.root.set(key, v, b)
	if split != nil {
		n = &btnode{
			keys:     []string{n.keys[0], split.keys[0]},
			children: []*btnode{n, split},
			size:     n.size + split.size,
			owner:    b,
		}
	}
	return btree{root: n}
}

// Delete returns a tree without key, and whether key was present.
func (t btree) Delete(key string) (btree, bool) {
	if t.root == nil {
		return t, false
	}
	n, ok := t.root.delete(key)
	if !ok {
		return t, false
	}
	for n != nil && !n.leaf() && len(n.children) == 1 {
		n = n.children[0]
	}
	return btree{root: n}, true
}

// Rank returns the number of keys strictly less than key.
func (t btree) Rank(key string) int {
	r := 0
	n := t.root
	if n == nil {
		return 0
	}
	for !n.leaf() {
		i := childIndex(n.keys, key)
		for _, c := range n.children[:i] {
			r += c.size
		}
		n = n.children[i]
	}
	return r + sort.SearchStrings(n.keys, key)
}

// Ascend calls fn for every entry with key >= from, in key order, until fn
// returns false.
func (t btree) Ascend(from string, fn func(key string, v *object) bool) {
	if t.root != nil {
		t.root.ascend(from, fn)
	}
}

func (n *btnode) ascend(from string, fn func(string, *object) bool) bool {
	if n.leaf() {
		for i := sort.SearchStrings(n.keys, from); i < len(n.keys); i++ {
			if !fn(n.keys[i], n.vals[i]) {
				return false
			}
		}
		return true
	}
	for i := childIndex(n.keys, from); i < len(n.children); i++ {
		if !n.children[i].ascend(from, fn) {
			return false
		}
	}
	return true
}

// childIndex returns the child of an inner node whose range holds key: the
// last child whose smallest key is <= key, or the first child.
func childIndex(keys []string, key string) int {
	i := sort.Search(len(keys), func(i int) bool { return keys[i] > key })
	if i > 0 {
		i--
	}
	return i
}

// set returns the copy of n with key set, and a right sibling if the copy
// overflowed and was split. A node of batch b (non-nil) is modified in
// place instead of copied; copies belong to b.
func (n *btnode) set(key string, v *object, b *btreeBatch) (*btnode, *btnode) {
	mine := b != nil && n.owner == b
	if n.leaf() {
		i := sort.SearchStrings(n.keys, key)
		if i < len(n.keys) && n.keys[i] == key {
			if mine {
				n.vals[i] = v
				return n, nil
			}
			keys := n.keys
			if b != nil { // a batch may insert into c in place: not into n's keys
				keys = clone(keys, 0)
			}
			c := &btnode{keys: keys, vals: clone(n.vals, 0), size: n.size, owner: b}
			c.vals[i] = v
			return c, nil
		}
		if mine {
			n.keys, n.vals = insertOwned(n.keys, i, key), insertOwned(n.vals, i, v)
			n.size++
			return n.splitIfFull()
		}
		c := &btnode{keys: insertAt(n.keys, i, key), vals: insertAt(n.vals, i, v), size: n.size + 1, owner: b}
		return c.splitIfFull()
	}
	i := childIndex(n.keys, key)
	oldSize := n.children[i].size // before set: a child of the batch changes in place
	child, split := n.children[i].set(key, v, b)
	c := n
	if !mine {
		c = &btnode{keys: clone(n.keys, 1), children: clone(n.children, 1), size: n.size, owner: b}
	}
	c.size += child.size - oldSize
	c.keys[i], c.children[i] = child.keys[0], child
	if split != nil {
		c.keys = insertOwned(c.keys, i+1, split.keys[0])
		c.children = insertOwned(c.children, i+1, split)
		c.size += split.size
	}
	return c.splitIfFull()
}

// splitIfFull splits a node that holds more than btreeMaxEntries, freshly
// built or of a batch, into two halves.
func (n *btnode) splitIfFull() (*btnode, *btnode) {
	if len(n.keys) <= btreeMaxEntries {
		return n, nil
	}
	h := len(n.keys) / 2
	right := &btnode{keys: clone(n.keys[h:], 0), owner: n.owner}
	n.keys = n.keys[:h:h]
	if n.leaf() {
		right.vals = clone(n.vals[h:], 0)
		n.vals = n.vals[:h:h]
		right.size = len(right.keys)
		n.size = len(n.keys)
	} else {
		right.children = clone(n.children[h:], 0)
		n.children = n.children[:h:h]
		for _, c := range right.children {
			right.size += c.size
		}
		n.size -= right.size
	}
	return n, right
}

// delete returns the copy of n without key (nil if it became empty) and
// whether key was found.
func (n *btnode) delete(key string) (*btnode, bool) {
	if n.leaf() {
		i := sort.SearchStrings(n.keys, key)
		if i == len(n.keys) || n.keys[i] != key {
			return n, false
		}
		if len(n.keys) == 1 {
			return nil, true
		}
		return &btnode{keys: removeAt(n.keys, i), vals: removeAt(n.vals, i), size: n.size - 1}, true
	}
	i := childIndex(n.keys, key)
	child, ok := n.children[i].delete(key)
	if !ok {
		return n, false
	}
	c := &btnode{keys: clone(n.keys, 1), children: clone(n.children, 1), size: n.size - 1}
	if child == nil {
		c.keys, c.children = removeAt(c.keys, i), removeAt(c.children, i)
		if len(c.children) == 0 {
			return nil, true
		}
		return c, true
	}
	c.keys[i], c.children[i] = child.keys[0], child
	if len(child.keys) < btreeMinEntries && len(c.children) > 1 {
		c.mergeChild(i)
	}
	return c, true
}

// mergeChild merges the underfull child i of the fresh node c with a
// neighbour, re-splitting if the union overflows.
// REQUIRES: c is not yet published; len(c.children) > 1.
func (c *btnode) mergeChild(i int) {
	l := i
	if l == len(c.children)-1 {
		l--
	}
	a, b := c.children[l], c.children[l+1]
	m := &btnode{size: a.size + b.size}
	m.keys = append(clone(a.keys, len(b.keys)), b.keys...)
	if a.leaf() {
		m.vals = append(clone(a.vals, len(b.vals)), b.vals...)
	} else {
		m.children = append(clone(a.children, len(b.children)), b.children...)
	}
	left, right := m.splitIfFull()
	c.children[l], c.keys[l] = left, left.keys[0]
	if right != nil {
		c.children[l+1], c.keys[l+1] = right, right.keys[0]
		return
	}
	c.keys, c.children = removeAt(c.keys, l+1), removeAt(c.children, l+1)
}

// clone returns a copy of s with spare capacity for extra more elements.
func clone[T any](s []T, extra int) []T {
	out := make([]T, len(s), len(s)+extra)
	copy(out, s)
	return out
}

// insertAt returns a new slice with v inserted at i; s is not modified.
func insertAt[T any](s []T, i int, v T) []T {
	out := make([]T, len(s)+1)
	copy(out, s[:i])
	out[i] = v
	copy(out[i+1:], s[i:])
	return out
}

// insertOwned inserts v at i into s, a slice of a node the caller may
// modify, in place if s has room; it grows s at most to a full node's
// size plus one, so that nodes do not keep room they can never use.
func insertOwned[T any](s []T, i int, v T) []T {
	if len(s) == cap(s) { // REQUIRES: len(s) <= btreeMaxEntries
		g := make([]T, len(s), min(max(2*len(s), 4), btreeMaxEntries+1))
		copy(g, s)
		s = g
	}
	return slices.Insert(s, i, v)
}

// removeAt returns a new slice without element i; s is not modified.
func removeAt[T any](s []T, i int) []T {
	out := make([]T, len(s)-1)
	copy(out, s[:i])
	copy(out[i:], s[i+1:])
	return out
}
