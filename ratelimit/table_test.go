package ratelimit

import (
	"math/rand/v2"
	"testing"
)

// TestTableAgainstMap runs random upserts, lookups and removals on a table
// and on a Go map side by side and compares them after every operation.
// Hashes are drawn from a few values, so most keys collide and probe
// sequences wrap around the array and cross each other: what removeAt's
// backward shift must keep findable.
func TestTableAgainstMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		nhashes := 1 + rng.IntN(40)
		hashOf := func(k int) uint64 { return 1 + uint64(k%nhashes)*0x9e3779b97f4a7c15>>1 }
		var tb table[int]
		want := map[int]uint64{} // key -> ticket
		for op := range 3000 {
			k := rng.IntN(100)
			h := hashOf(k)
			switch rng.IntN(3) {
			case 0:
				i, ok := tb.upsert(h, k)
				if _, wantOK := want[k]; ok != wantOK {
					t.Fatalf("seed %d op %d: upsert(%d) found %v, want %v", seed, op, k, ok, wantOK)
				}
				if ok && tb.slots[i].e.ticket != want[k] {
					t.Fatalf("seed %d op %d: upsert(%d) ticket %d, want %d", seed, op, k, tb.slots[i].e.ticket, want[k])
				}
				tb.slots[i].e.ticket = uint64(op)
				want[k] = uint64(op)
			case 1:
				i := tb.lookup(h, k)
				if _, ok := want[k]; ok != (i >= 0) {
					t.Fatalf("seed %d op %d: lookup(%d) = %d, present %v", seed, op, k, i, ok)
				}
				if i >= 0 {
					tb.removeAt(i)
					delete(want, k)
				}
			default:
				i := tb.lookup(h, k)
				if w, ok := want[k]; ok != (i >= 0) || ok && tb.slots[i].e.ticket != w {
					t.Fatalf("seed %d op %d: lookup(%d) = %d, want present %v ticket %d", seed, op, k, i, ok, w)
				}
			}
			got := map[int]uint64{}
			for k, e := range tb.all() {
				got[k] = e.ticket
			}
			if len(got) != len(want) || tb.n != len(want) {
				t.Fatalf("seed %d op %d: %d keys (n %d), want %d", seed, op, len(got), tb.n, len(want))
			}
			for k, w := range want {
				if got[k] != w || tb.lookup(hashOf(k), k) < 0 {
					t.Fatalf("seed %d op %d: key %d: ticket %d findable %v, want %d", seed, op, k, got[k], tb.lookup(hashOf(k), k) >= 0, w)
				}
			}
		}
	}
}
