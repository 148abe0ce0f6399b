package promadapter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/promadapter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

func TestObserverHooks(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	root, err := promadapter.NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	o := root.ForInformer("pods")
	o.BatchApplied(0, pipeline.BatchStats{Keys: 5, Adds: 3, Updates: 2, Duration: time.Millisecond})
	o.BatchApplied(1, pipeline.BatchStats{Keys: 1, Deletes: 1, Duration: time.Microsecond})
	o.BatchApplied(0, pipeline.BatchStats{Keys: 1, Updates: 4})
	o.Overflowed("h#1", 7, 3)
	o.Overflowed("h#1", 2, 0)
	o.Coalescing("h#1", true)
	o.Coalescing("h#1", false)
	o.Coalescing("h#1", true)
	o.HandlerDone("h#1", pipeline.KindAdd, time.Microsecond)
	o.HandlerDone("h#1", pipeline.KindUpdate, time.Millisecond)
	o.HandlerDone("h#2", pipeline.KindDelete, time.Second)
	o.HandlerPanicked("h#2", "ns/a", "boom")
	o.Relisted(100)
	o.Relisted(42)
	o.Dropped(errors.New("no key"))

	want := `
# HELP shardinformer_events_total Notifications produced by a shard's drain goroutine, by type (add, update, delete).
# TYPE shardinformer_events_total counter
shardinformer_events_total{informer="pods",shard="0",type="add"} 3
shardinformer_events_total{informer="pods",shard="0",type="delete"} 0
shardinformer_events_total{informer="pods",shard="0",type="update"} 6
shardinformer_events_total{informer="pods",shard="1",type="add"} 0
shardinformer_events_total{informer="pods",shard="1",type="delete"} 1
shardinformer_events_total{informer="pods",shard="1",type="update"} 0
# HELP shardinformer_overflow_total Notifications that did not fit the listener's ring and went to its overflow.
# TYPE shardinformer_overflow_total counter
shardinformer_overflow_total{informer="pods",listener="h#1"} 9
shardinformer_overflow_total{informer="pods",listener="h#2"} 0
# HELP shardinformer_coalesced_total Overflowing notifications merged into one already waiting for the same key.
# TYPE shardinformer_coalesced_total counter
shardinformer_coalesced_total{informer="pods",listener="h#1"} 3
shardinformer_coalesced_total{informer="pods",listener="h#2"} 0
# HELP shardinformer_listener_coalescing 1 while the listener's overflow is merged per key (under Buffer: its backlog reached the budget), else 0.
# TYPE shardinformer_listener_coalescing gauge
shardinformer_listener_coalescing{informer="pods",listener="h#1"} 1
shardinformer_listener_coalescing{informer="pods",listener="h#2"} 0
# HELP shardinformer_coalescing_episodes_total Times the listener started merging its overflow per key.
# TYPE shardinformer_coalescing_episodes_total counter
shardinformer_coalescing_episodes_total{informer="pods",listener="h#1"} 2
shardinformer_coalescing_episodes_total{informer="pods",listener="h#2"} 0
# HELP shardinformer_handler_panics_total Handler panics recovered by the listener workers.
# TYPE shardinformer_handler_panics_total counter
shardinformer_handler_panics_total{informer="pods",listener="h#1"} 0
shardinformer_handler_panics_total{informer="pods",listener="h#2"} 1
# HELP shardinformer_relists_total Full lists applied by the reflector, the first one included.
# TYPE shardinformer_relists_total counter
shardinformer_relists_total{informer="pods"} 2
# HELP shardinformer_relist_objects Objects in the most recent full list.
# TYPE shardinformer_relist_objects gauge
shardinformer_relist_objects{informer="pods"} 42
# HELP shardinformer_dropped_total Input rejected: objects without a key, failing transforms or index functions.
# TYPE shardinformer_dropped_total counter
shardinformer_dropped_total{informer="pods"} 1
`
	names := []string{"shardinformer_events_total", "shardinformer_overflow_total", "shardinformer_coalesced_total",
		"shardinformer_listener_coalescing", "shardinformer_coalescing_episodes_total",
		"shardinformer_handler_panics_total", "shardinformer_relists_total", "shardinformer_relist_objects", "shardinformer_dropped_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "shardinformer_handler_duration_seconds"); n != 2 {
		t.Errorf("handler duration series = %d, want 2 (one per listener)", n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "shardinformer_handler_duration_seconds":
			for _, m := range mf.GetMetric() {
				if l := m.GetLabel()[1].GetValue(); l == "h#1" && m.GetHistogram().GetSampleCount() != 2 {
					t.Errorf("h#1 handler calls = %d, want 2", m.GetHistogram().GetSampleCount())
				}
			}
		case "shardinformer_batch_keys":
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleCount() != 3 || h.GetSampleSum() != 7 {
				t.Errorf("batch keys count=%d sum=%v, want 3 and 7", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
}

// Observers of one registry share its metrics: a second NewObserver does
// not fail, and each informer's series carry its name.
func TestObserversShareARegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	a, err := promadapter.NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := promadapter.NewObserver(reg)
	if err != nil {
		t.Fatalf("second NewObserver on one registry: %v", err)
	}
	a.ForInformer("pods").Relisted(3)
	b.ForInformer("pods").Relisted(4)
	b.ForInformer("nodes").Relisted(5)
	want := `
# HELP shardinformer_relists_total Full lists applied by the reflector, the first one included.
# TYPE shardinformer_relists_total counter
shardinformer_relists_total{informer="nodes"} 1
shardinformer_relists_total{informer="pods"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "shardinformer_relists_total"); err != nil {
		t.Error(err)
	}

	// A metric of the same name defined otherwise is a conflict, reported.
	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "shardinformer_relists_total", Help: "another"}))
	if _, err := promadapter.NewObserver(other); err == nil {
		t.Error("NewObserver over a conflicting metric succeeded")
	}
	if _, err := promadapter.NewObserver(nil); err == nil {
		t.Error("NewObserver(nil) succeeded")
	}
}

// A handler call of minutes lands in a bucket, not only in +Inf.
func TestHandlerDurationBucketsReachMinutes(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	o, err := promadapter.NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	o.HandlerDone("h", pipeline.KindAdd, 3*time.Minute)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shardinformer_handler_duration_seconds" {
			continue
		}
		bs := mf.GetMetric()[0].GetHistogram().GetBucket()
		if last := bs[len(bs)-1]; last.GetCumulativeCount() != 1 || last.GetUpperBound() < 180 {
			t.Fatalf("largest finite bucket le=%v holds %d, want the 3-minute call", last.GetUpperBound(), last.GetCumulativeCount())
		}
		return
	}
	t.Fatal("no handler duration histogram")
}

type fakeStats pipeline.Stats

func (f fakeStats) Name() string          { return "pods" }
func (f fakeStats) Stats() pipeline.Stats { return pipeline.Stats(f) }

func TestCollectorGauges(t *testing.T) {
	src := fakeStats{
		Shards: []pipeline.ShardStats{{Queued: 3, Objects: 10}, {Queued: 0, Objects: 12}},
		Listeners: []pipeline.ListenerStats{
			{Name: "h#1", Workers: 4, InRing: 17, InOverflow: 2},
		},
	}
	c := promadapter.NewCollector(src)
	want := `
# HELP shardinformer_shard_queue_depth Keys waiting in the shard's queue.
# TYPE shardinformer_shard_queue_depth gauge
shardinformer_shard_queue_depth{informer="pods",shard="0"} 3
shardinformer_shard_queue_depth{informer="pods",shard="1"} 0
# HELP shardinformer_shard_objects Objects in the shard's index partition.
# TYPE shardinformer_shard_objects gauge
shardinformer_shard_objects{informer="pods",shard="0"} 10
shardinformer_shard_objects{informer="pods",shard="1"} 12
# HELP shardinformer_listener_ring_depth Notifications waiting in the listener's rings, over all shards and workers.
# TYPE shardinformer_listener_ring_depth gauge
shardinformer_listener_ring_depth{informer="pods",listener="h#1"} 17
# HELP shardinformer_listener_overflow_depth Notifications kept exactly plus keys merged, waiting in the listener's overflow.
# TYPE shardinformer_listener_overflow_depth gauge
shardinformer_listener_overflow_depth{informer="pods",listener="h#1"} 2
# HELP shardinformer_listener_workers Worker goroutines calling the listener's handler.
# TYPE shardinformer_listener_workers gauge
shardinformer_listener_workers{informer="pods",listener="h#1"} 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestWithInformer wires both halves to a running informer and checks that
// the numbers agree with what the handler saw.
func TestWithInformer(t *testing.T) {
	api := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.PodList{} }})
	for i := range 20 {
		api.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + string(rune('a'+i))}})
	}
	reg := prometheus.NewPedanticRegistry()
	obs, err := promadapter.NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	inf, err := pipeline.New(api.ListerWatcher(), &corev1.Pod{}, 0, nil, pipeline.WithShards(3), pipeline.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(promadapter.NewCollector(inf)); err != nil {
		t.Fatal(err)
	}
	handled := make(chan struct{}, 100)
	reg1, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { handled <- struct{}{} },
		DeleteFunc: func(any) { handled <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), reg1.HasSynced) {
		t.Fatal("no sync")
	}
	if _, err := api.Delete("ns/pa"); err != nil {
		t.Fatal(err)
	}
	for range 21 {
		select {
		case <-handled:
		case <-time.After(30 * time.Second):
			t.Fatal("handler not called 21 times")
		}
	}
	// The handler call has returned, but HandlerDone runs just after it:
	// wait for the histogram to catch up.
	deadline := time.Now().Add(30 * time.Second)
	for deliveries(t, reg) != 21 {
		if time.Now().After(deadline) {
			t.Fatalf("handler_duration_seconds count = %v, want 21", deliveries(t, reg))
		}
		time.Sleep(time.Millisecond)
	}
	// BatchApplied runs after the batch is published, so the handler may
	// have been called before the counters moved: wait for them too.
	testkit.EventuallyWhy(t, "event counters", func() (bool, string) {
		var adds, deletes, objects float64
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "shardinformer_events_total":
					for _, l := range m.GetLabel() {
						if l.GetName() == "type" && l.GetValue() == "add" {
							adds += m.GetCounter().GetValue()
						}
						if l.GetName() == "type" && l.GetValue() == "delete" {
							deletes += m.GetCounter().GetValue()
						}
					}
				case "shardinformer_shard_objects":
					objects += m.GetGauge().GetValue()
				}
			}
		}
		return adds == 20 && deletes == 1 && objects == 19,
			fmt.Sprintf("events add=%v delete=%v, objects=%v; want 20, 1, 19", adds, deletes, objects)
	})
	if got := gatherValue(t, reg, "shardinformer_relists_total"); got < 1 {
		t.Errorf("relists = %v, want at least 1", got)
	}
}

