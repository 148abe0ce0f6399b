package ratelimit

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// BenchmarkQueue measures items/s through a queue in steady state: P
// producers Add keys ("namespace/name" strings, as controllers use), W
// workers Get and Done them with no work in between, beside client-go's
// rate-limiting queue under the same load in the same run. Producers keep at
// most benchBacklog keys added but not yet Done, as a controller's queue
// holds at most its objects. Keys are distinct, so no add is deduplicated
// and both queues process every item (reusing a key could find it still in
// flight or ready behind a descheduled worker). One op is one item;
// allocs/op is per item.
func BenchmarkQueue(b *testing.B) {
	for _, p := range []int{1, 16} {
		for _, w := range []int{1, 8, 32} {
			for _, impl := range benchImpls {
				b.Run(fmt.Sprintf("producers=%d/workers=%d/impl=%s", p, w, impl.name), func(b *testing.B) {
					benchQueue(b, p, w, impl.new())
				})
			}
		}
	}
}

const benchBacklog = 1024

var benchImpls = []struct {
	name string
	new  func() workqueue.TypedRateLimitingInterface[string]
}{
	{"client-go", func() workqueue.TypedRateLimitingInterface[string] {
		return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	}},
	{"shardinformer", func() workqueue.TypedRateLimitingInterface[string] {
		q, err := New(Config[string]{})
		if err != nil {
			panic(err)
		}
		return q
	}},
}

func benchQueue(b *testing.B, producers, workers int, q workqueue.TypedRateLimitingInterface[string]) {
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = "default/pod-" + strconv.Itoa(i)
	}
	total := int64(b.N)
	var added, processed atomic.Int64
	done := make(chan struct{})
	b.ReportAllocs()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(k)
				if processed.Add(1) == total {
					close(done)
				}
			}
		})
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for range producers {
		wg.Go(func() {
			for {
				i := added.Add(1) - 1
				if i >= total {
					return
				}
				for i-processed.Load() >= benchBacklog {
					runtime.Gosched()
				}
				q.Add(keys[i])
			}
		})
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
	// CPU time of the whole process (producers, workers, queue) per item:
	// less disturbed than wall time by other processes on a shared machine.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/item")
	q.ShutDown()
	wg.Wait()
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
