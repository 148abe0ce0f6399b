package promadapter

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/pipeline"
)

// Observer implements pipeline.Observer with Prometheus counters and
// histograms, every series labelled with the informer it observes. It is a
// pipeline.ScopedObserver: an informer built with it gets, from ForInformer,
// an Observer of its own whose series carry its name (pipeline.WithName) as
// the informer label; so one Observer serves every informer of a process
// (all of a factory's through its pipeline options). Build it with
// NewObserver; it must not be copied. Its methods are safe for concurrent
// use and never block.
type Observer struct {
	fam *families

	// The families curried with informer, and the informer's series of the
	// others, created on first use (so that an Observer only scoped to
	// informers adds no series of its own).
	events          *prometheus.CounterVec // {shard, type}
	batches         *prometheus.CounterVec // {shard}
	handlerDuration prometheus.ObserverVec // {listener}
	panics          *prometheus.CounterVec // {listener}
	overflow        *prometheus.CounterVec // {listener}
	coalesced       *prometheus.CounterVec // {listener}
	coalescing      *prometheus.GaugeVec   // {listener}
	episodes        *prometheus.CounterVec // {listener}
	series          func() *informerSeries

	// Children looked up once per label value; the hooks then only load
	// from these maps (lock-free on hit).
	shardChildren    sync.Map // int -> *shardChildren
	listenerChildren sync.Map // string -> *listenerChildren
}

type informerSeries struct {
	batchKeys, batchDuration prometheus.Observer
	relists, dropped         prometheus.Counter
	relistObjects            prometheus.Gauge
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

var (
	_ pipeline.Observer       = (*Observer)(nil)
	_ pipeline.ScopedObserver = (*Observer)(nil)
)

// families are the metric families, registered once per registry and
// shared by every Observer on it; informer is the first label of each.
type families struct {
	events, batches                           *prometheus.CounterVec
	batchKeys, batchDuration, handlerDuration *prometheus.HistogramVec
	panics, overflow, coalesced, episodes     *prometheus.CounterVec
	relists, dropped                          *prometheus.CounterVec
	coalescing, relistObjects                 *prometheus.GaugeVec
}

// HandlerDurationBuckets are the buckets of
// shardinformer_handler_duration_seconds: 1µs to ~4.5 minutes, ×4 apart,
// for handlers from a map write to a reconcile that calls slow APIs.
var HandlerDurationBuckets = prometheus.ExponentialBuckets(1e-6, 4, 15)

// labels prepends the informer label to a metric's own labels.
func labels(own ...string) []string { return append([]string{"informer"}, own...) }

func newFamilies() *families {
	return &families{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_events_total",
			Help: "Notifications produced by a shard's drain goroutine, by type (add, update, delete).",
		}, labels("shard", "type")),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_batches_total",
			Help: "Batches applied by a shard's drain goroutine.",
		}, labels("shard")),
		batchKeys: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardinformer_batch_keys",
			Help:    "Keys taken from a shard's queue per batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10), // 1 … 512
		}, labels()),
		batchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardinformer_batch_duration_seconds",
			Help:    "Time a drain goroutine took to apply and publish one batch.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 11), // 1µs … ~1s
		}, labels()),
		handlerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shardinformer_handler_duration_seconds",
			Help:    "Duration of one event handler call; the count is the number of deliveries.",
			Buckets: HandlerDurationBuckets,
		}, labels("listener")),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_handler_panics_total",
			Help: "Handler panics recovered by the listener workers.",
		}, labels("listener")),
		overflow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_overflow_total",
			Help: "Notifications that did not fit the listener's ring and went to its overflow.",
		}, labels("listener")),
		coalesced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_coalesced_total",
			Help: "Overflowing notifications merged into one already waiting for the same key.",
		}, labels("listener")),
		coalescing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardinformer_listener_coalescing",
			Help: "1 while the listener's overflow is merged per key (under Buffer: its backlog reached the budget), else 0.",
		}, labels("listener")),
		episodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_coalescing_episodes_total",
			Help: "Times the listener started merging its overflow per key.",
		}, labels("listener")),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_relists_total",
			Help: "Full lists applied by the reflector, the first one included.",
		}, labels()),
		relistObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "shardinformer_relist_objects",
			Help: "Objects in the most recent full list.",
		}, labels()),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shardinformer_dropped_total",
			Help: "Input rejected: objects without a key, failing transforms or index functions.",
		}, labels()),
	}
}

