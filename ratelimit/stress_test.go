package ratelimit

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentWorkers runs adders and workers on the real clock and checks,
// under -race, that no key is processed by two workers at once and that every
// Add is followed by a Get of that key that starts after the Add began.
func TestConcurrentWorkers(t *testing.T) {
	const (
		nkeys    = 32
		nworkers = 4
		nadders  = 2
	)
	addsPerAdder := 20000
	if testing.Short() {
		addsPerAdder = 2000
	}
	q, err := New(Config[int]{Limit: 1e6, Burst: 1000, BaseDelay: time.Microsecond, MaxDelay: 50 * time.Microsecond,
		Name: "stress", MetricsProvider: newRecProvider(), UnfinishedWorkUpdatePeriod: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var (
		busy    [nkeys]atomic.Bool
		clock   atomic.Int64 // logical time
		mu      sync.Mutex
		lastAdd [nkeys]int64 // guarded by mu: latest logical time an Add began
		lastGet [nkeys]int64 // guarded by mu: latest logical time a Get returned
	)
	var workers sync.WaitGroup
	for w := range nworkers {
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				now := clock.Add(1)
				mu.Lock()
				lastGet[k] = now
				mu.Unlock()
				if !busy[k].CompareAndSwap(false, true) {
					t.Errorf("key %d handed to two workers at once", k)
				}
				switch rng.IntN(8) {
				case 0:
					q.AddRateLimited(k) // also exercises the delay heap and timers
				case 1:
					q.AddAfter(k, time.Duration(rng.IntN(20))*time.Microsecond)
				default:
					q.Forget(k)
				}
				busy[k].Store(false)
				q.Done(k)
			}
		})
	}
	var adders sync.WaitGroup
	for a := range nadders {
		adders.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(a), 2))
			for range addsPerAdder {
				k := rng.IntN(nkeys)
				mu.Lock()
				lastAdd[k] = clock.Add(1)
				mu.Unlock()
				q.Add(k)
			}
		})
	}
	adders.Wait()
	// Wait until every add has been handed out: ShutDownWithDrain does not
	// wait for ready keys, and delayed keys are dropped at shutdown. The
	// deadline only turns a lost key into a failure instead of a hang.
	deadline := time.Now().Add(time.Minute)
	for !allHandedOut(&mu, &lastAdd, &lastGet) {
		if time.Now().After(deadline) {
			t.Fatal("keys added but never handed out")
		}
		time.Sleep(time.Millisecond)
	}
	q.ShutDownWithDrain()
	workers.Wait()
	if err := q.check(); err != nil {
		t.Fatal(err)
	}
}

// allHandedOut reports whether each key's last Add began before its last Get.
func allHandedOut(mu *sync.Mutex, lastAdd, lastGet *[32]int64) bool {
	mu.Lock()
	defer mu.Unlock()
	for k := range lastAdd {
		if lastAdd[k] > lastGet[k] {
			return false
		}
	}
	return true
}
