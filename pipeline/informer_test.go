package pipeline

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
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
			run(t, inf)
			eventually(t, "handler sync", reg.HasSynced)
			if got := rec.count(); got != 50 {
				t.Fatalf("after sync the handler saw %d events, want 50 adds", got)
			}
			if _, err := c.Update(configMap("ns", "cm-007", "2")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Delete("ns/cm-008"); err != nil {
				t.Fatal(err)
			}
			eventually(t, "update and delete", func() bool { return rec.count() == 52 })
			if got, want := rec.events("ns/cm-007"), []string{"add:1", "update:1->2"}; !slices.Equal(got, want) {
				t.Errorf("cm-007 events = %v, want %v", got, want)
			}
			if got, want := rec.events("ns/cm-008"), []string{"add:1", "delete:1"}; !slices.Equal(got, want) {
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
	run(t, inf)
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
