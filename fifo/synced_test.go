package fifo_test

import (
	"testing"

	"github.com/shardinformer/shardinformer/fifo"
	"k8s.io/client-go/tools/cache"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func checkSynced(t *testing.T, q *fifo.Queue, want bool, when string) {
	t.Helper()
	if got := q.HasSynced(); got != want {
		t.Errorf("%s: HasSynced() = %v, want %v", when, got, want)
	}
	if got := isClosed(q.Synced()); got != want {
		t.Errorf("%s: Synced() closed = %v, want %v", when, got, want)
	}
}

func keyedMaps(keys ...string) []fifo.Keyed {
	out := make([]fifo.Keyed, len(keys))
	for i, k := range keys {
		out[i] = fifo.Keyed{Key: k, Object: configMap(k, i+1)}
	}
	return out
}

func TestSyncedAfterFirstReplaceIsDone(t *testing.T) {
	known := newMapKnown()
	q := newQueue(t, fifo.Config{Known: known})
	checkSynced(t, q, false, "new queue")
	mustNil(t, "Resync", q.Resync())
	checkSynced(t, q, false, "after Resync")
	q.Mark(fifo.Mark{Seq: 1})
	q.Done(nil)
	checkSynced(t, q, false, "after Mark and Done(nil)")

	mustNil(t, "Replace", q.Replace(keyedMaps("ns/a", "ns/b", "ns/c")))
	checkSynced(t, q, false, "after Replace")
	mustNil(t, "Add", q.Add("ns/d", configMap("ns/d", 4))) // not part of the initial list

	first := q.Pop(nil, 2)
	checkSynced(t, q, false, "with ns/a, ns/b popped")
	for _, it := range first {
		known.apply(it)
	}
	q.Done(first)
	checkSynced(t, q, false, "with ns/a, ns/b done")

	second := q.Pop(nil, 2)
	want := "ns/c[Replaced:ns/c@3] initial=true; ns/d[Added:ns/d@4] initial=false"
	if got := describeItems(second); got != want {
		t.Errorf("second Pop:\n got %s\nwant %s", got, want)
	}
	checkSynced(t, q, false, "with ns/c popped, not Done")
	q.Done(second)
	checkSynced(t, q, true, "with every initial key Done")
	for _, it := range first {
		if !it.Initial {
			t.Errorf("%s: Initial = false, want true", it.Key)
		}
	}

	// A later Replace is not the initial list.
	mustNil(t, "Replace", q.Replace(keyedMaps("ns/a")))
	for _, it := range popAll(q) {
		if it.Initial {
			t.Errorf("after the second Replace, %s: Initial = true, want false", it.Key)
		}
	}
	checkSynced(t, q, true, "after the second Replace")
}

func TestSyncedAfterEmptyFirstReplace(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	mustNil(t, "Replace", q.Replace(nil))
	checkSynced(t, q, true, "after Replace(nil)")
}

// A first Replace with a mark is applied once Done has reported the mark:
// a queue whose part of a list is empty is not synced before its consumer has
// called Done (the pipeline's store watermark is at the list's position only
// then), and one whose part is not, only after the Done that reports it.
func TestSyncedAfterMarkedFirstReplaceIsReported(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		mustNil(t, "ReplaceAt", q.ReplaceAt(nil, fifo.Mark{Seq: 1, RV: "10"}))
		checkSynced(t, q, false, "after ReplaceAt(nil, mark)")
		if !q.Pending() {
			t.Error("Pending = false with the list's mark to report")
		}
		if m, ok := q.Done(nil); !ok || m.Seq != 1 {
			t.Errorf("Done(nil) reported %+v, %v; want the list's mark", m, ok)
		}
		checkSynced(t, q, true, "after Done reported the mark")
	})
	t.Run("keys, then a watch event", func(t *testing.T) {
		known := newMapKnown()
		q := newQueue(t, fifo.Config{Known: known})
		mustNil(t, "ReplaceAt", q.ReplaceAt(keyedMaps("ns/a"), fifo.Mark{Seq: 1, RV: "10"}))
		mustNil(t, "WriteAt", q.WriteAt(cache.Added, "ns/b", configMap("ns/b", 11), fifo.Mark{Seq: 2, RV: "11"}))
		items := q.Pop(nil, 1)
		known.apply(items[0])
		m, _ := q.Done(items)
		checkSynced(t, q, true, "after the list's key is Done")
		if m.Seq != 1 || q.Oldest() != 2 {
			t.Errorf("Done reported %+v, Oldest %d; want the list's mark and 2", m, q.Oldest())
		}
	})
}

// A write before the first Replace makes the queue synced at once, as it
// does DeltaFIFO; the Replace that follows is then not an initial list.
func TestSyncedByWriteBeforeReplace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(q *fifo.Queue) error
	}{
		{"Add", func(q *fifo.Queue) error { return q.Add("ns/x", configMap("ns/x", 9)) }},
		{"Update", func(q *fifo.Queue) error { return q.Update("ns/x", configMap("ns/x", 9)) }},
		// The key is unknown, so the Delete is dropped; DeltaFIFO still
		// counts it as a write that populates the queue.
		{"Delete", func(q *fifo.Queue) error { return q.Delete("ns/x", configMap("ns/x", 9)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(t, fifo.Config{Known: newMapKnown()})
			mustNil(t, tc.name, tc.write(q))
			checkSynced(t, q, true, "after "+tc.name)
			mustNil(t, "Replace", q.Replace(keyedMaps("ns/a", "ns/b")))
			checkSynced(t, q, true, "after Replace")
			for _, it := range popAll(q) {
				if it.Initial {
					t.Errorf("%s: Initial = true, want false", it.Key)
				}
			}
		})
	}
}

// The first Replace's keys are the initial list even when keys queued behind
// them are popped in the same batch, and even when a key of the list gets
// more deltas before it is popped.
func TestInitialFlagsExactlyFirstReplaceKeys(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	mustNil(t, "Replace", q.Replace(keyedMaps("ns/a", "ns/b", "ns/c")))
	mustNil(t, "Update", q.Update("ns/b", configMap("ns/b", 7)))
	mustNil(t, "Add", q.Add("ns/z", configMap("ns/z", 8)))
	mustNil(t, "Delete", q.Delete("ns/c", configMap("ns/c", 9)))
	var got []fifo.Item
	for {
		items := q.Pop(nil, 2)
		if len(items) == 0 {
			break
		}
		got = append(got, items...)
		q.Done(items)
	}
	want := map[string]bool{"ns/a": true, "ns/b": true, "ns/c": true, "ns/z": false}
	if len(got) != len(want) {
		t.Fatalf("popped %s, want 4 keys", describeItems(got))
	}
	for _, it := range got {
		if it.Initial != want[it.Key] {
			t.Errorf("%s: Initial = %v, want %v", it.Key, it.Initial, want[it.Key])
		}
	}
	checkSynced(t, q, true, "after draining")
}
