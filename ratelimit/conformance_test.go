package ratelimit

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// The conformance suite: every test below runs, unchanged, against
// client-go's rate-limiting queue and against ours. Each runs in a
// testing/synctest bubble on the real clock, so time passes only when every
// goroutine of the bubble is blocked (advance), and both queues' background
// goroutines have run before the test looks.

// setup is what a test gives the queue it gets: a rate limiter (client-go's
// queue has no default) and, optionally, a metrics provider and name.
type setup struct {
	limiter  workqueue.TypedRateLimiter[string]
	provider workqueue.MetricsProvider
	name     string
}

var impls = []struct {
	name string
	new  func(t *testing.T, s setup) queue
}{
	{"client-go", func(t *testing.T, s setup) queue {
		return workqueue.NewTypedRateLimitingQueueWithConfig(s.limiter,
			workqueue.TypedRateLimitingQueueConfig[string]{Name: s.name, MetricsProvider: s.provider})
	}},
	{"shardinformer", func(t *testing.T, s setup) queue {
		q, err := New(Config[string]{Name: s.name, RateLimiter: s.limiter, MetricsProvider: s.provider})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}},
}

// conform runs test against each implementation, each with a fresh setup
// from mk (nil: a 1s–1h exponential per-key limiter, no metrics). It shuts
// the queue down afterwards and, for ours, checks its invariants.
func conform(t *testing.T, mk func() setup, test func(t *testing.T, q queue)) {
	for _, impl := range impls {
		t.Run("impl="+impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := setup{limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Hour)}
				if mk != nil {
					s = mk()
				}
				q := impl.new(t, s)
				test(t, q)
				if ours, ok := q.(*Queue[string]); ok {
					if err := ours.check(); err != nil {
						t.Error(err)
					}
				}
				q.ShutDown()
				synctest.Wait()
			})
		})
	}
}

func TestConformDedupAndFIFO(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		for _, k := range []string{"a", "b", "a", "c", "b"} {
			q.Add(k)
		}
		if got := q.Len(); got != 3 {
			t.Fatalf("Len = %d, want 3", got)
		}
		if got, want := drainReady(t, q), []string{"a", "b", "c"}; !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
	})
}

// A key in flight is not handed to another worker, even when added again.
func TestConformExclusiveWhileInFlight(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		mustGet(t, q, "a")
		q.Add("a")
		q.Add("a") // deduplicated with the pending re-add
		if n := q.Len(); n != 0 {
			t.Fatalf("Len = %d while a is in flight, want 0", n)
		}
		g := getAsync(q)
		expectBlocked(t, g)
		q.Done("a")
		expectResult(t, g, getResult{"a", false})
		q.Done("a")
		if n := q.Len(); n != 0 {
			t.Fatalf("Len = %d after the second Done, want 0", n)
		}
	})
}

// A key added while in flight goes to the back of the FIFO at its Done.
func TestConformReAddWhileInFlight(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		q.Add("b")
		mustGet(t, q, "a")
		q.Add("a")
		q.Add("c")
		q.Done("a")
		if got, want := drainReady(t, q), []string{"b", "c", "a"}; !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
	})
}

func TestConformDoneWithoutReAdd(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		mustGet(t, q, "a")
		q.Done("a")
		if n := q.Len(); n != 0 {
			t.Fatalf("Len = %d after Done, want 0", n)
		}
		q.Add("a") // idle again: ready at once
		if got := drainReady(t, q); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("ready = %v, want [a]", got)
		}
	})
}

func TestConformBlockedGetsEachTakeOneKey(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		gs := []<-chan getResult{getAsync(q), getAsync(q), getAsync(q)}
		for _, g := range gs {
			expectBlocked(t, g)
		}
		q.Add("x")
		q.Add("y")
		q.Add("z")
		synctest.Wait()
		var got []string
		for _, g := range gs {
			r := <-g
			if r.shutdown {
				t.Fatal("Get returned shutdown")
			}
			got = append(got, r.key)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"x", "y", "z"}) {
			t.Fatalf("keys = %v, want x, y, z once each", got)
		}
		for _, k := range got {
			q.Done(k)
		}
	})
}

