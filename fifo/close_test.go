package fifo_test

import (
	"errors"
	"testing"

	"github.com/shardinformer/shardinformer/fifo"
)

func TestNewRequiresKnown(t *testing.T) {
	if q, err := fifo.New(fifo.Config{}); err == nil || q != nil {
		t.Errorf("New(Config{}) = %v, %v; want nil and an error", q, err)
	}
}

func TestClosedQueueRejectsWrites(t *testing.T) {
	known := newMapKnown()
	known.set("ns/a", configMap("ns/a", 1))
	q := newQueue(t, fifo.Config{Known: known})
	q.Close()
	for name, err := range map[string]error{
		"Add":     q.Add("ns/b", configMap("ns/b", 2)),
		"Update":  q.Update("ns/a", configMap("ns/a", 3)),
		"Delete":  q.Delete("ns/a", configMap("ns/a", 4)),
		"Replace": q.Replace(keyedMaps("ns/c")),
		"Resync":  q.Resync(),
	} {
		if !errors.Is(err, fifo.ErrClosed) {
			t.Errorf("%s on a closed queue = %v, want ErrClosed", name, err)
		}
	}
	if n := q.Len(); n != 0 {
		t.Errorf("Len = %d after rejected writes, want 0", n)
	}
}

// Pending says whether the consumer has work; a consumer parks only when it
// is false (the pipeline's drain goroutine, on a doorbell its writers ring).
func TestPendingAfterWrite(t *testing.T) {
	writes := map[string]func(q *fifo.Queue) error{
		"Add":     func(q *fifo.Queue) error { return q.Add("ns/a", configMap("ns/a", 1)) },
		"Update":  func(q *fifo.Queue) error { return q.Update("ns/a", configMap("ns/a", 1)) },
		"Replace": func(q *fifo.Queue) error { return q.Replace(keyedMaps("ns/a")) },
		"Mark":    func(q *fifo.Queue) error { q.Mark(fifo.Mark{Seq: 1}); return nil },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			q := newQueue(t, fifo.Config{Known: newMapKnown()})
			if q.Pending() {
				t.Fatal("Pending on an empty queue")
			}
			mustNil(t, name, write(q))
			if !q.Pending() {
				t.Fatalf("not Pending after %s", name)
			}
			q.Done(q.Pop(nil, 10))
			if q.Pending() {
				t.Fatalf("Pending after the %s was popped and done", name)
			}
		})
	}
}

// With keys left over from a partial Pop the queue stays pending.
func TestPendingWhileKeysQueued(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
	mustNil(t, "Add", q.Add("ns/b", configMap("ns/b", 2)))
	q.Done(q.Pop(nil, 1))
	if !q.Pending() {
		t.Fatal("not Pending with ns/b still queued")
	}
}

// A mark queued behind keys in flight is due only once they are Done.
func TestPendingMarkBehindKeysInFlight(t *testing.T) {
	q := newQueue(t, fifo.Config{Known: newMapKnown()})
	mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
	q.Mark(fifo.Mark{Seq: 1, RV: "5"})
	items := q.Pop(nil, 10)
	if q.Pending() {
		t.Fatal("Pending with the mark's keys still in flight")
	}
	if m, ok := q.Done(items); !ok || m.RV != "5" {
		t.Fatalf("Done = %v, %v; want the mark", m, ok)
	}
}
