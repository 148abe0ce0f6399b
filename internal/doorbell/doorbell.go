package doorbell

import (
	"context"
	"sync/atomic"
)

// Doorbell parks one waiter until a notifier rings; see the package
// documentation for the memory-order contract. Build it with New; it must not
// be copied.
type Doorbell struct {
	armed atomic.Bool
	ch    chan struct{} // capacity 1: a token waiting is as good as several
}

// New returns a Doorbell that is not armed and holds no token.
func New() *Doorbell {
	return &Doorbell{ch: make(chan struct{}, 1)}
}

// Arm announces that the waiter is about to look at its condition and sleep
// if it is false. Waiter only.
func (d *Doorbell) Arm() { d.armed.Store(true) }

// Disarm withdraws Arm when the waiter found its condition true. Waiter only.
func (d *Doorbell) Disarm() { d.armed.Store(false) }

// Sleep blocks until a token arrives (true) or ctx is done (false, disarmed).
// The token may be stale: re-check the condition. Waiter only, after Arm.
func (d *Doorbell) Sleep(ctx context.Context) bool {
	select {
	case <-d.ch:
		return true
	case <-ctx.Done():
		d.armed.Store(false)
		return false
	}
}

// Wait returns true as soon as ready reports true, parking in between; it
// returns false if ctx is done first. ready is called on the waiter's
// goroutine, before and after arming; it must read the condition with
// synchronizing operations (see the package documentation). Waiter only.
func (d *Doorbell) Wait(ctx context.Context, ready func() bool) bool {
	for {
		if ready() {
			return true
		}
		d.Arm()
		if ready() {
			d.Disarm()
			return true
		}
		if !d.Sleep(ctx) {
			return false
		}
	}
}

// Armed reports whether the waiter is armed (for tests and diagnostics: the
// answer may be stale on return). Any goroutine.
func (d *Doorbell) Armed() bool { return d.armed.Load() }

// Ring wakes the waiter if it is armed, and reports whether it did (whether
// this call disarmed it). Call it after the write that makes the waiter's
// condition true. Any goroutine; it never blocks, and costs one atomic load
// when the waiter is not armed.
func (d *Doorbell) Ring() bool {
	// Clearing the flag first means one parking costs at most one send.
	if d.armed.Load() && d.armed.CompareAndSwap(true, false) {
		select {
		case d.ch <- struct{}{}:
		default: // a token is already waiting
		}
		return true
	}
	return false
}
