package ratelimit

import (
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

// raceRounds is how often each race below is run; run them under -race and
// with -count to look harder.
func raceRounds() int {
	if testing.Short() {
		return 2000
	}
	return 20000
}

// newRaceQueue returns impl's queue for the race tests, on the real clock.
func newRaceQueue(t *testing.T, newQueue func(*testing.T, setup) queue) queue {
	return newQueue(t, setup{limiter: workqueue.DefaultTypedControllerRateLimiter[string]()})
}

// An Add racing with the Done of its key, which is in flight, is never lost:
// whether it lands before the Done (the key is dirty, Done queues it) or
// after (the key is idle, Add queues it), the key is handed out exactly once
// more.
func TestAddRacingDoneIsNeverLost(t *testing.T) {
	for _, impl := range impls {
		t.Run("impl="+impl.name, func(t *testing.T) {
			q := newRaceQueue(t, impl.new)
			defer q.ShutDown()
			for round := range raceRounds() {
				q.Add("k")
				mustGet(t, q, "k")
				start := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() { <-start; q.Add("k") })
				wg.Go(func() { <-start; q.Done("k") })
				close(start)
				wg.Wait()
				if n := q.Len(); n != 1 {
					t.Fatalf("round %d: Len = %d after an Add raced the Done, want 1", round, n)
				}
				mustGet(t, q, "k")
				q.Done("k")
				if n := q.Len(); n != 0 {
					t.Fatalf("round %d: Len = %d after the second Done, want 0 (handed out once more only)", round, n)
				}
			}
			if ours, ok := q.(*Queue[string]); ok {
				if err := ours.check(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// An Add racing with the Get that takes its key (ready) is never lost: the
// event handler writes a version before it adds; either the racing Get's
// worker sees that version, or the key is handed out exactly once more and
// that worker sees it. Also with the queue empty, so that the Get may block
// and be woken by the Add.
func TestAddRacingGetIsNeverLost(t *testing.T) {
	for _, impl := range impls {
		for _, ready := range []bool{true, false} {
			name := map[bool]string{true: "ready", false: "empty"}[ready]
			t.Run("impl="+impl.name+"/get="+name, func(t *testing.T) {
				q := newRaceQueue(t, impl.new)
				defer q.ShutDown()
				var version atomic.Int64
				for round := range int64(raceRounds()) {
					if ready {
						q.Add("k")
					}
					start := make(chan struct{})
					seen := make(chan int64, 1)
					var wg sync.WaitGroup
					wg.Go(func() { <-start; version.Store(round); q.Add("k") })
					wg.Go(func() {
						<-start
						if k, shutdown := q.Get(); shutdown || k != "k" {
							t.Errorf("Get = %q, shutdown=%v", k, shutdown)
						}
						seen <- version.Load()
						q.Done("k")
					})
					close(start)
					wg.Wait()
					again := q.Len()
					if v := <-seen; v != round && again != 1 {
						t.Fatalf("round %d: the worker saw version %d and Len = %d: the Add was lost", round, v, again)
					}
					if again > 1 {
						t.Fatalf("round %d: Len = %d", round, again)
					}
					if again == 1 {
						mustGet(t, q, "k")
						if v := version.Load(); v != round {
							t.Fatalf("round %d: the second Get's worker saw version %d", round, v)
						}
						q.Done("k")
					}
				}
				if ours, ok := q.(*Queue[string]); ok {
					if err := ours.check(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}
