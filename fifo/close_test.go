package fifo_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

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

// waiter runs q.Wait on its own goroutine inside a synctest bubble; the test
// reads the result once synctest.Wait says the goroutine has finished or is
// durably blocked.
type waiter struct {
	result chan bool
	cancel context.CancelFunc
}

func startWait(q *fifo.Queue) *waiter {
	ctx, cancel := context.WithCancel(context.Background())
	w := &waiter{result: make(chan bool, 1), cancel: cancel}
	go func() { w.result <- q.Wait(ctx) }()
	synctest.Wait()
	return w
}

// returned reports whether Wait has returned, and what, without blocking.
// REQUIRES: called after synctest.Wait.
func (w *waiter) returned() (result, done bool) {
	select {
	case r := <-w.result:
		return r, true
	default:
		return false, false
	}
}

// expect checks Wait's outcome, then unblocks it if needed so the bubble can end.
func (w *waiter) expect(t *testing.T, wantDone, wantResult bool, when string) {
	t.Helper()
	synctest.Wait()
	got, done := w.returned()
	switch {
	case done != wantDone:
		t.Errorf("%s: Wait returned = %v, want %v (false: still parked)", when, done, wantDone)
	case done && got != wantResult:
		t.Errorf("%s: Wait = %v, want %v", when, got, wantResult)
	}
	if !done {
		w.cancel()
		synctest.Wait()
		<-w.result
	}
	w.cancel()
}

func TestWaitReturnsTrueAfterWrite(t *testing.T) {
	writes := map[string]func(q *fifo.Queue) error{
		"Add":     func(q *fifo.Queue) error { return q.Add("ns/a", configMap("ns/a", 1)) },
		"Update":  func(q *fifo.Queue) error { return q.Update("ns/a", configMap("ns/a", 1)) },
		"Replace": func(q *fifo.Queue) error { return q.Replace(keyedMaps("ns/a")) },
		"Mark":    func(q *fifo.Queue) error { q.Mark(fifo.Mark{Seq: 1}); return nil },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := newQueue(t, fifo.Config{Known: newMapKnown()})
				w := startWait(q)
				if _, done := w.returned(); done {
					t.Fatal("Wait returned on an empty queue")
				}
				mustNil(t, name, write(q))
				w.expect(t, true, true, "after "+name)
			})
		})
	}
}

func TestWaitReturnsTrueForEarlierWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
		startWait(q).expect(t, true, true, "Add before Wait")
	})
}

func TestWaitReturnsFalseWhenContextDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		w := startWait(q)
		w.cancel()
		w.expect(t, true, false, "after cancel")
	})
}

func TestWaitReturnsFalseAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		w := startWait(q)
		q.Close()
		w.expect(t, true, false, "Close during Wait")
	})
}

// Closing is permanent: every Wait on a closed queue returns false at once,
// not only the first one (which consumes the doorbell Close rang).
func TestWaitAfterCloseAlwaysFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
		q.Close()
		for i := range 3 {
			startWait(q).expect(t, true, false, "Wait on a closed queue, call "+string(rune('1'+i)))
		}
	})
}

// Wait parks the consumer "until something is queued": with keys left over
// from a partial Pop it must not park, although the doorbell rung for them
// was consumed by the previous Wait.
func TestWaitReturnsTrueWhileKeysQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
		mustNil(t, "Add", q.Add("ns/b", configMap("ns/b", 2)))
		startWait(q).expect(t, true, true, "first Wait")
		q.Done(q.Pop(nil, 1))
		startWait(q).expect(t, true, true, "Wait with ns/b still queued")
	})
}

func TestWakeEndsCurrentWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		w := startWait(q)
		q.Wake()
		w.expect(t, true, true, "Wake during Wait")
	})
}

// A Wake is never lost: with nothing queued, the next Wait returns at once.
func TestWakeEndsNextWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue(t, fifo.Config{Known: newMapKnown()})
		mustNil(t, "Add", q.Add("ns/a", configMap("ns/a", 1)))
		startWait(q).expect(t, true, true, "Wait after Add")
		q.Done(q.Pop(nil, 10))
		q.Wake()
		startWait(q).expect(t, true, true, "Wait after Wake")
		startWait(q).expect(t, false, false, "Wait with nothing queued and no Wake")
	})
}
