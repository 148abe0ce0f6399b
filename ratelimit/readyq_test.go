package ratelimit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// items returns the elements of r, oldest first. It must be called while
// no other goroutine uses r.
func (r *readyQueue[T]) items() []T {
	var out []T
	s := r.headSeg.Load()
	for t := r.head.Load(); t < r.tail.Load(); t++ {
		for s.id < t/segSize {
			s = s.next.Load()
		}
		out = append(out, s.cells[t%segSize].v)
	}
	return out
}

// check verifies r's invariants. It must be called while no other goroutine
// uses r.
func (r *readyQueue[T]) check() error {
	h, t := r.head.Load(), r.tail.Load()
	hs, ts := r.headSeg.Load(), r.tailSeg.Load()
	var errs []error
	if h > t {
		errs = append(errs, fmt.Errorf("head %d > tail %d", h, t))
	}
	if hs.id > h/segSize || h > 0 && hs.id < (h-1)/segSize {
		errs = append(errs, fmt.Errorf("head segment %d, want the last pop's or the next's (head %d)", hs.id, h))
	}
	if t > 0 && ts.id != (t-1)/segSize {
		errs = append(errs, fmt.Errorf("tail segment %d, last push's %d", ts.id, (t-1)/segSize))
	}
	s := hs
	for x := h; x < t; x++ {
		for s.id < x/segSize {
			if s = s.next.Load(); s == nil {
				return errors.Join(append(errs, fmt.Errorf("no segment for ticket %d", x))...)
			}
		}
		if !s.cells[x%segSize].full.Load() {
			errs = append(errs, fmt.Errorf("ticket %d pushed but its cell is not full", x))
		}
	}
	return errors.Join(errs...)
}

// TestReadyQueueAgainstModel runs random push/pop sequences against a
// slice and compares every result, the tickets and the contents.
func TestReadyQueueAgainstModel(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 5
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		var r readyQueue[int]
		r.init()
		var model []int
		var popped uint64 // the model's pop count: the next pop's ticket
		next := 0
		pushBias := 20 + rng.IntN(60) // percent; some runs grow, some stay short
		for op := range 2000 {
			if rng.IntN(100) < pushBias {
				if got, want := r.push(next), popped+uint64(len(model)); got != want {
					t.Fatalf("seed %d op %d: push ticket %d, want %d", seed, op, got, want)
				}
				model = append(model, next)
				next++
			} else {
				v, ticket, ok := r.tryPop()
				if ok != (len(model) > 0) {
					t.Fatalf("seed %d op %d: tryPop ok=%v with %d queued", seed, op, ok, len(model))
				}
				if ok {
					if v != model[0] || ticket != popped {
						t.Fatalf("seed %d op %d: tryPop = %d (ticket %d), want %d (ticket %d)", seed, op, v, ticket, model[0], popped)
					}
					model = model[1:]
					popped++
				}
			}
			if r.len() != len(model) || r.popped() != popped {
				t.Fatalf("seed %d op %d: len %d popped %d, want %d, %d", seed, op, r.len(), r.popped(), len(model), popped)
			}
			if got := r.items(); !slices.Equal(got, model) && len(got)+len(model) > 0 {
				t.Fatalf("seed %d op %d: items %v, want %v", seed, op, got, model)
			}
			if err := r.check(); err != nil {
				t.Fatalf("seed %d op %d: %v", seed, op, err)
			}
		}
	}
}

// TestReadyQueueConcurrent has producers push distinct values and consumers
// pop them concurrently (run it under -race): every value is popped exactly
// once, each producer's values are popped in the order pushed (checked
// through the tickets, which number pops in FIFO order), and what a push
// wrote is visible to the pop that returns it.
func TestReadyQueueConcurrent(t *testing.T) {
	const producers, consumers = 4, 4
	perProducer := 20000
	if testing.Short() {
		perProducer = 2000
	}
	type elem struct {
		producer, seq int
		payload       *int // written before the push, read after the pop
	}
	var r readyQueue[elem]
	r.init()
	total := producers * perProducer
	byTicket := make([]elem, total)
	seen := make([]bool, total) // by ticket; guarded by mu
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				v := p*perProducer + i
				r.push(elem{p, i, &v})
			}
		})
	}
	var left atomic.Int64 // values not yet popped
	left.Store(int64(total))
	for range consumers {
		wg.Go(func() {
			for {
				e, ticket, ok := r.tryPop()
				if !ok {
					if left.Load() == 0 {
						return
					}
					continue
				}
				if *e.payload != e.producer*perProducer+e.seq {
					t.Errorf("payload %d for producer %d seq %d", *e.payload, e.producer, e.seq)
				}
				mu.Lock()
				if seen[ticket] {
					t.Errorf("ticket %d popped twice", ticket)
				}
				seen[ticket] = true
				byTicket[ticket] = e
				mu.Unlock()
				left.Add(-1)
			}
		})
	}
	wg.Wait()
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	count := make(map[[2]int]int)
	for ticket, e := range byTicket {
		if count[[2]int{e.producer, e.seq}]++; e.seq <= last[e.producer] {
			t.Fatalf("ticket %d: producer %d seq %d after seq %d", ticket, e.producer, e.seq, last[e.producer])
		}
		last[e.producer] = e.seq
	}
	if len(count) != total {
		t.Fatalf("%d distinct values popped, want %d", len(count), total)
	}
	if r.len() != 0 {
		t.Fatalf("len %d after popping everything", r.len())
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
}
