package pipeline_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
)

// TestCompactStoreKeepsNothingDecoded: under WithCompactStore the objects a
// handler was given are not kept alive by the pipeline once it returned —
// rings, batches and backlogs hold the cache's Objects, the codec at most
// its Decoded objects. (Decoding notifications in place kept every object
// delivered from a backlog's batch alive until the whole batch was: with a
// million pods, gigabytes during the initial sync.) The handler holds its
// first call until the informer has synced, so that the rest waits in the
// backlog; at its last call it counts the objects it was given that are
// still alive.
func TestCompactStoreKeepsNothingDecoded(t *testing.T) {
	const n = 300
	c := newFake(false)
	for i := range n {
		mustCreate(t, c, cm("ns", fmt.Sprintf("o%03d", i), "1"))
	}
	inf := pipeline.NewSharedIndexInformer(c.ListerWatcher(), cmExample, 0, nsIndexers,
		pipeline.WithShards(2), pipeline.WithRingCapacity(2), pipeline.WithCompactStore(compact.Config{Decoded: 2}))
	synced := make(chan struct{})
	var given []weak.Pointer[corev1.ConfigMap]
	alive := -1
	var mu sync.Mutex
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if len(given) == 0 {
			<-synced
		}
		given = append(given, weak.Make(o.(*corev1.ConfigMap)))
		if len(given) == n {
			runtime.GC()
			runtime.GC()
			mu.Lock()
			defer mu.Unlock()
			alive = 0
			for _, w := range given[:n-1] {
				if w.Value() != nil {
					alive++
				}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer testkit.Run(t, inf)()
	testkit.WaitSynced(t, inf.HasSynced)
	close(synced)
	testkit.Eventually(t, "every object handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return alive >= 0
	})
	// The codec keeps 2.
	if alive > 2 {
		t.Errorf("%d of the %d objects handed to the handler before its last call are still alive", alive, n-1)
	}
}
