package ratelimit

import (
	"sync"
	"time"
)

// delayState holds the delayed keys and the state of the delay goroutine,
// which adds each key at its due time. The goroutine runs only while keys
// are delayed: the AddAfter that delays the first key starts it, and it
// exits once none is left or the queue shuts down.
type delayState[K comparable] struct {
	// Guards the fields below. Never held while taking another lock of the
	// queue: the delay goroutine adds due keys after releasing it.
	sync.Mutex
	heap delayHeap[K]
	// running: the delay goroutine exists and will look at the heap again.
	running bool
	// stopped: the queue shut down; nothing is delayed or started again.
	stopped bool
	// poke (capacity 1) tells the delay goroutine that the earliest due time
	// moved earlier, so that it re-arms its timer.
	poke chan struct{}
}

// schedule delays k until due, unless it is already delayed no later.
func (q *Queue[K]) schedule(k K, due time.Time) {
	d := &q.delay
	d.Lock()
	defer d.Unlock()
	if d.stopped || !d.heap.schedule(k, due) {
		return
	}
	switch {
	case !d.running:
		d.running = true
		q.wg.Add(1) // before stopBackground's Wait: stopped is false
		go q.delayLoop()
	case d.heap.min().key == k: // k is now due first
		select {
		case d.poke <- struct{}{}:
		default: // a poke is already pending
		}
	}
}

// delayLoop is the delay goroutine: it adds delayed keys when they fall due,
// in due order, and sleeps on a timer of the queue's clock until the next
// due time, a poke or the queue's stop.
func (q *Queue[K]) delayLoop() {
	defer q.wg.Done()
	d := &q.delay
	var batch []K // due keys, added after the delay lock is released
	for {
		d.Lock()
		if d.stopped || d.heap.len() == 0 {
			d.running = false
			d.Unlock()
			return
		}
		now := q.clock.Now()
		for d.heap.len() > 0 && !d.heap.min().due.After(now) {
			batch = append(batch, d.heap.popMin().key)
		}
		var wait time.Duration
		if d.heap.len() > 0 {
			wait = d.heap.min().due.Sub(now)
		}
		d.Unlock()

		// Only this goroutine promotes keys, so they reach the FIFO in due
		// order although the delay lock is released.
		for _, k := range batch {
			q.Add(k)
		}
		clear(batch)
		batch = batch[:0]
		if wait == 0 {
			continue // nothing left (the loop then exits), or more became due
		}

		// A new timer each time: a stopped timer is never reused, so no
		// stale expiry can be received whatever the clock implementation.
		timer := q.clock.NewTimer(wait)
		select {
		case <-timer.C():
		case <-d.poke:
		case <-q.stop:
		}
		timer.Stop()
	}
}
