package fifo

import (
	"fmt"
	"testing"

	"k8s.io/client-go/tools/cache"
)

// The queue keeps one entry per key that is queued or in flight and reuses the
// entries of keys that left. A reused entry must bring nothing of its former
// key (no object kept reachable, no delta replayed), and a relist larger than
// shrinkAbove must not pin its map and entries once the queue empties.
func TestEntriesReusedAndShrunk(t *testing.T) {
	q, err := New(Config{Known: emptyKnown{}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * shrinkAbove
	list := make([]Keyed, n)
	for i := range list {
		list[i] = Keyed{Key: fmt.Sprintf("ns/k%d", i), Object: i}
	}
	if err := q.Replace(list); err != nil {
		t.Fatal(err)
	}
	// A hot key gathers many deltas, growing its array past what is kept.
	for v := range 20 {
		if err := q.Update("ns/hot", v); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(q.mu.entries); got != n+1 {
		t.Fatalf("entries = %d, want %d", got, n+1)
	}
	var items []Item
	for q.Len() > 0 {
		items = q.Pop(items[:0], 128)
		for _, e := range q.mu.order[q.mu.head:] {
			if e.flying {
				t.Fatalf("queued key %s is also in flight after Pop", e.key)
			}
		}
		if q.Len() == 0 { // the last batch is in flight: the map holds it alone
			if len(q.mu.entries) != len(items) || q.mu.peak != len(items) || cap(q.mu.order) != 0 {
				t.Fatalf("after popping all %d keys: entries %d, peak %d, order cap %d; want a fresh map of the %d in flight and no order array",
					n+1, len(q.mu.entries), q.mu.peak, cap(q.mu.order), len(items))
			}
		}
		q.Done(items)
	}
	if len(q.mu.entries) != 0 {
		t.Fatalf("entries = %d after the last Done, want 0", len(q.mu.entries))
	}
	if len(q.mu.free) != keepFree {
		t.Fatalf("%d entries kept for reuse, want keepFree (%d)", len(q.mu.free), keepFree)
	}
	for _, e := range q.mu.free {
		if e.key != "" || e.queued || e.flying || e.first != (cache.Delta{}) || e.after != (newest{}) || len(e.more) != 0 || cap(e.more) > 8 {
			t.Fatalf("entry kept for reuse still holds state: %+v", *e)
		}
		for _, d := range e.more[:cap(e.more)] {
			if d.Object != nil {
				t.Fatalf("entry kept for reuse keeps an object reachable: %v", d.Object)
			}
		}
	}

	// Reused entries behave as new ones: a key written twice pops with its
	// two deltas only, and a key in flight and queued again keeps both roles.
	q.Add("ns/a", "a1")
	q.Update("ns/a", "a2")
	items = q.Pop(items[:0], 10)
	if len(items) != 1 || len(items[0].Deltas) != 2 || items[0].Deltas[1].Object != "a2" {
		t.Fatalf("Pop = %+v, want ns/a with [a1 a2]", items)
	}
	q.Update("ns/a", "a3") // queued while in flight
	if e := q.mu.entries["ns/a"]; !e.queued || !e.flying {
		t.Fatalf("ns/a queued %v, flying %v; want both", e.queued, e.flying)
	}
	q.Done(items)
	if e := q.mu.entries["ns/a"]; e == nil || !e.queued || e.flying {
		t.Fatalf("after Done, ns/a must stay queued (entry %+v)", e)
	}
	items = q.Pop(items[:0], 10)
	if len(items) != 1 || len(items[0].Deltas) != 1 || items[0].Deltas[0].Object != "a3" {
		t.Fatalf("Pop = %+v, want ns/a with [a3]", items)
	}
	q.Done(items)
	if len(q.mu.entries) != 0 {
		t.Fatalf("entries = %d after the last Done, want 0", len(q.mu.entries))
	}
}
