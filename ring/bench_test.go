package ring_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"

	"github.com/shardinformer/shardinformer/ring"
)

// benchCap is the capacity of every queue in BenchmarkTransfer.
const benchCap = 1024

// BenchmarkTransfer moves b.N items from one producer goroutine to one
// consumer goroutine through each implementation and reports items/s. The
// xsync queues have no parking, so their sides poll with runtime.Gosched, as
// xsync recommends.
func BenchmarkTransfer(b *testing.B) {
	for _, batch := range []int{64, 1} {
		b.Run("impl=ring/batch="+strconv.Itoa(batch), func(b *testing.B) { benchRing(b, batch) })
	}
	b.Run("impl=chan", benchChan)
	b.Run("impl=xsync-spsc", benchXsyncSPSC)
	b.Run("impl=xsync-mpmc", benchXsyncMPMC)
}

// runTransfer times produce (on a new goroutine) against consume (on the
// benchmark goroutine) and reports throughput.
func runTransfer(b *testing.B, produce func(), consume func() int) {
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	done := make(chan struct{})
	go func() { // producer
		defer close(done)
		produce()
	}()
	got := consume()
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	if got != b.N {
		b.Fatalf("consumer received %d items, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "items/s")
}

func benchRing(b *testing.B, batch int) {
	r, err := ring.New[int](benchCap)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	runTransfer(b, func() {
		for i := 0; i < b.N; {
			for j := 0; j < batch && i < b.N; {
				if !r.Push(i) {
					if !r.WaitSpace(ctx) { // flushes, then parks until the consumer pops
						return
					}
					continue
				}
				i++
				j++
			}
			r.Flush()
		}
		r.Close()
	}, func() int {
		dst := make([]int, 64)
		got := 0
		for r.Wait(ctx) {
			got += r.Pop(dst)
		}
		return got
	})
}

func benchChan(b *testing.B) {
	ch := make(chan int, benchCap)
	runTransfer(b, func() {
		for i := range b.N {
			ch <- i
		}
		close(ch)
	}, func() int {
		got := 0
		for range ch {
			got++
		}
		return got
	})
}

func benchXsyncSPSC(b *testing.B) { benchTryQueue(b, xsync.NewSPSCQueueOf[int](benchCap)) }

func benchXsyncMPMC(b *testing.B) { benchTryQueue(b, xsync.NewMPMCQueueOf[int](benchCap)) }

// tryQueue is what xsync's bounded queues have in common.
type tryQueue interface {
	TryEnqueue(int) bool
	TryDequeue() (int, bool)
}

// benchTryQueue transfers b.N items through q, yielding while it is full or empty.
func benchTryQueue(b *testing.B, q tryQueue) {
	runTransfer(b, func() {
		for i := range b.N {
			for !q.TryEnqueue(i) {
				runtime.Gosched()
			}
		}
	}, func() int {
		got := 0
		for got < b.N {
			if _, ok := q.TryDequeue(); ok {
				got++
			} else {
				runtime.Gosched()
			}
		}
		return got
	})
}
