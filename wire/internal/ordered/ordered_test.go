package ordered_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire/internal/ordered"
)

// TestOrder feeds random workloads through pools of every shape and checks
// that results come out in input order, each exactly once, and that the
// number in flight never exceeds the window.
func TestOrder(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	for _, workers := range []int{1, 2, 4, 8} {
		for _, window := range []int{1, 2, 3, 16} {
			stop := make(chan struct{})
			var mu sync.Mutex
			inFlight, maxInFlight := 0, 0
			p := ordered.New(workers, window, stop, func(i int) int {
				if i%7 == 0 {
					runtime.Gosched()
				}
				for range rand.IntN(200) {
					_ = rand.Int()
				}
				return i * 3
			})
			p.Start()
			const n = 2000
			go func() { // producer
				defer p.Close()
				for i := range n {
					mu.Lock()
					inFlight++
					maxInFlight = max(maxInFlight, inFlight)
					mu.Unlock()
					if i%5 == 4 {
						if !p.Put(i * 3) {
							return
						}
						continue
					}
					if !p.Submit(i) {
						return
					}
				}
			}()
			for i := 0; ; i++ {
				v, ok := p.Next()
				if !ok {
					if i != n {
						t.Fatalf("workers=%d window=%d: Next ended after %d results, want %d", workers, window, i, n)
					}
					break
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				if v != i*3 {
					t.Fatalf("workers=%d window=%d: result %d is %d, want %d", workers, window, i, v, i*3)
				}
			}
			p.Wait()
			if lim := max(window, workers); maxInFlight > lim+2 {
				// +2: the producer counts an input just before Submit admits
				// it, the consumer just after Next has freed its slot.
				t.Fatalf("workers=%d window=%d: %d in flight, window %d", workers, window, maxInFlight, lim)
			}
			close(stop)
		}
	}
}

// TestStop checks that stopping releases a producer blocked on a full window,
// a consumer blocked on a result still being computed, and the workers.
func TestStop(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	stop := make(chan struct{})
	release := make(chan struct{})
	p := ordered.New(2, 2, stop, func(i int) int {
		if i == 0 {
			<-release // the oldest input is slow
		}
		return i
	})
	p.Start()
	submitted := make(chan bool)
	go func() {
		defer p.Close()
		ok := true
		for i := 0; ok; i++ {
			ok = p.Submit(i) // blocks once two are in flight
		}
		submitted <- ok
	}()
	nextDone := make(chan bool)
	go func() {
		_, ok := p.Next() // blocks: input 0 is slow
		nextDone <- ok
	}()
	close(stop)
	if <-submitted {
		t.Fatal("Submit returned true after stop")
	}
	if <-nextDone {
		t.Fatal("Next returned a result after stop while the oldest was still being computed")
	}
	close(release)
	p.Wait()
}

// TestCloseEmpty: a pool closed without input ends at once.
func TestCloseEmpty(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	stop := make(chan struct{})
	defer close(stop)
	p := ordered.New(3, 4, stop, func(i int) int { return i })
	p.Start()
	p.Close()
	if _, ok := p.Next(); ok {
		t.Fatal("Next returned a result from an empty pool")
	}
	p.Wait()
}
