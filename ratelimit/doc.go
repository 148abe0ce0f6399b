// Package ratelimit provides Queue, a typed, deduplicating, rate-limited work
// queue for controllers: event handlers feed it keys and workers drain it. It
// keeps the guarantees controller authors rely on in client-go's workqueue
// (its plain, delaying and rate-limiting queues in one type, with one
// constructor and generics) and knows nothing of Kubernetes, Prometheus or the
// rest of shardinformer.
//
// # Usage
//
//	q, err := ratelimit.New[string](ratelimit.Config{Name: "pods"})
//
//	// Event handlers:
//	q.Add(key)
//
//	// Each of N workers:
//	for {
//		key, ok := q.Get(ctx)
//		if !ok {
//			return // shut down and drained, or ctx done
//		}
//		if err := reconcile(key); err != nil {
//			q.AddRateLimited(key) // retry with backoff
//		} else {
//			q.Forget(key) // reset the backoff
//		}
//		q.Done(key) // always
//	}
//
//	// On stop, after the handlers are removed:
//	err = q.ShutDownWithDrain(ctx)
//
// # Guarantees
//
//   - Deduplication: a ready key is queued once however often it is added.
//   - Exclusion: from Get to Done a key is in flight, and Get never hands it
//     to another worker meanwhile.
//   - No lost adds: a key added while in flight is handed out again after its
//     Done.
//   - FIFO: ready keys are handed out in the order they became ready. A key
//     re-added while in flight becomes ready at its Done; a delayed key at its
//     due time.
//   - Delays: AddAfter keeps one due time per key, the earliest, so a later
//     AddAfter never postpones an earlier one. A delayed key is ready exactly
//     at its due time on the configured clock. A delay is independent of the
//     key being ready or in flight meanwhile: it asks for one more pass.
//   - Rate limiting: AddRateLimited delays a key by the larger of its own
//     exponential backoff (BaseDelay·2ⁿ up to MaxDelay, n = NumRequeues) and
//     the delay of a token bucket shared by all keys (Limit, Burst). Forget
//     resets the backoff.
//   - Shutdown: after ShutDown, adds are ignored and pending delays dropped;
//     Get still hands out what is ready, and the re-adds of in-flight keys
//     that arrived before ShutDown, then returns false.
//     ShutDownWithDrain also waits until all of it is Done.
//
// # Goroutines and time
//
// A Queue starts no goroutine, so it has no Run method and nothing to leak.
// Delayed keys wait in a min-heap under the queue's lock; the first queue
// call at or after a key's due time moves it to the ready queue (so Len counts
// it exactly from its due time on). For a blocked worker to wake on time, one
// blocked Get, the keeper, waits on a timer of Config.Clock for the earliest
// due time. An AddAfter with an earlier due time wakes the keeper to re-arm,
// and a keeper that returns hands the role to another blocked Get. Hence at
// most one timer is armed per queue, and none while no key is delayed or no
// Get is blocked.
//
// # Locking
//
// One mutex, Queue.mu, guards all state; each method holds it for O(1) map
// and ring operations, or O(log n) for the delay heap. Lock order: Queue.mu,
// then the token bucket's (rate.Limiter) and the clock's internal locks.
// Observer hooks run with Queue.mu held. A blocked Get waits on its own
// channel, not on the mutex, so that it can also wait for its context and the
// keeper's timer.
//
// Memory is bounded by the number of distinct keys: the ready ring grows to
// the largest number of keys ready at once and does not shrink.
//
// # Differences from client-go's workqueue
//
//   - Get takes a context and returns ok rather than shutdown.
//   - After ShutDown, Get waits for the pending re-adds of in-flight keys
//     instead of returning while one is still to come, and
//     ShutDownWithDrain waits for ready keys too and takes a context.
//   - Done of a key that is not in flight panics in race and invariants
//     builds (go test -race, or -tags invariants) instead of being ignored.
//   - Metrics go to Config.Observer rather than a global provider, and there
//     is no goroutine polling for unfinished work.
package ratelimit
