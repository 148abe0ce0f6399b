package promadapter_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shardinformer/shardinformer/promadapter"
	"github.com/shardinformer/shardinformer/ratelimit"
)

// A work queue's metrics under client-go's workqueue_* names, so existing
// dashboards and alerts work. Several queues share the provider; each is
// told apart by its name label.
func ExampleWorkqueueMetricsProvider() {
	reg := prometheus.NewRegistry()
	provider, err := promadapter.NewWorkqueueMetricsProvider(reg)
	if err != nil {
		panic(err)
	}
	queue, err := ratelimit.New(ratelimit.Config[string]{Name: "pods", MetricsProvider: provider})
	if err != nil {
		panic(err)
	}
	defer queue.ShutDown()
	queue.Add("default/web")
	queue.Add("default/db")
	queue.Add("default/web") // deduplicated: not an add

	n, err := testutil.GatherAndCount(reg, "workqueue_adds_total", "workqueue_depth")
	fmt.Println(n, err, testutil.ToFloat64(provider.NewDepthMetric("pods").(prometheus.Gauge)))
	// Output: 2 <nil> 2
}
