package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"k8s.io/client-go/util/workqueue"
)

// BenchmarkAddGetDone measures throughput of one producer adding distinct
// keys while W workers Get and Done them, beside client-go's rate-limiting
// workqueue under the same load.
func BenchmarkAddGetDone(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("impl=shardinformer/workers=%d", workers), func(b *testing.B) {
			q, err := New[int](Config{})
			if err != nil {
				b.Fatal(err)
			}
			benchQueue(b, workers, q.Add, func() (int, bool) { return q.Get(context.Background()) }, q.Done, q.ShutDown)
		})
		b.Run(fmt.Sprintf("impl=client-go/workers=%d", workers), func(b *testing.B) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[int]())
			benchQueue(b, workers, q.Add, func() (int, bool) { k, shut := q.Get(); return k, !shut }, q.Done, q.ShutDown)
		})
	}
}

func benchQueue(b *testing.B, workers int, add func(int), get func() (int, bool), done func(int), shutDown func()) {
	b.ReportAllocs()
	var processed sync.WaitGroup
	processed.Add(b.N)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k, ok := get()
				if !ok {
					return
				}
				done(k)
				processed.Done()
			}
		})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		add(i)
	}
	processed.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
	shutDown()
	wg.Wait()
}