func TestConformLenCountsReadyOnly(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("inflight")
		mustGet(t, q, "inflight")
		q.Add("inflight") // pending re-add: not ready either
		q.AddAfter("delayed", time.Second)
		q.Add("ready")
		if n := q.Len(); n != 1 {
			t.Fatalf("Len = %d, want 1", n)
		}
		q.Done("inflight")
	})
}

func TestConformAddAfterOrder(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.AddAfter("c", 3*time.Second)
		q.AddAfter("a", time.Second)
		q.AddAfter("b", 2*time.Second)
		q.Add("now")
		advance(time.Second - time.Millisecond)
		if n := q.Len(); n != 1 {
			t.Fatalf("Len 1ms before a is due = %d, want 1", n)
		}
		advance(time.Millisecond)
		if n := q.Len(); n != 2 {
			t.Fatalf("Len when a is due = %d, want 2", n)
		}
		advance(5 * time.Second)
		if got, want := drainReady(t, q), []string{"now", "a", "b", "c"}; !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
	})
}

// A blocked Get is woken when a delayed key falls due.
func TestConformBlockedGetWakesAtDueTime(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		g := getAsync(q)
		q.AddAfter("late", 10*time.Second)
		q.AddAfter("early", time.Second) // earlier than the one armed
		advance(time.Second - time.Millisecond)
		expectBlocked(t, g)
		advance(time.Millisecond)
		expectResult(t, g, getResult{"early", false})
		q.Done("early")
		g = getAsync(q)
		advance(9*time.Second - time.Millisecond)
		expectBlocked(t, g)
		advance(time.Millisecond)
		expectResult(t, g, getResult{"late", false})
		q.Done("late")
	})
}

// A key is delayed at most once: the earlier due time wins, whichever
// AddAfter came first.
func TestConformAddAfterEarliestWins(t *testing.T) {
	for name, delays := range map[string][]time.Duration{
		"later-second":   {time.Second, 10 * time.Second},
		"earlier-second": {10 * time.Second, time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			conform(t, nil, func(t *testing.T, q queue) {
				for _, d := range delays {
					q.AddAfter("a", d)
				}
				advance(time.Second)
				if got := drainReady(t, q); !slices.Equal(got, []string{"a"}) {
					t.Fatalf("ready at 1s = %v, want [a]", got)
				}
				advance(20 * time.Second)
				if n := q.Len(); n != 0 {
					t.Fatalf("Len after 21s = %d: the later AddAfter was kept", n)
				}
			})
		})
	}
}

func TestConformAddAfterNonPositiveIsAdd(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.AddAfter("a", 0)
		q.AddAfter("b", -time.Second)
		if got, want := drainReady(t, q), []string{"a", "b"}; !slices.Equal(got, want) {
			t.Fatalf("ready = %v, want %v", got, want)
		}
	})
}

// A delay that expires while its key is in flight re-adds it after Done; one
// that expires while it is ready is deduplicated.
func TestConformDelayExpiresInFlightOrReady(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		mustGet(t, q, "a")
		q.AddAfter("a", time.Second)
		q.Add("b")
		q.AddAfter("b", time.Second)
		advance(time.Second)
		if n := q.Len(); n != 1 {
			t.Fatalf("Len = %d, want 1 (b)", n)
		}
		q.Done("a")
		if got, want := drainReady(t, q), []string{"b", "a"}; !slices.Equal(got, want) {
			t.Fatalf("ready = %v, want %v", got, want)
		}
	})
}

