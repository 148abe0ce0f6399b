package promadapter

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// WorkqueueMetricsProvider implements client-go's workqueue.MetricsProvider
// with Prometheus metrics, for ratelimit.Queue (Config.MetricsProvider) or
// client-go's own queues (TypedQueueConfig.MetricsProvider). The metrics
// have the names, label and buckets that kube-controller-manager registers
// (k8s.io/component-base/metrics/prometheus/workqueue), so dashboards and
// alerts written for client-go's queues work unchanged:
//
//	workqueue_depth{name}                              gauge
//	workqueue_adds_total{name}                         counter
//	workqueue_queue_duration_seconds{name}             histogram, 1µs … 1000s
//	workqueue_work_duration_seconds{name}              histogram, 1µs … 1000s
//	workqueue_unfinished_work_seconds{name}            gauge
//	workqueue_longest_running_processor_seconds{name}  gauge
//	workqueue_retries_total{name}                      counter
//
// Each queue's name is its label value. Several queues share one provider,
// and several providers may be built on one Registerer: the first registers
// the metric vectors and the others reuse them.
//
// controller-runtime's own metrics add a "controller" label (equal to name)
// and finer buckets, under the same names, so this provider cannot share
// controller-runtime's registry; a controller-runtime user who wants exactly
// those series gives the queue a provider that feeds them
// (examples/controller-runtime has one: controller-runtime v0.25 keeps its
// own provider's type internal).
//
// Safe for concurrent use; must not be copied.
type WorkqueueMetricsProvider struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

var _ workqueue.MetricsProvider = (*WorkqueueMetricsProvider)(nil)

// workqueueBuckets are kube-controller-manager's: 1µs to 1000s, ×10.
var workqueueBuckets = prometheus.ExponentialBuckets(1e-6, 10, 10)

// NewWorkqueueMetricsProvider creates the workqueue metrics and registers
// them on reg, or reuses those already registered there by another provider.
// It fails if reg holds different metrics under these names.
func NewWorkqueueMetricsProvider(reg prometheus.Registerer) (*WorkqueueMetricsProvider, error) {
	if reg == nil {
		return nil, errors.New("promadapter: NewWorkqueueMetricsProvider: nil Registerer")
	}
	label := []string{"name"}
	p := &WorkqueueMetricsProvider{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of workqueue",
		}, label),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "adds_total",
			Help: "Total number of adds handled by workqueue",
		}, label),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help:    "How long in seconds an item stays in workqueue before being requested.",
			Buckets: workqueueBuckets,
		}, label),
		work: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "workqueue", Name: "work_duration_seconds",
			Help:    "How long in seconds processing an item from workqueue takes.",
			Buckets: workqueueBuckets,
		}, label),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration. " +
				"Large values indicate stuck threads. One can deduce the number of stuck threads by observing " +
				"the rate at which this increases.",
		}, label),
		longest: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running.",
		}, label),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "workqueue", Name: "retries_total",
			Help: "Total number of retries handled by workqueue",
		}, label),
	}
	var errs [7]error
	p.depth, errs[0] = registerOrReuse(reg, p.depth)
	p.adds, errs[1] = registerOrReuse(reg, p.adds)
	p.latency, errs[2] = registerOrReuse(reg, p.latency)
	p.work, errs[3] = registerOrReuse(reg, p.work)
	p.unfinished, errs[4] = registerOrReuse(reg, p.unfinished)
	p.longest, errs[5] = registerOrReuse(reg, p.longest)
	p.retries, errs[6] = registerOrReuse(reg, p.retries)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return p, nil
}

// registerOrReuse registers c on reg, or returns the collector of the same
// type already registered there with the same description (so that several
// observers or providers of one registry share their metrics).
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("promadapter: register: %w", err)
}

// NewDepthMetric implements workqueue.MetricsProvider.
func (p *WorkqueueMetricsProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (p *WorkqueueMetricsProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (p *WorkqueueMetricsProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (p *WorkqueueMetricsProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.work.WithLabelValues(name)
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (p *WorkqueueMetricsProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}

// NewLongestRunningProcessorSecondsMetric implements workqueue.MetricsProvider.
func (p *WorkqueueMetricsProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name)
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (p *WorkqueueMetricsProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}
