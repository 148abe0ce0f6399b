package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pkg/profile"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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

// liveState is what loadgen's own metrics read: the runs and churn of the
// current scenario.
type liveState struct {
	mu    sync.Mutex
	runs  []*implRun
	churn *churner
}

func (l *liveState) set(runs []*implRun, g *churner) {
	l.mu.Lock()
	l.runs, l.churn = runs, g
	l.mu.Unlock()
}

// liveCollector exports loadgen's view of both implementations, so one
// dashboard compares them: handler calls, churn events seen, cache reads,
// and the churn generator's writes.
type liveCollector struct {
	l                           *liveState
	emitted, calls, seen, reads *prometheus.Desc
}

func newLiveCollector(l *liveState) *liveCollector {
	return &liveCollector{
		l:       l,
		emitted: prometheus.NewDesc("loadgen_churn_events_total", "Writes by the churn generator in the current scenario.", nil, nil),
		calls:   prometheus.NewDesc("loadgen_handler_calls_total", "Handler calls, all handlers of an implementation.", []string{"impl"}, nil),
		seen:    prometheus.NewDesc("loadgen_churn_events_seen_total", "Churn events seen by the slowest handler of an implementation.", []string{"impl"}, nil),
		reads:   prometheus.NewDesc("loadgen_cache_reads_total", "ByIndex+GetByKey reads by the cache readers.", []string{"impl"}, nil),
	}
}

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.emitted
	ch <- c.calls
	ch <- c.seen
	ch <- c.reads
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	c.l.mu.Lock()
	runs, g := c.l.runs, c.l.churn
	c.l.mu.Unlock()
	if g != nil {
		ch <- prometheus.MustNewConstMetric(c.emitted, prometheus.CounterValue, float64(g.emitted()))
	}
	for _, r := range runs {
		seen, _ := r.observed()
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(r.calls()), r.name)
		ch <- prometheus.MustNewConstMetric(c.seen, prometheus.CounterValue, float64(seen), r.name)
		ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(r.reads.Load()), r.name)
	}
}

// serveMetrics serves /metrics on addr with the Go runtime and process
// collectors and loadgen's own; shardinformer's are added to the returned
// registry per run. stop shuts the server down.
func serveMetrics(addr string, live *liveState, logw io.Writer, onServe func(url string)) (*prometheus.Registry, func(), error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newLiveCollector(live),
	)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr: %w", err)
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
	fmt.Fprintf(logw, "loadgen: metrics on http://%s/metrics\n", ln.Addr())
	if onServe != nil {
		onServe("http://" + ln.Addr().String() + "/metrics")
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return reg, stop, nil
}

// startProfile starts github.com/pkg/profile in mode, writing to dir.
func startProfile(mode, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	opts := []func(*profile.Profile){profile.ProfilePath(dir), profile.NoShutdownHook, profile.Quiet}
	switch strings.ToLower(mode) {
	case "cpu":
		opts = append(opts, profile.CPUProfile)
	case "mem":
		opts = append(opts, profile.MemProfile)
	case "alloc":
		opts = append(opts, profile.MemProfileAllocs)
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