// AddRateLimited delays by what the limiter says; NumRequeues and Forget
// are the limiter's.
func TestConformBackoffAndForget(t *testing.T) {
	conform(t, func() setup {
		return setup{limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 4*time.Second)}
	}, func(t *testing.T, q queue) {
		readyAfter := func(want time.Duration) {
			t.Helper()
			advance(want - time.Millisecond)
			if n := q.Len(); n != 0 {
				t.Fatalf("ready %v early", time.Millisecond)
			}
			advance(time.Millisecond)
			if got := drainReady(t, q); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("after %v: ready %v, want [a]", want, got)
			}
		}
		for i, want := range []time.Duration{1, 2, 4, 4} {
			q.AddRateLimited("a")
			if n := q.NumRequeues("a"); n != i+1 {
				t.Fatalf("NumRequeues = %d, want %d", n, i+1)
			}
			readyAfter(want * time.Second)
		}
		if n := q.NumRequeues("b"); n != 0 {
			t.Fatalf("NumRequeues of another key = %d", n)
		}
		q.Forget("a")
		if n := q.NumRequeues("a"); n != 0 {
			t.Fatalf("NumRequeues after Forget = %d", n)
		}
		q.AddRateLimited("a")
		readyAfter(time.Second)
	})
}

func TestConformShutDownWakesBlockedGets(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		gs := []<-chan getResult{getAsync(q), getAsync(q)}
		for _, g := range gs {
			expectBlocked(t, g)
		}
		q.ShutDown()
		for _, g := range gs {
			expectResult(t, g, getResult{"", true})
		}
		if !q.ShuttingDown() {
			t.Fatal("ShuttingDown = false")
		}
	})
}

// After ShutDown, ready keys are still handed out, new adds are ignored and
// delayed keys dropped; the limiter still counts AddRateLimited.
func TestConformShutDownKeepsReadyIgnoresAdds(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		q.Add("b")
		q.AddAfter("delayed", time.Second)
		q.ShutDown()
		q.ShutDown() // idempotent
		q.Add("c")
		q.AddAfter("d", 0)
		q.AddAfter("e", time.Second)
		q.AddRateLimited("f")
		if n := q.NumRequeues("f"); n != 1 {
			t.Fatalf("NumRequeues after a rate-limited add past ShutDown = %d, want 1 (the limiter is asked first)", n)
		}
		advance(time.Hour)
		if got, want := drainReady(t, q), []string{"a", "b"}; !slices.Equal(got, want) {
			t.Fatalf("handed out after ShutDown: %v, want %v", got, want)
		}
		if k, shutdown := q.Get(); !shutdown {
			t.Fatalf("Get on an empty shut-down queue = %q", k)
		}
	})
}

// After ShutDown, Get reports shutdown as soon as nothing is ready, even if a
// key in flight was added again; that key is ready after its Done.
func TestConformShutDownDoesNotWaitForReAdd(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		mustGet(t, q, "a")
		q.Add("a")
		q.ShutDown()
		if k, shutdown := q.Get(); !shutdown {
			t.Fatalf("Get = %q, want shutdown", k)
		}
		q.Done("a")
		if n := q.Len(); n != 1 {
			t.Fatalf("Len after Done = %d, want 1", n)
		}
		mustGet(t, q, "a")
		q.Done("a")
		if _, shutdown := q.Get(); !shutdown {
			t.Fatal("Get after the last key: want shutdown")
		}
	})
}

// ShutDownWithDrain waits for every key in flight, including those handed
// out after it started, but not for ready keys.
func TestConformShutDownWithDrain(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		q.Add("b")
		q.Add("c")
		mustGet(t, q, "a")
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		synctest.Wait()
		if !q.ShuttingDown() {
			t.Fatal("not shutting down during the drain")
		}
		mustGet(t, q, "b")
		q.Done("a")
		synctest.Wait()
		select {
		case <-drained:
			t.Fatal("drain returned with b in flight")
		default:
		}
		q.Done("b")
		synctest.Wait()
		select {
		case <-drained:
		default:
			t.Fatal("drain still waiting with nothing in flight")
		}
		if n := q.Len(); n != 1 {
			t.Fatalf("Len after the drain = %d, want 1 (c, never taken)", n)
		}
	})
}

