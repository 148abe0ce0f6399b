package index

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// withMaxStamp runs f with maxStamp set to n, so that arrays run out of stamps every n inserts.
// The tests calling it must not run in parallel with others.
func withMaxStamp(t *testing.T, n uint64, f func(t *testing.T)) {
	t.Run(fmt.Sprintf("maxStamp=%d", n), func(t *testing.T) {
		defer func(old uint64) { maxStamp = old }(maxStamp)
		maxStamp = n
		f(t)
	})
}

// TestTableModel runs random inserts and removals against a map and checks membership and the
// table's invariants after every operation, through growth, tombstone reuse and shrinking, with
// the real stamp limit and with one that forces a new array every few inserts.
func TestTableModel(t *testing.T) {
	t.Run("maxStamp=default", runTableModel(20000))
	withMaxStamp(t, 5, runTableModel(5000))
}

// TestTableScanModelStampsExhausted is TestTableScanModel with arrays running out of stamps under
// the scans.
func TestTableScanModelStampsExhausted(t *testing.T) {
	withMaxStamp(t, 7, runTableScanModel)
}

// TestTableStampsExhausted checks that the insert that would exceed maxStamp builds a new array of
// the same size whose base is the table's seq, where the members start over from stamp 0, and that
// a scan of the old array is unaffected.
func TestTableStampsExhausted(t *testing.T) {
	withMaxStamp(t, 3, func(t *testing.T) {
		tab := newTable(0)
		var members []*cell
		for i := range 3 {
			c := &cell{key: fmt.Sprintf("k%d", i)}
			tab.insert(c, hashKey(c.key))
			members = append(members, c)
		}
		old := tab.arr.Load()
		visits := map[string]int{}
		tab.each(func(c *cell) bool {
			visits[c.key]++
			if len(visits) == 1 { // pause the scan: re-add the key just visited and a new one
				tab.remove(c, hashKey(c.key))
				tab.insert(c, hashKey(c.key))
				x := &cell{key: "x"}
				tab.insert(x, hashKey(x.key))
			}
			return true
		})
		wantOnce(t, visits, "k0", "k1", "k2")
		a := tab.arr.Load()
		if a == old || len(a.cells) != len(old.cells) {
			t.Fatalf("array %p of %d slots after running out of stamps, was %p of %d", a, len(a.cells), old, len(old.cells))
		}
		if seq := tab.seq.Load(); seq != 5 || a.base != 3 {
			t.Fatalf("seq %d, base %d after 5 inserts with a rebuild after the third; want 5, 3", seq, a.base)
		}
		if err := checkTable(tab); err != nil {
			t.Fatal(err)
		}
	})
}

func runTableModel(steps int) func(t *testing.T) {
	return func(t *testing.T) { tableModel(t, steps) }
}

func tableModel(t *testing.T, steps int) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newTable(0)
	model := map[string]*cell{}
	cells := map[string]*cell{}
	for step := range steps {
		// Drift the key range so that the table grows, then shrinks, then grows again.
		span := 10 + (step/2000%3)*400
		key := fmt.Sprintf("ns/k%d", rng.IntN(span))
		if c, ok := model[key]; ok {
			tab.remove(c, hashKey(key))
			delete(model, key)
		} else {
			c := &cell{key: key}
			cells[key] = c
			tab.insert(c, hashKey(key))
			model[key] = c
		}
		if err := checkTable(tab); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		probe := fmt.Sprintf("ns/k%d", rng.IntN(span))
		if got := tab.find(probe, hashKey(probe)); got != model[probe] {
			t.Fatalf("step %d: find(%q) = %p, want %p", step, probe, got, model[probe])
		}
	}
	// Removing a cell that is not a member (a stale cell of a key) changes nothing.
	for key, c := range cells {
		if model[key] != c {
			tab.remove(c, hashKey(key))
		}
	}
	if err := checkTable(tab); err != nil {
		t.Fatal(err)
	}
	n := 0
	tab.each(func(c *cell) bool {
		if model[c.key] != c {
			t.Errorf("each visited %q, not a member", c.key)
		}
		n++
		return true
	})
	if n != len(model) {
		t.Errorf("each visited %d cells, want %d", n, len(model))
	}
}

// TestTableConcurrentReaders checks what readers see while the writer inserts and removes other
// keys (growing, shrinking and rebuilding the array): a member present throughout is always found,
// and each visits it exactly once. Run it with -race.
func TestTableConcurrentReaders(t *testing.T) {
	tab := newTable(0)
	stable := make([]*cell, 50)
	for i := range stable {
		stable[i] = &cell{key: fmt.Sprintf("stable/%d", i)}
		tab.insert(stable[i], hashKey(stable[i].key))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { // reader goroutine
			for i := r; !stop.Load(); i++ {
				c := stable[i%len(stable)]
				if got := tab.find(c.key, hashKey(c.key)); got != c {
					t.Errorf("find(%q) = %v while it was a member", c.key, got)
					return
				}
				seen := make(map[*cell]int)
				tab.each(func(x *cell) bool { seen[x]++; return true })
				for _, s := range stable {
					if seen[s] != 1 {
						t.Errorf("each visited %q %d times", s.key, seen[s])
						return
					}
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(3, 4))
	churn := map[string]*cell{}
	for step := range 30000 {
		key := fmt.Sprintf("churn/%d", rng.IntN(200+step/100))
		if c, ok := churn[key]; ok {
			tab.remove(c, hashKey(key))
			delete(churn, key)
		} else {
			c := &cell{key: key}
			tab.insert(c, hashKey(key))
			churn[key] = c
		}
		if step%5000 == 4999 { // drain: the array shrinks under the readers
			for k, c := range churn {
				tab.remove(c, hashKey(k))
				delete(churn, k)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if err := checkTable(tab); err != nil {
		t.Fatal(err)
	}
}