func deliveries(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == "shardinformer_handler_duration_seconds" {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// gatherValue returns the value of an unlabelled counter.
func gatherValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}

// One Observer for two informers on one registry (the second behind a
// fan-out), and a Collector each: every series carries its informer's name
// and its own numbers.
func TestTwoInformersOneRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	obs, err := promadapter.NewObserver(reg)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{"pods-a": 5, "pods-b": 8}
	for name, n := range sizes {
		api := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.PodList{} }})
		for i := range n {
			api.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i)}})
		}
		var o pipeline.Observer = obs
		if name == "pods-b" {
			o = pipeline.Observers(obs, pipeline.NopObserver{}, &countingObserver{})
		}
		inf := pipeline.NewSharedIndexInformer(api.ListerWatcher(), &corev1.Pod{}, 0, nil,
			pipeline.WithName(name), pipeline.WithShards(2), pipeline.WithObserver(o))
		if err := reg.Register(promadapter.NewCollector(inf)); err != nil {
			t.Fatal(err)
		}
		reg1, err := inf.AddEventHandler(pipeline.NamedHandler("reconciler", cache.ResourceEventHandlerFuncs{}))
		if err != nil {
			t.Fatal(err)
		}
		testkit.RunSynced(t, inf, reg1)
	}
	testkit.EventuallyWhy(t, "every informer's series", func() (bool, string) {
		objects, relists, deliveries := map[string]float64{}, map[string]float64{}, map[string]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			return false, err.Error()
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				informer := ""
				for _, l := range m.GetLabel() {
					if l.GetName() == "informer" {
						informer = l.GetValue()
					}
				}
				switch mf.GetName() {
				case "shardinformer_shard_objects":
					objects[informer] += m.GetGauge().GetValue()
				case "shardinformer_relists_total":
					relists[informer] += m.GetCounter().GetValue()
				case "shardinformer_handler_duration_seconds":
					deliveries[informer] += float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
		for name, n := range sizes {
			if objects[name] != float64(n) || relists[name] != 1 || deliveries[name] != float64(n) {
				return false, fmt.Sprintf("objects %v, relists %v, deliveries %v", objects, relists, deliveries)
			}
		}
		return len(objects) == 2 && len(relists) == 2, fmt.Sprintf("informers %v", objects)
	})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP shardinformer_listener_workers Worker goroutines calling the listener's handler.
# TYPE shardinformer_listener_workers gauge
shardinformer_listener_workers{informer="pods-a",listener="reconciler"} 1
shardinformer_listener_workers{informer="pods-b",listener="reconciler"} 1
`), "shardinformer_listener_workers"); err != nil {
		t.Error(err)
	}
}

// countingObserver counts relists, beside promadapter's in a fan-out.
type countingObserver struct {
	pipeline.NopObserver
	relists atomic.Int64
}

func (c *countingObserver) Relisted(int) { c.relists.Add(1) }
