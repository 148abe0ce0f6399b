package fifo

import "testing"

// TestEntriesCount: Entries counts the keys queued or in flight (Len only
// the queued ones) and drops a key once it is Done.
func TestEntriesCount(t *testing.T) {
	q, err := New(Config{Known: emptyKnown{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ns/a", "ns/b", "ns/c"} {
		if err := q.Add(k, k); err != nil {
			t.Fatal(err)
		}
	}
	if q.Entries() != 3 || q.Len() != 3 {
		t.Fatalf("queued: entries %d, len %d", q.Entries(), q.Len())
	}
	items := q.Pop(nil, 2)
	if q.Entries() != 3 || q.Len() != 1 {
		t.Fatalf("two in flight: entries %d, len %d", q.Entries(), q.Len())
	}
	q.Done(items)
	if q.Entries() != 1 {
		t.Fatalf("after Done: entries %d, want 1", q.Entries())
	}
}
