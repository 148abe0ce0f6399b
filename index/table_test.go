package index

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTableModel runs random inserts and removals against a map and checks membership and the
// table's invariants after every operation, through growth, tombstone reuse and shrinking.
func TestTableModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := newTable(0)
	model := map[string]*cell{}
	cells := map[string]*cell{}
	for step := range 20000 {
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
