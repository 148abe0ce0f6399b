// Command controller-runtime runs a controller-runtime manager whose cache is
// shardinformer's — the one line is NewCache: crcache.New in newManager: its
// informers are ours, listing and watching through the wire decoder with its
// memory diet — with a pod controller reading from that cache and taking its
// work from shardinformer's queue (package ratelimit, through the
// controller's NewQueue option, with controller-runtime's workqueue metrics),
// against the embedded simulated API server (package apisim): it creates
// -pods pods, waits until the controller has reconciled every one, and exits.
//
//	go run . -pods 2000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/crcache"
	"github.com/shardinformer/shardinformer/ratelimit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func main() {
	pods := flag.Int("pods", 1000, "pods to create on the simulated API server")
	timeout := flag.Duration("timeout", time.Minute, "give up after this long")
	flag.Parse()
	ctrl.SetLogger(klog.Background())
	if err := run(ctrl.SetupSignalHandler(), *pods, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run serves n pods, runs the manager until every one is reconciled, and
// stops it.
func run(ctx context.Context, n int, timeout time.Duration) error {
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		return err
	}
	for i := range n {
		ns := fmt.Sprintf("team-%d", i%10)
		if _, err := s.Create(apisim.NewPod(ns, fmt.Sprintf("pod-%05d", i), int64(i), apisim.PodOptions{})); err != nil {
			return err
		}
	}
	if err := s.Start(); err != nil {
		return err
	}
	defer s.Close()

	mgr, err := newManager(s.RESTConfig())
	if err != nil {
		return err
	}
	r := NewPodReconciler(mgr.GetClient())
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }() // goroutine: the manager; joined below.

	start := time.Now()
	for r.Len() < n && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	done := r.Len()
	cancel()
	if err := <-errc; err != nil {
		return err
	}
	if done < n {
		return fmt.Errorf("reconciled %d of %d pods before the timeout", done, n)
	}
	fmt.Printf("reconciled %d pods in %v from a cache of shardinformer informers on the wire\n", done, time.Since(start).Round(time.Millisecond))
	return nil
}

// newManager builds the manager. Its cache is crcache's: controller-runtime's
// cache, configured by Cache as usual, on shardinformer's informers and the
// wire decoder. That is the whole migration. The rest switches off the
// metrics and probe listeners an example does not need.
func newManager(cfg *rest.Config) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewCache:               crcache.New,
		Cache:                  cache.Options{ /* as usual: DefaultNamespaces, ByObject, … */ },
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	return mgr, err
}

// PodReconciler reconciles pods by reading them from the manager's cache and
// recording the resourceVersion it saw ("" once the pod is gone).
type PodReconciler struct {
	client.Client

	mu    sync.Mutex
	seen  map[types.NamespacedName]string
	queue workqueue.TypedRateLimitingInterface[reconcile.Request] // what NewQueue returned
}

// NewPodReconciler returns a reconciler reading through c.
func NewPodReconciler(c client.Client) *PodReconciler {
	return &PodReconciler{Client: c, seen: map[types.NamespacedName]string{}}
}

// SetupWithManager registers the reconciler as the manager's pod
// controller. Its work queue is shardinformer's (ratelimit.Queue) with the
// rate limiter controller-runtime passes and controller-runtime's workqueue
// metrics, instead of controller-runtime's default queue.
func (r *PodReconciler) SetupWithManager(mgr manager.Manager) error {
	metricsProvider, err := workqueueMetrics()
	if err != nil {
		return err
	}
	// The controller's work queue: ratelimit's, through NewQueue.
	newQueue := func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		q, err := ratelimit.New(ratelimit.Config[reconcile.Request]{Name: name, RateLimiter: rl, MetricsProvider: metricsProvider})
		if err != nil {
			panic(err) // only for an invalid Config
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.queue = q
		return q
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}).
		Named("pods").
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: 4, SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	rv := ""
	switch err := r.Get(ctx, req.NamespacedName, &pod); {
	case err == nil:
		rv = pod.ResourceVersion
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[req.NamespacedName] = rv
	return ctrl.Result{}, nil
}

// Len returns the number of pods reconciled at least once.
func (r *PodReconciler) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// Seen returns the resourceVersion the last reconcile of key saw and whether
// key was reconciled.
func (r *PodReconciler) Seen(key types.NamespacedName) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := r.seen[key]
	return rv, ok
}

// Queue returns the work queue the controller's NewQueue built (nil before
// the controller starts).
func (r *PodReconciler) Queue() workqueue.TypedRateLimitingInterface[reconcile.Request] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queue
}

// workqueueMetrics returns controller-runtime's workqueue metrics provider.
// Its type is internal to controller-runtime, so this one hands out the
// children of the very workqueue_* vectors controller-runtime registers on
// its metrics.Registry (served on the manager's /metrics endpoint), with
// controller-runtime's labels: name and controller both the controller's
// name, and priority "" on the depth. It finds those vectors by registering
// identical ones, which prometheus answers with the vector already
// registered; it fails if controller-runtime's differ (another version).
var workqueueMetrics = sync.OnceValues(func() (workqueue.MetricsProvider, error) {
	const sub = "workqueue"
	labels := []string{"name", "controller"}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: name, Help: help}, labels)
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: name, Help: help}, labels)
	}
	var p crWorkqueueMetrics
	var err error
	p.depth, err = existing(err, gauge("depth", "Current depth of workqueue by workqueue and priority", "name", "controller", "priority"))
	p.adds, err = existing(err, counter("adds_total", "Total number of adds handled by workqueue"))
	p.latency, err = existing(err, histogram("queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested"))
	p.work, err = existing(err, histogram("work_duration_seconds", "How long in seconds processing an item from workqueue takes."))
	p.unfinished, err = existing(err, gauge("unfinished_work_seconds", "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.", labels...))
	p.longest, err = existing(err, gauge("longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running.", labels...))
	p.retries, err = existing(err, counter("retries_total", "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)"))
	if err != nil {
		return nil, err
	}
	return p, nil
})

// existing returns the collector already registered on controller-runtime's
// metrics.Registry like c, unless err is set already (then it returns err).
func existing[C prometheus.Collector](err error, c C) (C, error) {
	if err != nil {
		return c, err
	}
	err = metrics.Registry.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if prev, ok := already.ExistingCollector.(C); ok {
			return prev, nil
		}
	}
	if err == nil {
		metrics.Registry.Unregister(c)
		err = errors.New("not registered by controller-runtime")
	}
	return c, fmt.Errorf("controller-runtime's workqueue metrics: %w", err)
}

// crWorkqueueMetrics implements workqueue.MetricsProvider on
// controller-runtime's vectors (see workqueueMetrics).
type crWorkqueueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func (p crWorkqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name, name, "")
}

func (p crWorkqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name, name)
}

func (p crWorkqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name, name)
}

func (p crWorkqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.work.WithLabelValues(name, name)
}

func (p crWorkqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name, name)
}

func (p crWorkqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name, name)
}

func (p crWorkqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name, name)
}
