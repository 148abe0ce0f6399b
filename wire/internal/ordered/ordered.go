// Package ordered runs a function over a stream of inputs on several
// goroutines and hands the results on in input order, with a bounded number
// of inputs in flight.
//
// # Concurrency contract
//
// A Pool has three roles:
//   - one producer goroutine calls Submit, Put and Close;
//   - W worker goroutines, started by Start, call the function;
//   - one consumer goroutine calls Next.
//
// At most Window inputs are in flight: submitted or put, and not yet returned
// by Next. A producer that finds the window full waits in Submit or Put until
// the consumer takes the oldest result; this is the pool's only backpressure,
// so memory is bounded by Window inputs and results, not by the stream.
//
// Next returns results strictly in the order the producer submitted or put
// them, whatever order the workers finish in. The producer's Submit(x)
// happens before the worker's call fn(x), and the worker's return of fn(x)
// happens before the Next that returns its result.
//
// Stopping: closing the stop channel given to New makes every blocked
// Submit, Put and Next return false promptly and the workers exit after the
// call they are in, if any; inputs and results still in the pool are
// dropped. Wait returns once every worker has exited; a worker never blocks
// except while waiting for input, so Wait returns promptly after Close or
// stop.
package ordered

import "sync"

// Pool is an order-keeping worker pool. See the package documentation for
// its concurrency contract. A Pool must not be copied.
type Pool[In, Out any] struct {
	fn      func(In) Out
	workers int
	stop    <-chan struct{}

	// jobs carries inputs to the workers; capacity Window, so the producer,
	// holding a slot, never waits on it.
	jobs chan job[In, Out]
	// order carries each job's result slot in submission order to the
	// consumer; capacity Window.
	order chan chan Out
	// free holds the result slots not in flight; Window of them in all. A
	// slot has capacity 1, so a worker never waits to store a result.
	free chan chan Out

	wg      sync.WaitGroup
	started bool
}

type job[In, Out any] struct {
	in  In
	out chan Out
}

// New returns a pool of workers goroutines (at least 1) applying fn with at
// most window (at least workers) inputs in flight. Closing stop cancels the
// pool. New starts nothing.
func New[In, Out any](workers, window int, stop <-chan struct{}, fn func(In) Out) *Pool[In, Out] {
	workers = max(workers, 1)
	window = max(window, workers)
	p := &Pool[In, Out]{
		fn:      fn,
		workers: workers,
		stop:    stop,
		jobs:    make(chan job[In, Out], window),
		order:   make(chan chan Out, window),
		free:    make(chan chan Out, window),
	}
	for range window {
		p.free <- make(chan Out, 1)
	}
	return p
}

// Start starts the worker goroutines. Call it once, before Submit.
func (p *Pool[In, Out]) Start() {
	if p.started {
		panic("ordered: Start called twice")
	}
	p.started = true
	p.wg.Add(p.workers)
	for range p.workers {
		go p.work() // worker goroutine: exits when jobs is closed or stop is closed
	}
}

func (p *Pool[In, Out]) work() {
	defer p.wg.Done()
	for {
		select {
		case j, ok := <-p.jobs:
			if !ok {
				return
			}
			j.out <- p.fn(j.in) // never blocks: capacity 1, one job per slot
		case <-p.stop:
			return
		}
	}
}

// slot takes a free result slot, waiting while the window is full.
// Producer only.
func (p *Pool[In, Out]) slot() (chan Out, bool) {
	select {
	case c := <-p.free:
		return c, true
	default:
	}
	select {
	case c := <-p.free:
		return c, true
	case <-p.stop:
		return nil, false
	}
}

// Submit queues in for a worker; its result comes out of Next after the
// results of everything submitted or put before it. It waits while the
// window is full and returns false if the pool was stopped. Producer only.
func (p *Pool[In, Out]) Submit(in In) bool {
	c, ok := p.slot()
	if !ok {
		return false
	}
	p.jobs <- job[In, Out]{in: in, out: c} // never blocks: a slot is held
	p.order <- c                           // never blocks: likewise
	return true
}

// Put queues an already computed result in order, as Submit would for an
// input whose result is out. Producer only.
func (p *Pool[In, Out]) Put(out Out) bool {
	c, ok := p.slot()
	if !ok {
		return false
	}
	c <- out
	p.order <- c
	return true
}

// Close tells the workers and the consumer that nothing more will be
// submitted: once the consumer has taken every result, Next returns false.
// Producer only; call it exactly once, also after stop.
func (p *Pool[In, Out]) Close() {
	close(p.jobs)
	close(p.order)
}

// Next returns the oldest result not yet returned, waiting for it to be
// computed. It returns false once the producer has closed the pool and every
// result has been returned, or when the pool is stopped. Consumer only.
func (p *Pool[In, Out]) Next() (Out, bool) {
	var zero Out
	var c chan Out
	var ok bool
	select {
	case c, ok = <-p.order:
	case <-p.stop:
		return zero, false
	}
	if !ok {
		return zero, false
	}
	select {
	case out := <-c:
		p.free <- c // never blocks: free has room for every slot
		return out, true
	case <-p.stop:
		return zero, false
	}
}

// Wait returns once every worker goroutine has exited: after Close (once the
// workers have taken every input) or after stop.
func (p *Pool[In, Out]) Wait() { p.wg.Wait() }
