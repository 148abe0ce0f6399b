package handover

import (
	"slices"
	"testing"

	"github.com/shardinformer/shardinformer/replicas"
)

// TestMove scripts one join: replica a dispatches all 8 slots; b joins
// and the target (Target, from a's claims) gives it 4 of them. The slots
// b now owns keep being dispatched by a while b syncs; a lets
// them go only once b publishes them synced; b activates each only after
// a's unclaim and its own claim are visible. The actions are exactly:
// b StartCache (each moving slot), a Deactivate+StopCache, b Activate.
func TestMove(t *testing.T) {
	w := &world{t: t, slots: 8, store: map[string]Published{}, nodes: map[string]*node{}}
	a := w.join()
	round := func(ns ...*node) {
		for _, n := range ns {
			w.sync(n)
			w.step(n, false)
		}
	}
	round(a) // a: every slot Syncing
	for s := range 8 {
		a.cache[s] = true
	}
	round(a) // Synced
	round(a) // Claimed
	round(a) // Active
	if !slices.Equal(a.active, []bool{true, true, true, true, true, true, true, true}) {
		t.Fatalf("a alone: %v", a.active)
	}
	b := w.join()
	round(b, a) // b publishes (nothing yet), a sees b: nothing moves until b synced
	round(b, a) // b starts caches for its slots
	target := Target([]string{"r0", "r1"}, 8, map[string]Published{"r0": a.r.Published()})
	moving := target.OwnedSlots("r1")
	if len(moving) != 4 {
		t.Fatalf("%d slots move to r1, want 4", len(moving))
	}
	for _, s := range moving {
		if b.r.Phase(s) != Syncing || !a.active[s] {
			t.Fatalf("slot %d: b %v, a dispatching %v", s, b.r.Phase(s), a.active[s])
		}
	}
	for range 3 { // b not synced: a keeps dispatching
		round(b, a)
	}
	for _, s := range moving {
		if !a.active[s] {
			t.Fatalf("slot %d left by a before b synced", s)
		}
		b.cache[s] = true
	}
	round(b, a) // b Synced (unpublished)
	round(b, a) // b publishes synced; a deactivates
	for _, s := range moving {
		if a.active[s] || b.active[s] {
			t.Fatalf("slot %d: a %v b %v after b synced", s, a.active[s], b.active[s])
		}
	}
	round(b, a) // b reads before a writes its unclaim: still claimed
	if b.r.Phase(moving[0]) != Synced {
		t.Fatalf("b claimed slot %d while a's claim was written", moving[0])
	}
	round(b, a) // b claims
	round(b, a) // b's claim written and read back: activates
	for s := range 8 {
		if a.active[s] == b.active[s] || b.active[s] != slices.Contains(moving, s) {
			t.Fatalf("slot %d: a %v (%v) b %v (%v), moving %v", s, a.active[s], a.r.Phase(s), b.active[s], b.r.Phase(s), moving)
		}
	}
}

// TestFenced: a fenced replica deactivates and stops everything at once,
// and publishes nothing synced or claimed.
func TestFenced(t *testing.T) {
	target, _ := replicas.Assign([]string{"a"}, 4)
	r := New("a", 4)
	v := View{Target: target, ClaimsVisible: true, CacheSynced: func(int) bool { return true }}
	for range 4 {
		r.Step(v)
	}
	v.Fenced = true
	acts := r.Step(v)
	if len(acts) != 8 || acts[0] != (Action{Deactivate, 0}) || acts[1] != (Action{StopCache, 0}) {
		t.Fatalf("fenced: %v", acts)
	}
	p := r.Published()
	if slices.Contains(p.Synced, true) || slices.Contains(p.Claimed, true) {
		t.Fatalf("fenced publishes %v", p)
	}
}
