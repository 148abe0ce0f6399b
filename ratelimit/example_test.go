package ratelimit_test

import (
	"errors"
	"fmt"
	"sync"

	"github.com/shardinformer/shardinformer/ratelimit"
	"k8s.io/client-go/util/workqueue"
)

// The classic controller loop: event handlers Add keys, workers Get a key,
// reconcile it, AddRateLimited on error or Forget on success, and always call
// Done. The queue is a workqueue.TypedRateLimitingInterface, so code written
// for client-go's queue takes it unchanged.
func Example() {
	// client-go: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	q, err := ratelimit.New(ratelimit.Config[string]{Name: "pods"})
	if err != nil {
		panic(err)
	}
	var queue workqueue.TypedRateLimitingInterface[string] = q

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
	worker := func() {
		for {
			key, shutdown := queue.Get()
			if shutdown {
				return
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
	workers.Go(worker)

	reconciled.Wait()
	queue.ShutDownWithDrain() // waits for keys in flight; Get then reports shutdown
	workers.Wait()
	// Output:
	// default/web: synced after 1 attempt(s)
	// default/flaky: conflict, retry 1
	// default/flaky: conflict, retry 2
	// default/flaky: synced after 3 attempt(s)
}

// Any client-go rate limiter plugs in, e.g. the one controller-runtime hands
// to its NewQueue option; NumRequeues and Forget are the limiter's.
func ExampleConfig_rateLimiter() {
	q, err := ratelimit.New(ratelimit.Config[string]{
		Name:        "nodes",
		RateLimiter: workqueue.NewTypedItemFastSlowRateLimiter[string](0, 0, 2),
	})
	if err != nil {
		panic(err)
	}
	defer q.ShutDown()
	q.AddRateLimited("node-1")
	q.AddRateLimited("node-1")
	fmt.Println(q.NumRequeues("node-1"), q.Len())
	// Output: 2 1
}
