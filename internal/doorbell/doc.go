// Package doorbell parks one goroutine until another announces work, without
// spinning and without a lost wake-up. It is the one wake-up mechanism of the
// pipeline: a fifo.Queue's drain goroutine, both sides of a ring.Ring, and a
// listener worker waiting on all of its rings park on a Doorbell.
//
// # Memory-order contract
//
// A Doorbell is an "armed" flag (a sequentially consistent atomic) and a
// channel of capacity one. The waiter arms, then looks at its condition, and
// blocks only if the condition is still false; a notifier makes the condition
// true, then rings, and sends a token only if the waiter is armed:
//
//	waiter                          notifier
//	d.Arm()                         write W (makes the condition true)
//	read R of the condition         d.Ring()
//	if false: d.Sleep(ctx)
//
// If W and R are synchronizing operations (atomics, or both under one mutex),
// then either R observes W, or the Ring that follows W observes the armed flag
// and leaves a token that ends (or pre-empts) the Sleep: no wake-up is lost.
// The proof is the store-buffering pattern: the waiter stores the flag then
// loads the condition, the notifier stores the condition then loads the flag;
// Go's atomics and mutexes are sequentially consistent, so both loads cannot
// miss both stores. A Ring with nobody armed costs one atomic load.
//
// Tokens can be stale (a Ring racing with a waiter that found its condition
// true and disarmed leaves one in the channel), so Sleep may return without a
// new event: a waiter always re-checks its condition in a loop, which Wait
// does for it.
//
// # Concurrency rules
//
// At most one goroutine at a time is the waiter (Arm, Disarm, Sleep, Wait);
// any number of goroutines may Ring. A Doorbell must not be copied; create it
// with New.
//
// # Usage
//
//	bell := doorbell.New()
//	// waiter
//	for bell.Wait(ctx, func() bool { return queued.Load() > 0 }) {
//		drain()
//	}
//	// notifier, any goroutine
//	queued.Add(1)
//	bell.Ring()
package doorbell
