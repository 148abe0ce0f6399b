package apisim

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// populateChunk is how many pods Populate generates and loads at a time.
const populateChunk = 500

// Populate generates pods 0..n-1 with gen on GOMAXPROCS goroutines, a chunk
// of 500 at a time and at most GOMAXPROCS+1 chunks ahead of the loading, and
// calls load with each chunk in order (pods lo..hi-1, in index order), on the
// calling goroutine, while the next chunks are generated. So a bulk fill
// (Server.Load, or Widgets().Load of converted pods) runs on one goroutine
// and in index order, the generation on every core, and at most a few
// chunks of decoded pods are alive at once.
//
// gen is called concurrently and must be deterministic in i if the result is
// to be. Populate returns the first error of load, or ctx's error if ctx ends
// first; it returns only after every goroutine it started has exited.
//
//	err := apisim.Populate(ctx, 100000, func(i int) *corev1.Pod {
//		return apisim.NewPod("ns", fmt.Sprintf("pod-%06d", i), int64(i), apisim.PodOptions{})
//	}, srv.Load)
func Populate(ctx context.Context, n int, gen func(i int) *corev1.Pod, load func(pods []*corev1.Pod) error) error {
	chunks := (n + populateChunk - 1) / populateChunk
	workers := runtime.GOMAXPROCS(0)
	ready := make([]chan []*corev1.Pod, chunks)
	for c := range ready {
		ready[c] = make(chan []*corev1.Pod, 1)
	}
	gctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	var next atomic.Int64
	ahead := make(chan struct{}, workers+1) // chunks taken by generators and not yet loaded
	for range workers {
		wg.Go(func() { // one of Populate's generators; Populate waits for it
			for {
				select {
				case ahead <- struct{}{}:
				case <-gctx.Done():
					return
				}
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				lo, hi := c*populateChunk, min((c+1)*populateChunk, n)
				pods := make([]*corev1.Pod, 0, hi-lo)
				for i := lo; i < hi; i++ {
					pods = append(pods, gen(i))
				}
				ready[c] <- pods // never blocks: one chunk per channel
			}
		})
	}
	for c := range chunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		var pods []*corev1.Pod
		select {
		case pods = <-ready[c]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-ahead
		if err := load(pods); err != nil {
			return err
		}
	}
	return nil
}
