package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/internal/testkit"
)

var _ cache.SharedIndexInformer = (*Informer)(nil)

func TestAddUpdateDeleteBothListModes(t *testing.T) {
	for _, wl := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", wl), func(t *testing.T) {
			c := newCluster(wl)
			for _, n := range names(50) {
				if _, err := c.Create(configMap("ns", n, "1")); err != nil {
					t.Fatal(err)
				}
			}
			inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, WithShards(3))
			rec := newRecorder()
			reg, err := inf.AddEventHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			testkit.RunSynced(t, inf)
			testkit.Eventually(t, "handler sync", reg.HasSynced)
			if got := rec.Count(); got != 50 {
				t.Fatalf("after sync the handler saw %d events, want 50 adds", got)
			}
			if _, err := c.Update(configMap("ns", "cm-007", "2")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Delete("ns/cm-008"); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, "update and delete", func() bool { return rec.Count() == 52 })
			if got, want := rec.Seq("ns/cm-007"), []string{"add:1/initial", "update:1->2"}; !slices.Equal(got, want) {
				t.Errorf("cm-007 events = %v, want %v", got, want)
			}
			if got, want := rec.Seq("ns/cm-008"), []string{"add:1/initial", "delete:1"}; !slices.Equal(got, want) {
				t.Errorf("cm-008 events = %v, want %v", got, want)
			}
			objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "ns")
			if err != nil || len(objs) != 49 {
				t.Fatalf("ByIndex = %d objects, %v; want 49", len(objs), err)
			}
		})
	}
}

func TestStatsCountsObjectsAndListeners(t *testing.T) {
	c := newCluster(false)
	for _, n := range names(30) {
		if _, err := c.Create(configMap("ns", n, "1")); err != nil {
			t.Fatal(err)
		}
	}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithShards(4))
	if _, err := inf.AddParallelEventHandler(newRecorder(), 2); err != nil {
		t.Fatal(err)
	}
	testkit.RunSynced(t, inf)
	st := inf.Stats()
	objects := 0
	for _, s := range st.Shards {
		objects += s.Objects
	}
	if len(st.Shards) != 4 || objects != 30 {
		t.Errorf("shards=%d objects=%d, want 4 shards holding 30 objects", len(st.Shards), objects)
	}
	if len(st.Listeners) != 1 || st.Listeners[0].Workers != 2 {
		t.Errorf("listeners = %+v, want one with 2 workers", st.Listeners)
	}
}

// RunWithContext returns only after every handler call has returned, also
// one of a handler removed earlier that is still running: run in a synctest
// bubble, so "RunWithContext is still waiting" is observed deterministically
// (every goroutine of the bubble durably blocked) rather than by a timeout.
func TestRunWaitsForRemovedListenersHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(false)
		if _, err := c.Create(configMap("ns", "a", "1")); err != nil {
			t.Fatal(err)
		}
		inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, WithShards(2))
		entered, release := make(chan struct{}), make(chan struct{})
		var returned atomic.Bool
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, _ any) {
				close(entered)
				<-release
				returned.Store(true)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		runDone := make(chan struct{})
		go func() {
			defer close(runDone)
			inf.RunWithContext(ctx)
		}()
		synctest.Wait()
		if !reg.HasSynced() {
			t.Fatal("handler not synced once the bubble is idle")
		}
		if _, err := c.Update(configMap("ns", "a", "2")); err != nil {
			t.Fatal(err)
		}
		<-entered
		if err := inf.RemoveEventHandler(reg); err != nil {
			t.Fatal(err)
		}
		cancel()
		synctest.Wait() // everything that can finish has finished
		select {
		case <-runDone:
			t.Error("RunWithContext returned while a removed handler's call was still running")
		default:
		}
		close(release)
		<-runDone
		if !returned.Load() {
			t.Fatal("RunWithContext returned before the handler did")
		}
	})
}
