package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/pkg/profile"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
)

// checkLoopback accepts host:port addresses on loopback only.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: only loopback addresses are served (e.g. 127.0.0.1:9090)", addr)
	}
	return nil
}

// liveState is what the parent's own metrics read: the churn of the
// current trial.
type liveState struct {
	mu    sync.Mutex
	churn *target.Churner
}

func (l *liveState) set(g *target.Churner) {
	l.mu.Lock()
	l.churn = g
	l.mu.Unlock()
}

// liveCollector exports the churn writer's count.
type liveCollector struct {
	l       *liveState
	emitted *prometheus.Desc
}

func newLiveCollector(l *liveState) *liveCollector {
	return &liveCollector{l: l,
		emitted: prometheus.NewDesc("loadgen_churn_events_total", "Writes by the churn generator in the current trial.", nil, nil)}
}

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.emitted }

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	c.l.mu.Lock()
	g := c.l.churn
	c.l.mu.Unlock()
	if g != nil {
		ch <- prometheus.MustNewConstMetric(c.emitted, prometheus.CounterValue, float64(g.Emitted()))
	}
}

// clientRegisterer registers one implementation's metrics on a registry
// shared by the run and remembers them, so that they can be unregistered
// when the implementation ends: the next trial, and the next
// implementation side by side, register theirs anew. Pipeline metrics go
// through it with an impl label (labelled), so that two of our cores side
// by side do not collide. Used by the goroutine that builds and ends the
// client.
type clientRegisterer struct {
	reg  prometheus.Registerer
	done []func() bool // Unregister calls, one per registered collector
}

func (r *clientRegisterer) register(reg prometheus.Registerer, c prometheus.Collector) error {
	if err := reg.Register(c); err != nil {
		return err
	}
	r.done = append(r.done, func() bool { return reg.Unregister(c) })
	return nil
}

// Register, MustRegister and Unregister make it a prometheus.Registerer
// for the pipeline's metrics (promadapter.NewObserver).
func (r *clientRegisterer) Register(c prometheus.Collector) error { return r.register(r.reg, c) }
func (r *clientRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}
func (r *clientRegisterer) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// unregisterAll unregisters everything registered through r.
func (r *clientRegisterer) unregisterAll() {
	for _, f := range r.done {
		f()
	}
	r.done = nil
}

// clientCollector exports one implementation's counters as loadgen sees
// them, labelled impl, so one dashboard compares implementations.
type clientCollector struct {
	c                              *client
	calls, seen, reads, reconciles *prometheus.Desc
}

func newClientCollector(c *client) *clientCollector {
	l := prometheus.Labels{"impl": c.sp.Impl}
	return &clientCollector{c: c,
		calls:      prometheus.NewDesc("loadgen_handler_calls_total", "Handler calls, all handlers of an implementation.", nil, l),
		seen:       prometheus.NewDesc("loadgen_churn_events_seen_total", "Churn events seen by the slowest handler of an implementation.", nil, l),
		reads:      prometheus.NewDesc("loadgen_cache_reads_total", "ByIndex+GetByKey reads by the cache readers.", nil, l),
		reconciles: prometheus.NewDesc("loadgen_reconciles_total", "Reconciles by the controller's workers.", nil, l),
	}
}

func (c *clientCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.calls
	ch <- c.seen
	ch <- c.reads
	ch <- c.reconciles
}

func (c *clientCollector) Collect(ch chan<- prometheus.Metric) {
	seen, _ := c.c.observed()
	ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(c.c.calls()))
	ch <- prometheus.MustNewConstMetric(c.seen, prometheus.CounterValue, float64(seen))
	ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(c.c.reads.Load()))
	ch <- prometheus.MustNewConstMetric(c.reconciles, prometheus.CounterValue, float64(c.c.reconciles()))
}

// serveMetrics serves /metrics on addr with the Go runtime and process
// collectors and, if live is not nil, the churn writer's count; each
// implementation adds its own to the returned registry. stop shuts the
// server down.
func serveMetrics(addr string, live *liveState, logw io.Writer) (reg *prometheus.Registry, url string, stop func(), err error) {
	reg = prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if live != nil {
		reg.MustRegister(newLiveCollector(live))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { // the metrics server's accept loop
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(logw, "loadgen: metrics server:", err)
		}
	}()
	url = "http://" + ln.Addr().String() + "/metrics"
	fmt.Fprintf(logw, "loadgen: metrics on %s\n", url)
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return reg, url, stop, nil
}

// churnAllocsSnapshot writes the allocs profile as <name>.pprof into the
// profile directory under --profile allocs (else it does nothing), so that
// pprof -diff_base churn-start.pprof churn-end.pprof gives the churn's
// allocation sites alone. The runtime publishes allocation counts at the
// end of a GC cycle, so it first runs one: that moves the process's GC
// cycles, so a run profiled this way is for attributing allocations, not
// for its latency or GC figures.
func churnAllocsSnapshot(sp protocol.Spec, name string) error {
	if strings.ToLower(sp.Profile) != "allocs" {
		return nil
	}
	runtime.GC()
	if err := writeProfile("allocs", filepath.Join(sp.ProfileDir, name+".pprof")); err != nil {
		return fmt.Errorf("--profile allocs: %w", err)
	}
	return nil
}

// writeProfile writes the runtime's profile called kind (allocs, heap) into
// a new file at path.
func writeProfile(kind, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(kind).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// startProfile starts github.com/pkg/profile in mode, writing into dir,
// which must not exist yet: a profile never overwrites another.
func startProfile(mode, dir string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	opts := []func(*profile.Profile){profile.ProfilePath(dir), profile.NoShutdownHook, profile.Quiet}
	switch strings.ToLower(mode) {
	case "cpu":
		opts = append(opts, profile.CPUProfile)
	// pkg/profile's MemProfileHeap and MemProfileAllocs leave the sampling
	// rate at 0 (no samples) unless a rate is set as well.
	case "heap":
		opts = append(opts, profile.MemProfileRate(profile.DefaultMemProfileRate), profile.MemProfileHeap)
	case "allocs":
		opts = append(opts, profile.MemProfileRate(profile.DefaultMemProfileRate), profile.MemProfileAllocs)
	case "mutex":
		opts = append(opts, profile.MutexProfile)
	case "block":
		opts = append(opts, profile.BlockProfile)
	case "goroutine":
		opts = append(opts, profile.GoroutineProfile)
	case "trace":
		opts = append(opts, profile.TraceProfile)
	default:
		return nil, fmt.Errorf("--profile %q: unknown mode", mode)
	}
	p := profile.Start(opts...)
	return p.Stop, nil
}
