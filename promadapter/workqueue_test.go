package promadapter_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shardinformer/shardinformer/promadapter"
	"github.com/shardinformer/shardinformer/ratelimit"
	"k8s.io/client-go/util/workqueue"
)

// Two of our queues and one of client-go's, through two providers on one
// registry: each queue's series carry its name, with client-go's metric
// names, help texts and label.
func TestWorkqueueMetricsProvider(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		p1, err := promadapter.NewWorkqueueMetricsProvider(reg)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := promadapter.NewWorkqueueMetricsProvider(reg) // reuses p1's vectors
		if err != nil {
			t.Fatalf("second provider on the same registry: %v", err)
		}
		pods, err := ratelimit.New(ratelimit.Config[string]{Name: "pods", MetricsProvider: p1})
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := ratelimit.New(ratelimit.Config[string]{Name: "nodes", MetricsProvider: p2})
		if err != nil {
			t.Fatal(err)
		}
		legacy := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "legacy", MetricsProvider: p1})

		for _, q := range []workqueue.TypedRateLimitingInterface[string]{pods, nodes, legacy} {
			q.Add("a")
			q.Add("b")
			q.AddRateLimited("c")
		}
		pods.Add("c")
		time.Sleep(2 * time.Second) // every c is due
		synctest.Wait()
		k, _ := pods.Get() // a: in flight for the unfinished-work gauges
		time.Sleep(1250 * time.Millisecond)
		synctest.Wait()

		want := `
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{name="legacy"} 3
workqueue_adds_total{name="nodes"} 3
workqueue_adds_total{name="pods"} 3
# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{name="legacy"} 3
workqueue_depth{name="nodes"} 3
workqueue_depth{name="pods"} 2
# HELP workqueue_retries_total Total number of retries handled by workqueue
# TYPE workqueue_retries_total counter
workqueue_retries_total{name="legacy"} 1
workqueue_retries_total{name="nodes"} 1
workqueue_retries_total{name="pods"} 1
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
			"workqueue_adds_total", "workqueue_depth", "workqueue_retries_total"); err != nil {
			t.Error(err)
		}
		if got := testutil.ToFloat64(p1.NewLongestRunningProcessorSecondsMetric("pods").(prometheus.Gauge)); got < 0.75 || got > 1.25 {
			t.Errorf("longest running for pods = %v, want 0.75–1.25 (set every 500ms)", got)
		}
		if got := testutil.ToFloat64(p1.NewUnfinishedWorkSecondsMetric("pods").(prometheus.Gauge)); got < 0.75 || got > 1.25 {
			t.Errorf("unfinished work for pods = %v, want 0.75–1.25", got)
		}
		pods.Done(k)

		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
			for _, m := range mf.GetMetric() {
				if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "name" {
					t.Errorf("%s has labels %v, want only name", mf.GetName(), l)
				}
			}
			if mf.GetName() == "workqueue_queue_duration_seconds" {
				for _, m := range mf.GetMetric() {
					h := m.GetHistogram()
					if top := h.GetBucket()[len(h.GetBucket())-1].GetUpperBound(); top != 1000 {
						t.Errorf("top bucket %v, want 1000s as kube-controller-manager", top)
					}
					if m.GetLabel()[0].GetValue() == "pods" && h.GetSampleCount() != 1 {
						t.Errorf("pods queue latency count %d, want 1", h.GetSampleCount())
					}
				}
			}
		}
		for _, n := range []string{"workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds",
			"workqueue_work_duration_seconds", "workqueue_unfinished_work_seconds",
			"workqueue_longest_running_processor_seconds", "workqueue_retries_total"} {
			if !names[n] {
				t.Errorf("metric %s not exported", n)
			}
		}
		for _, q := range []workqueue.TypedRateLimitingInterface[string]{pods, nodes, legacy} {
			q.ShutDown()
		}
		synctest.Wait()
	})
}

// A registry holding a different metric under one of the names is an error,
// not a silent second series.
func TestWorkqueueMetricsProviderConflict(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "workqueue_retries_total", Help: "something else"}))
	if _, err := promadapter.NewWorkqueueMetricsProvider(reg); err == nil || !strings.Contains(err.Error(), "workqueue_retries_total") {
		t.Fatalf("err = %v, want a registration error naming workqueue_retries_total", err)
	}
	if _, err := promadapter.NewWorkqueueMetricsProvider(nil); err == nil {
		t.Fatal("nil Registerer accepted")
	}
}