// register registers every family on reg. A family already registered there
// by another Observer (the same definition) is taken over instead, so that
// the Observers of one registry share their families.
func (f *families) register(reg prometheus.Registerer) error {
	var errs [13]error
	f.events, errs[0] = registerOrReuse(reg, f.events)
	f.batches, errs[1] = registerOrReuse(reg, f.batches)
	f.batchKeys, errs[2] = registerOrReuse(reg, f.batchKeys)
	f.batchDuration, errs[3] = registerOrReuse(reg, f.batchDuration)
	f.handlerDuration, errs[4] = registerOrReuse(reg, f.handlerDuration)
	f.panics, errs[5] = registerOrReuse(reg, f.panics)
	f.overflow, errs[6] = registerOrReuse(reg, f.overflow)
	f.coalesced, errs[7] = registerOrReuse(reg, f.coalesced)
	f.relists, errs[8] = registerOrReuse(reg, f.relists)
	f.relistObjects, errs[9] = registerOrReuse(reg, f.relistObjects)
	f.dropped, errs[10] = registerOrReuse(reg, f.dropped)
	f.coalescing, errs[11] = registerOrReuse(reg, f.coalescing)
	f.episodes, errs[12] = registerOrReuse(reg, f.episodes)
	return errors.Join(errs[:]...)
}

// NewObserver returns an Observer whose metrics are registered on reg. A
// second Observer on the same registry shares the first one's metrics; each
// informer's series carry its name. Used directly, not through an informer,
// the Observer's series have an empty informer label.
func NewObserver(reg prometheus.Registerer) (*Observer, error) {
	if reg == nil {
		return nil, fmt.Errorf("promadapter: NewObserver: nil Registerer")
	}
	fam := newFamilies()
	if err := fam.register(reg); err != nil {
		return nil, err
	}
	return fam.observer(""), nil
}

// ForInformer implements pipeline.ScopedObserver: it returns an Observer
// sharing o's metrics whose series carry informer as the informer label.
func (o *Observer) ForInformer(informer string) pipeline.Observer {
	return o.fam.observer(informer)
}

// observer returns an Observer of the families for informer.
func (f *families) observer(informer string) *Observer {
	l := prometheus.Labels{"informer": informer}
	return &Observer{
		fam:             f,
		events:          f.events.MustCurryWith(l),
		batches:         f.batches.MustCurryWith(l),
		handlerDuration: f.handlerDuration.MustCurryWith(l),
		panics:          f.panics.MustCurryWith(l),
		overflow:        f.overflow.MustCurryWith(l),
		coalesced:       f.coalesced.MustCurryWith(l),
		coalescing:      f.coalescing.MustCurryWith(l),
		episodes:        f.episodes.MustCurryWith(l),
		series: sync.OnceValue(func() *informerSeries {
			return &informerSeries{
				batchKeys:     f.batchKeys.WithLabelValues(informer),
				batchDuration: f.batchDuration.WithLabelValues(informer),
				relists:       f.relists.WithLabelValues(informer),
				relistObjects: f.relistObjects.WithLabelValues(informer),
				dropped:       f.dropped.WithLabelValues(informer),
			}
		}),
	}
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
	is := o.series()
	is.batchKeys.Observe(float64(b.Keys))
	is.batchDuration.Observe(b.Duration.Seconds())
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
	is := o.series()
	is.relists.Inc()
	is.relistObjects.Set(float64(objects))
}

// Dropped implements pipeline.Observer.
func (o *Observer) Dropped(error) { o.series().dropped.Inc() }
