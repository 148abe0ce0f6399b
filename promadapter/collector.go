package promadapter

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/pipeline"
)

// StatsSource is what Collector reads at scrape time; *pipeline.Informer
// implements it.
type StatsSource interface {
	// Name is the informer label of the gauges.
	Name() string
	Stats() pipeline.Stats
}

var _ StatsSource = (*pipeline.Informer)(nil)

// Collector is a prometheus.Collector for an informer's gauges, read with
// one Stats call per scrape. Safe for concurrent use; must not be copied.
type Collector struct {
	src StatsSource

	queueDepth, objects, ringDepth, overflowDepth, workers *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a Collector for src (usually a *pipeline.Informer),
// its gauges labelled with src.Name() as the informer. Register it on the
// same Registerer as the Observer; informers on one registry need distinct
// names (pipeline.WithName), or the second registration fails.
func NewCollector(src StatsSource) *Collector {
	informer := prometheus.Labels{"informer": src.Name()}
	return &Collector{
		src: src,
		queueDepth: prometheus.NewDesc("shardinformer_shard_queue_depth",
			"Keys waiting in the shard's queue.", []string{"shard"}, informer),
		objects: prometheus.NewDesc("shardinformer_shard_objects",
			"Objects in the shard's index partition.", []string{"shard"}, informer),
		ringDepth: prometheus.NewDesc("shardinformer_listener_ring_depth",
			"Notifications waiting in the listener's rings, over all shards and workers.", []string{"listener"}, informer),
		overflowDepth: prometheus.NewDesc("shardinformer_listener_overflow_depth",
			"Notifications kept exactly plus keys merged, waiting in the listener's overflow.", []string{"listener"}, informer),
		workers: prometheus.NewDesc("shardinformer_listener_workers",
			"Worker goroutines calling the listener's handler.", []string{"listener"}, informer),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queueDepth, c.objects, c.ringDepth, c.overflowDepth, c.workers} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Stats()
	for i, s := range st.Shards {
		id := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(c.queueDepth, prometheus.GaugeValue, float64(s.Queued), id)
		ch <- prometheus.MustNewConstMetric(c.objects, prometheus.GaugeValue, float64(s.Objects), id)
	}
	for _, l := range st.Listeners {
		ch <- prometheus.MustNewConstMetric(c.ringDepth, prometheus.GaugeValue, float64(l.InRing), l.Name)
		ch <- prometheus.MustNewConstMetric(c.overflowDepth, prometheus.GaugeValue, float64(l.InOverflow), l.Name)
		ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(l.Workers), l.Name)
	}
}
