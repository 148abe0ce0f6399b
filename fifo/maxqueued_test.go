package fifo

import (
	"errors"
	"testing"
	"testing/synctest"
)

func TestMaxQueuedMakesProducersWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := New(Config{Known: emptyKnown{}, MaxQueued: 2})
		if err != nil {
			t.Fatal(err)
		}
		q.Add("ns/a", "a1")
		q.Update("ns/a", "a2") // two deltas queued: full
		done := make(chan error)
		go func() { done <- q.Add("ns/b", "b1") }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Add returned while the queue was full")
		default:
		}
		// Replace never waits.
		if err := q.Replace([]Keyed{{Key: "ns/c", Object: "c1"}}); err != nil {
			t.Fatal(err)
		}
		items := q.Pop(nil, 1) // frees two deltas
		if err := <-done; err != nil {
			t.Fatalf("Add after Pop: %v", err)
		}
		q.Done(items)

		for q.Len() > 0 {
			q.Done(q.Pop(nil, 10))
		}
		q.Add("ns/d", "d1")
		q.Add("ns/e", "e1")
		go func() { done <- q.Add("ns/f", "f1") }()
		synctest.Wait()
		q.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting Add after Close = %v, want ErrClosed", err)
		}
	})
}

func TestMaxQueuedRejectsNegative(t *testing.T) {
	if _, err := New(Config{Known: emptyKnown{}, MaxQueued: -1}); err == nil {
		t.Fatal("New accepted a negative MaxQueued")
	}
}

type emptyKnown struct{}

func (emptyKnown) Get(string) (any, bool)       { return nil, false }
func (emptyKnown) Range(func(string, any) bool) {}
