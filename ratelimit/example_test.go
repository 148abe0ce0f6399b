package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/shardinformer/shardinformer/ratelimit"
)

// The classic controller loop: event handlers Add keys, workers Get a key,
// reconcile it, AddRateLimited on error or Forget on success, and always call
// Done.
func Example() {
	queue, err := ratelimit.New[string](ratelimit.Config{Name: "pods"})
	if err != nil {
		panic(err)
	}

	attempts := map[string]int{} // touched by the single worker only
	reconcile := func(key string) error {
		attempts[key]++
		if key == "default/flaky" && attempts[key] < 3 {
			return errors.New("conflict")
		}
		return nil
	}

	var reconciled sync.WaitGroup
	reconciled.Add(2) // the two keys below
	worker := func(ctx context.Context) {
		for {
			key, ok := queue.Get(ctx)
			if !ok {
				return // shut down and drained, or ctx done
			}
			if err := reconcile(key); err != nil {
				fmt.Printf("%s: %v, retry %d\n", key, err, queue.NumRequeues(key)+1)
				queue.AddRateLimited(key) // retried after 5ms, then 10ms, ...
			} else {
				fmt.Printf("%s: synced after %d attempt(s)\n", key, attempts[key])
				queue.Forget(key) // reset its backoff
				reconciled.Done()
			}
			queue.Done(key)
		}
	}

	// Event handlers: a key added twice before a worker gets it is
	// processed once.
	queue.Add("default/web")
	queue.Add("default/flaky")
	queue.Add("default/web")

	// Real controllers run several workers; one keeps this output ordered.
	var workers sync.WaitGroup
	workers.Go(func() { worker(context.Background()) })

	reconciled.Wait()
	if err := queue.ShutDownWithDrain(context.Background()); err != nil {
		panic(err)
	}
	workers.Wait()
	// Output:
	// default/web: synced after 1 attempt(s)
	// default/flaky: conflict, retry 1
	// default/flaky: conflict, retry 2
	// default/flaky: synced after 3 attempt(s)
}
