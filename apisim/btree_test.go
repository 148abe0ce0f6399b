package apisim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkTree verifies t against the model and the B+tree invariants.
func checkTree(t *testing.T, tr btree, model map[string]*object) {
	t.Helper()
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if tr.Len() != len(keys) {
		t.Fatalf("Len %d, model %d", tr.Len(), len(keys))
	}
	var got []string
	tr.Ascend("", func(k string, v *object) bool {
		if model[k] != v {
			t.Fatalf("key %s maps to wrong value", k)
		}
		got = append(got, k)
		return true
	})
	if !slices.Equal(got, keys) {
		t.Fatalf("Ascend order differs: %d keys vs %d", len(got), len(keys))
	}
	if tr.root != nil {
		checkNode(t, tr.root, true)
	}
}

func checkNode(t *testing.T, n *btnode, root bool) (size int) {
	t.Helper()
	if len(n.keys) == 0 || len(n.keys) > btreeMaxEntries {
		t.Fatalf("node with %d keys", len(n.keys))
	}
	if !slices.IsSorted(n.keys) {
		t.Fatalf("unsorted node")
	}
	if n.leaf() {
		if len(n.vals) != len(n.keys) {
			t.Fatalf("leaf keys/vals mismatch")
		}
		size = len(n.keys)
	} else {
		if len(n.children) != len(n.keys) {
			t.Fatalf("inner keys/children mismatch")
		}
		if root && len(n.children) < 2 {
			t.Fatalf("inner root with one child")
		}
		for i, c := range n.children {
			if c.keys[0] != n.keys[i] {
				t.Fatalf("separator %q != child min %q", n.keys[i], c.keys[0])
			}
			size += checkNode(t, c, false)
		}
	}
	if size != n.size {
		t.Fatalf("size %d, counted %d", n.size, size)
	}
	return size
}

// TestBtreeAgainstModel applies random sets and deletes to the persistent
// tree and a map, checking contents, order, Rank, Get, and that every older
// snapshot is unchanged.
func TestBtreeAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type snap struct {
		tree  btree
		model map[string]*object
	}
	var snaps []snap
	var tr btree
	model := map[string]*object{}
	for step := range 20000 {
		k := fmt.Sprintf("ns-%d/p-%04d", r.IntN(5), r.IntN(800))
		switch {
		case r.IntN(3) == 0 || step > 15000: // drain-heavy tail exercises merges
			var ok bool
			tr, ok = tr.Delete(k)
			if _, in := model[k]; ok != in {
				t.Fatalf("Delete(%s) = %v, model has %v", k, ok, in)
			}
			delete(model, k)
		default:
			v := &object{key: k}
			tr = tr.Set(k, v)
			model[k] = v
		}
		if step%1000 == 0 {
			checkTree(t, tr, model)
			snaps = append(snaps, snap{tr, maps.Clone(model)})
		}
		if g := tr.Get(k); g != model[k] {
			t.Fatalf("Get(%s) wrong", k)
		}
	}
	checkTree(t, tr, model)
	for _, s := range snaps {
		checkTree(t, s.tree, s.model)
	}
	// Rank and Ascend from a midpoint.
	tr = btree{}
	for i := range 1000 {
		tr = tr.Set(fmt.Sprintf("k%04d", i), &object{})
	}
	for _, i := range []int{0, 1, 31, 32, 33, 500, 999} {
		k := fmt.Sprintf("k%04d", i)
		if got := tr.Rank(k); got != i {
			t.Errorf("Rank(%s) = %d", k, got)
		}
		if got := tr.Rank(k + "\x00"); got != i+1 {
			t.Errorf("Rank(%s+0) = %d", k, got)
		}
		var first string
		tr.Ascend(k, func(k string, _ *object) bool { first = k; return false })
		if first != k {
			t.Errorf("Ascend(%s) starts at %s", k, first)
		}
	}
}

// TestBtreeBatchAgainstModel interleaves batches of SetIn (new and
// existing keys), plain Sets and Deletes, checking every published tree
// against the model and that trees published before a batch are unchanged
// by it (a batch modifies only the nodes it built).
func TestBtreeBatchAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type snap struct {
		tree  btree
		model map[string]*object
	}
	var snaps []snap
	var tr btree
	model := map[string]*object{}
	for round := range 300 {
		switch r.IntN(4) {
		case 0: // plain writes between batches
			for range r.IntN(50) {
				k := fmt.Sprintf("ns-%d/p-%04d", r.IntN(5), r.IntN(2000))
				if r.IntN(2) == 0 {
					tr, _ = tr.Delete(k)
					delete(model, k)
				} else {
					v := &object{key: k}
					tr = tr.Set(k, v)
					model[k] = v
				}
			}
		default:
			b := &btreeBatch{}
			seq := r.IntN(2) == 0 // ascending keys, as a bulk load of one namespace
			base := r.IntN(2000)
			for i := range 1 + r.IntN(300) {
				k := fmt.Sprintf("ns-%d/p-%04d", r.IntN(5), r.IntN(2000))
				if seq {
					k = fmt.Sprintf("ns-%d/q-%06d", round%5, base*1000+i)
				}
				v := &object{key: k}
				tr = tr.SetIn(b, k, v)
				model[k] = v
			}
		}
		checkTree(t, tr, model)
		snaps = append(snaps, snap{tr, maps.Clone(model)})
	}
	for _, s := range snaps {
		checkTree(t, s.tree, s.model)
	}
}
