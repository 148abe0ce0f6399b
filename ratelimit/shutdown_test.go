package ratelimit

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestShutDownKeepsReadyDropsDelayedAndAdds(t *testing.T) {
	q, fc := newFakeQueue(t, Config{})
	q.Add("a")
	q.Add("b")
	q.AddAfter("due", time.Second)
	q.AddAfter("future", time.Hour)
	fc.Step(time.Second) // "due" is due but nobody looked yet
	q.ShutDown()
	q.ShutDown() // idempotent
	if !q.ShuttingDown() {
		t.Fatal("ShuttingDown = false after ShutDown")
	}
	q.Add("c")
	q.AddAfter("d", 0)
	q.AddAfter("e", time.Second)
	q.AddRateLimited("f")
	if got := q.NumRequeues("f"); got != 0 {
		t.Fatalf("AddRateLimited after ShutDown counted a requeue: %d", got)
	}
	fc.Step(2 * time.Hour)
	if got, want := drainReady(t, q), []string{"a", "b", "due"}; !slices.Equal(got, want) {
		t.Fatalf("handed out after ShutDown: %v, want %v", got, want)
	}
	if k, ok := q.Get(context.Background()); ok {
		t.Fatalf("Get after the queue emptied returned %q", k)
	}
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

// A key re-added while in flight before ShutDown is still handed out after
// its Done, and Gets wait for it rather than return false.
func TestShutDownWaitsForPendingRequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newFakeQueue(t, Config{})
		q.Add("a")
		mustGet(t, q, "a")
		q.Add("a") // pending re-add
		q.ShutDown()
		g1 := getAsync(q, context.Background())
		g2 := getAsync(q, context.Background())
		synctest.Wait()
		expectBlocked(t, g1)
		expectBlocked(t, g2)
		q.Done("a")
		synctest.Wait()
		// One of them gets "a"; the other has nothing left to wait for.
		r1, r2 := <-g1, <-g2
		got := []getResult{r1, r2}
		if !slices.Contains(got, getResult{"a", true}) || !slices.Contains(got, getResult{"", false}) {
			t.Fatalf("results = %v, want one a and one false", got)
		}
		g3 := getAsync(q, context.Background())
		synctest.Wait()
		expectResult(t, g3, getResult{"", false}) // Done pending, but no re-add
		q.Done("a")
	})
}

func TestShutDownWakesBlockedGets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newFakeQueue(t, Config{})
		q.AddAfter("x", time.Hour) // one of the Gets holds a timer
		var gs []<-chan getResult
		for range 3 {
			gs = append(gs, getAsync(q, context.Background()))
		}
		synctest.Wait()
		q.ShutDown()
		synctest.Wait()
		for _, g := range gs {
			expectResult(t, g, getResult{"", false})
		}
	})
}

func TestShutDownWithDrainWaitsForDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newFakeQueue(t, Config{})
		q.Add("a")
		q.Add("b")
		mustGet(t, q, "a")
		errc := make(chan error, 1)
		go func() { errc <- q.ShutDownWithDrain(context.Background()) }()
		synctest.Wait()
		if len(errc) != 0 {
			t.Fatal("drain returned with a in flight and b ready")
		}
		q.Done("a")
		synctest.Wait()
		if len(errc) != 0 {
			t.Fatal("drain returned with b ready")
		}
		mustGet(t, q, "b")
		synctest.Wait()
		if len(errc) != 0 {
			t.Fatal("drain returned with b in flight")
		}
		q.Done("b")
		synctest.Wait()
		if err := <-errc; err != nil {
			t.Fatalf("drain: %v", err)
		}
		// Already drained: returns at once, even with a done context.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := q.ShutDownWithDrain(ctx); err != nil {
			t.Fatalf("second drain: %v", err)
		}
	})
}

func TestShutDownWithDrainContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := newFakeQueue(t, Config{Name: "pods"})
		q.Add("a")
		mustGet(t, q, "a")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := q.ShutDownWithDrain(ctx) // time in the bubble advances to the deadline
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("drain with a in flight: err = %v, want DeadlineExceeded", err)
		}
		if !q.ShuttingDown() {
			t.Fatal("queue not shut down after an aborted drain")
		}
		q.Done("a")
	})
}

// ourGoroutines counts the goroutines running code of this package, so that
// goroutines of other tests still exiting do not disturb the count.
func ourGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "shardinformer/ratelimit.") {
			count++
		}
	}
	return count
}

// The queue starts no goroutines and leaves none behind: after workers exit,
// the goroutine count is back to its baseline. synctest.Test itself also fails
// if any goroutine started in the bubble is left blocked.
func TestNoGoroutineLeak(t *testing.T) {
	for _, stop := range []string{"shutdown", "drain", "cancel"} {
		t.Run("stop="+stop, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				baseline := ourGoroutines()
				q, err := New[int](Config{Name: "leak"}) // real clock: fake time in the bubble
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var wg sync.WaitGroup
				var mu sync.Mutex
				processed := 0
				for range 4 {
					wg.Go(func() {
						for {
							k, ok := q.Get(ctx)
							if !ok {
								return
							}
							mu.Lock()
							processed++
							mu.Unlock()
							if k%3 == 0 && q.NumRequeues(k) < 2 {
								q.AddRateLimited(k)
							} else {
								q.Forget(k)
							}
							q.Done(k)
						}
					})
				}
				for i := range 30 {
					q.Add(i)
					q.AddAfter(100+i, time.Duration(i)*time.Millisecond)
				}
				q.AddAfter(-1, time.Hour) // still delayed at shutdown: a Get holds a timer
				time.Sleep(time.Second)   // bubble time: every retry and delay below 1h is done
				synctest.Wait()
				if ourGoroutines() <= baseline {
					t.Fatal("workers not running")
				}
				switch stop {
				case "shutdown":
					q.ShutDown()
				case "drain":
					if err := q.ShutDownWithDrain(context.Background()); err != nil {
						t.Fatal(err)
					}
				case "cancel":
					cancel()
				}
				wg.Wait()
				synctest.Wait() // let exiting goroutines finish
				if n := ourGoroutines(); n != baseline {
					t.Fatalf("%d goroutines after the workers exited, baseline %d", n, baseline)
				}
				// 60 keys; the 20 multiples of 3 are retried twice each.
				if want := 60 + 20*2; processed != want {
					t.Fatalf("processed %d keys, want %d", processed, want)
				}
			})
		})
	}
}