func TestConformShutDownEndsDrain(t *testing.T) {
	conform(t, nil, func(t *testing.T, q queue) {
		q.Add("a")
		mustGet(t, q, "a")
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		synctest.Wait()
		q.ShutDown()
		synctest.Wait()
		select {
		case <-drained:
		default:
			t.Fatal("ShutDown did not end the drain")
		}
		q.Done("a")
	})
}

// Metrics: the same calls with the same values from both queues.
func TestConformMetrics(t *testing.T) {
	providers := map[string]*recProvider{}
	for _, impl := range impls {
		p := newRecProvider()
		providers[impl.name] = p
		t.Run("impl="+impl.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := impl.new(t, setup{
					limiter:  workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Hour),
					provider: p,
					name:     "pods",
				})
				q.Add("a")
				q.Add("a") // deduplicated: not counted
				q.Add("b")
				advance(2 * time.Second)
				mustGet(t, q, "a") // waited 2s
				q.Add("a")         // re-add while in flight: counted
				advance(3 * time.Second)
				q.Done("a") // worked 3s
				q.AddAfter("c", 500*time.Millisecond)
				q.AddRateLimited("d") // 1s: after c (client-go orders equal due times arbitrarily)
				q.AddAfter("e", 0)    // a retry too, in client-go's count
				advance(time.Second)
				for _, k := range []string{"b", "a", "e", "c", "d"} {
					mustGet(t, q, k)
					q.Done(k)
				}
				// Unfinished work: x in flight for 1.25s, then done.
				q.Add("x")
				mustGet(t, q, "x")
				advance(1250 * time.Millisecond)
				unf, long := p.snapshot("unfinished").sets, p.snapshot("longest").sets
				if len(unf) == 0 || len(long) == 0 {
					t.Fatal("unfinished-work gauges never set with a key in flight")
				}
				// Set at most one period (500ms) ago.
				if v := unf[len(unf)-1]; v < 0.75 || v > 1.25 {
					t.Errorf("unfinished work = %vs, want 0.75–1.25", v)
				}
				if v := long[len(long)-1]; v < 0.75 || v > 1.25 {
					t.Errorf("longest running = %vs, want 0.75–1.25", v)
				}
				q.Done("x")
				advance(time.Second)
				unf, long = p.snapshot("unfinished").sets, p.snapshot("longest").sets
				if unf[len(unf)-1] != 0 || long[len(long)-1] != 0 {
					t.Errorf("gauges after Done: unfinished %v, longest %v; want 0", unf[len(unf)-1], long[len(long)-1])
				}
				q.ShutDown()
				synctest.Wait()

				for kind, name := range p.names {
					if name != "pods" {
						t.Errorf("%s metric created with name %q", kind, name)
					}
				}
				if len(p.names) != 7 {
					t.Errorf("%d metrics created, want 7: %v", len(p.names), p.names)
				}
				want := map[string]recMetric{
					"adds":    {value: 7},
					"retries": {value: 3},
					"depth":   {values: []float64{1, 2, 1, 2, 3, 4, 5, 4, 3, 2, 1, 0, 1, 0}},
					"latency": {obs: []float64{2, 6, 4, 1, 0.5, 0, 0}},
					"work":    {obs: []float64{3, 0, 0, 0, 0, 0, 1.25}},
				}
				for kind, w := range want {
					got := p.snapshot(kind)
					if w.values == nil && w.obs == nil && got.value != w.value {
						t.Errorf("%s = %v, want %v", kind, got.value, w.value)
					}
					if w.values != nil && !slices.Equal(got.values, w.values) {
						t.Errorf("%s values = %v, want %v", kind, got.values, w.values)
					}
					if w.obs != nil && !slices.Equal(got.obs, w.obs) {
						t.Errorf("%s observations = %v, want %v", kind, got.obs, w.obs)
					}
				}
			})
		})
	}
}
