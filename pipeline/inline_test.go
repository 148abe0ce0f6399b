package pipeline

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardinformer/shardinformer/internal/testkit"
)

// inlineObserver counts the batches applied by the reflector goroutine itself
// (shard.wrote's inline pass, which yields when it woke a worker) and by a
// drain goroutine.
type inlineObserver struct {
	NopObserver
	inline, drained atomic.Int64
}

func (o *inlineObserver) BatchApplied(int, BatchStats) {
	buf := make([]byte, 64<<10)
	if strings.Contains(string(buf[:runtime.Stack(buf, false)]), "(*shard).wrote") {
		o.inline.Add(1)
	} else {
		o.drained.Add(1)
	}
}

// Watch events that reach an idle informer one at a time are applied by the
// reflector goroutine, which then yields to the woken workers: every handler
// still receives every event, in order.
func TestInlineDeliveryInOrder(t *testing.T) {
	c := newCluster(false)
	if _, err := c.Create(configMap("ns", "a", "0")); err != nil {
		t.Fatal(err)
	}
	obs := &inlineObserver{}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithShards(2), WithObserver(obs))
	recs := []*testkit.Recorder{newRecorder(), newRecorder()}
	for _, r := range recs {
		if _, err := inf.AddEventHandler(r); err != nil {
			t.Fatal(err)
		}
	}
	par := newRecorder()
	if _, err := inf.AddParallelEventHandler(par, 3); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, par)
	testkit.RunSynced(t, inf)
	const updates = 200
	want := []string{"add:0/initial"}
	for i := 1; i <= updates; i++ {
		if _, err := c.Update(configMap("ns", "a", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("update:%d->%d", i-1, i))
		// Wait for every handler, so that the next event finds the
		// informer idle: drain goroutines and workers parked.
		testkit.Eventually(t, fmt.Sprintf("update %d", i), func() bool {
			for _, r := range recs {
				if r.Count() != i+1 {
					return false
				}
			}
			return true
		})
	}
	for i, r := range recs {
		if got := r.Seq("ns/a"); !slices.Equal(got, want) {
			t.Errorf("handler %d received %v, want %v", i, got, want)
		}
	}
	if obs.inline.Load() == 0 {
		t.Errorf("no batch was applied inline by the reflector (%d by drain goroutines): the test did not exercise the path", obs.drained.Load())
	}
	t.Logf("batches: %d inline, %d by drain goroutines", obs.inline.Load(), obs.drained.Load())
}
