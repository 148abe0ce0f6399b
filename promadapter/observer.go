package promadapter

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/pipeline"
)

// Observer implements pipeline.Observer with Prometheus counters and
// histograms. Build it with NewObserver; it must not be copied. Its methods
// are safe for concurrent use and never block.
type Observer struct {
	events          *prometheus.CounterVec
	batches         *prometheus.CounterVec
	batchKeys       prometheus.Histogram
	batchDuration   prometheus.Histogram
	handlerDuration *prometheus.HistogramVec
	panics          *prometheus.CounterVec
	overflow        *prometheus.CounterVec
	coalesced       *prometheus.CounterVec
	coalescing      *prometheus.GaugeVec
	episodes        *prometheus.CounterVec
	relists         prometheus.Counter
	relistObjects   prometheus.Gauge
	dropped         prometheus.Counter

	// Children looked up once per label value; the hooks then only load
	// from these maps (lock-free on hit).
	shardChildren    sync.Map // int -> *shardChildren
	listenerChildren sync.Map // string -> *listenerChildren
}

type shardChildren struct {
	adds, updates, deletes, batches prometheus.Counter
}

type listenerChildren struct {
	duration            prometheus.Observer
	panics              prometheus.Counter
	overflow, coalesced prometheus.Counter
	coalescing          prometheus.Gauge
	episodes            prometheus.Counter
}

var _ pipeline.Observer = (*Observer)(nil)

// NewObserver creates the hook metrics and registers them on reg.
func NewObserver(reg prometheus.Registerer) (*Observer, error) {
	if reg == nil {
		return nil, fmt.Errorf("promadapter: NewObserver: nil Registerer")
	}
	o := &Observer{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_events_total",
			Help: "Notifications produced by a shard's drain goroutine, by type (add, update, delete).",
		}, []string{"shard", "type"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_batches_total",
			Help: "Batches applied by a shard's drain goroutine.",
		}, []string{"shard"}),
		batchKeys: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shardinformer_batch_keys",
			Help:    "Keys taken from a shard's queue per batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10), // 1 … 512
		}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "shardinformer_batch_duration_seconds",
			Help:    "Time a drain goroutine took to apply and publish one batch.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 11), // 1µs … ~1s
		}),
		handlerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardinformer_handler_duration_seconds",
			Help:    "Duration of one event handler call; the count is the number of deliveries.",
			Buckets: prometheus.ExponentialBuckets(1e-7, 4, 12), // 100ns … ~0.4s
		}, []string{"listener"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_handler_panics_total",
			Help: "Handler panics recovered by the listener workers.",
		}, []string{"listener"}),
		overflow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_overflow_total",
			Help: "Notifications that did not fit the listener's ring and went to its overflow.",
		}, []string{"listener"}),
		coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_coalesced_total",
			Help: "Overflowing notifications merged into one already waiting for the same key.",
		}, []string{"listener"}),
		coalescing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardinformer_listener_coalescing",
			Help: "1 while the listener's overflow is merged per key (under Buffer: its backlog reached the budget), else 0.",
		}, []string{"listener"}),
		episodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_coalescing_episodes_total",
			Help: "Times the listener started merging its overflow per key.",
		}, []string{"listener"}),
		relists: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardinformer_relists_total",
			Help: "Full lists applied by the reflector, the first one included.",
		}),
		relistObjects: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardinformer_relist_objects",
			Help: "Objects in the most recent full list.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardinformer_dropped_total",
			Help: "Input rejected: objects without a key, failing transforms or index functions.",
		}),
	}
	for _, c := range []prometheus.Collector{
		o.events, o.batches, o.batchKeys, o.batchDuration, o.handlerDuration,
		o.panics, o.overflow, o.coalesced, o.coalescing, o.episodes, o.relists, o.relistObjects, o.dropped,
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("promadapter: register: %w", err)
		}
	}
	return o, nil
}

func (o *Observer) shard(id int) *shardChildren {
	if c, ok := o.shardChildren.Load(id); ok {
		return c.(*shardChildren)
	}
	s := strconv.Itoa(id)
	c := &shardChildren{
		adds:    o.events.WithLabelValues(s, "add"),
		updates: o.events.WithLabelValues(s, "update"),
		deletes: o.events.WithLabelValues(s, "delete"),
		batches: o.batches.WithLabelValues(s),
	}
	actual, _ := o.shardChildren.LoadOrStore(id, c)
	return actual.(*shardChildren)
}

func (o *Observer) listener(name string) *listenerChildren {
	if c, ok := o.listenerChildren.Load(name); ok {
		return c.(*listenerChildren)
	}
	c := &listenerChildren{
		duration:   o.handlerDuration.WithLabelValues(name),
		panics:     o.panics.WithLabelValues(name),
		overflow:   o.overflow.WithLabelValues(name),
		coalesced:  o.coalesced.WithLabelValues(name),
		coalescing: o.coalescing.WithLabelValues(name),
		episodes:   o.episodes.WithLabelValues(name),
	}
	actual, _ := o.listenerChildren.LoadOrStore(name, c)
	return actual.(*listenerChildren)
}

// BatchApplied implements pipeline.Observer.
func (o *Observer) BatchApplied(shard int, b pipeline.BatchStats) {
	c := o.shard(shard)
	c.batches.Inc()
	if b.Adds > 0 {
		c.adds.Add(float64(b.Adds))
	}
	if b.Updates > 0 {
		c.updates.Add(float64(b.Updates))
	}
	if b.Deletes > 0 {
		c.deletes.Add(float64(b.Deletes))
	}
	o.batchKeys.Observe(float64(b.Keys))
	o.batchDuration.Observe(b.Duration.Seconds())
}

// Overflowed implements pipeline.Observer.
func (o *Observer) Overflowed(listener string, n, merged int) {
	c := o.listener(listener)
	c.overflow.Add(float64(n))
	if merged > 0 {
		c.coalesced.Add(float64(merged))
	}
}

// Coalescing implements pipeline.Observer.
func (o *Observer) Coalescing(listener string, active bool) {
	c := o.listener(listener)
	if active {
		c.coalescing.Set(1)
		c.episodes.Inc()
	} else {
		c.coalescing.Set(0)
	}
}

// HandlerDone implements pipeline.Observer.
func (o *Observer) HandlerDone(listener string, _ pipeline.EventKind, d time.Duration) {
	o.listener(listener).duration.Observe(d.Seconds())
}

// HandlerPanicked implements pipeline.Observer.
func (o *Observer) HandlerPanicked(listener, _ string, _ any) {
	o.listener(listener).panics.Inc()
}

// Relisted implements pipeline.Observer.
func (o *Observer) Relisted(objects int) {
	o.relists.Inc()
	o.relistObjects.Set(float64(objects))
}

// Dropped implements pipeline.Observer.
func (o *Observer) Dropped(error) { o.dropped.Inc() }
