package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shardinformer/shardinformer/pipeline"
)

// Implementation names, as --impl and the reports spell them.
const (
	implOurs     = "shardinformer"
	implClientGo = "client-go"
)

// config is everything a run needs, parsed from flags. The zero value is not
// useful; defaultConfig gives the documented defaults.
type config struct {
	impls         []string // implOurs and/or implClientGo, in run order
	sequential    bool
	pods          int
	namespaces    int
	churnRate     float64 // events/s; 0 = as fast as possible
	churnDuration time.Duration
	churnEvents   int
	mix           mix
	handlers      int
	handlerWork   time.Duration
	readers       int
	workers       int
	shards        int // 0 = pipeline default
	ringSize      int
	policy        pipeline.FullRingPolicy
	contentType   string // "json" or "protobuf"
	watchList     string // "on", "off" or "default"
	managedFields bool
	kubeconfig    string
	out           string
	html          string
	metricsAddr   string
	profile       string
	profileDir    string
	seed          int64
	quiesce       time.Duration // how long to wait for informers to catch up after churn
	progress      time.Duration // progress line and timeline sampling period; 0 = off
	churnWorkers  int           // concurrent writers; 0 = 1 for the simulator, 16 for a cluster

	// Test hooks, nil in the command.
	onMetrics  func(url string) // called once the metrics endpoint serves
	afterCheck func()           // called after the check, informers still running
}

// mix is the relative weight of creates, updates and deletes in the churn.
type mix struct{ create, update, delete int }

func (m mix) String() string { return fmt.Sprintf("%d:%d:%d", m.create, m.update, m.delete) }

func parseMix(s string) (mix, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return mix{}, fmt.Errorf("--mix %q: want create:update:delete, e.g. 1:8:1", s)
	}
	var w [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return mix{}, fmt.Errorf("--mix %q: weight %q is not a non-negative integer", s, p)
		}
		w[i] = n
	}
	if w[0]+w[1]+w[2] == 0 {
		return mix{}, fmt.Errorf("--mix %q: all weights are zero", s)
	}
	return mix{w[0], w[1], w[2]}, nil
}

// parseFlags parses args (without the program name). Usage and errors go to
// stderr; a -h/--help request returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var impl, mixS, policy string
	fs.StringVar(&impl, "impl", "both", "informer implementation(s) to run: shardinformer, client-go or both")
	fs.BoolVar(&c.sequential, "sequential", false, "run the implementations one after the other, each on a fresh copy of the same cluster and churn (same seed), instead of side by side on one stream; gives per-implementation CPU, heap and RSS without the two competing for cores")
	fs.IntVar(&c.pods, "pods", 100000, "pods to create before the informers start")
	fs.IntVar(&c.namespaces, "namespaces", 100, "namespaces the pods are spread over")
	fs.Float64Var(&c.churnRate, "churn-rate", 2000, "churn events per second (creates+updates+deletes); 0 = as fast as possible")
	fs.DurationVar(&c.churnDuration, "churn-duration", 30*time.Second, "length of the churn phase; 0 = bounded by --churn-events only (both 0: no churn phase)")
	fs.IntVar(&c.churnEvents, "churn-events", 0, "stop the churn after this many events; 0 = bounded by --churn-duration only")
	fs.StringVar(&mixS, "mix", "1:8:1", "relative weights create:update:delete of churn events")
	fs.IntVar(&c.handlers, "handlers", 2, "event handlers registered on each informer")
	fs.DurationVar(&c.handlerWork, "handler-work", 0, "simulated CPU work (busy loop) per handler call, e.g. 20us")
	fs.IntVar(&c.readers, "readers", 0, "goroutines per implementation reading the cache during churn (ByIndex(namespace) then GetByKey)")
	fs.IntVar(&c.workers, "workers", 1, "shardinformer only: handlers are registered with AddParallelEventHandler(h, workers) when > 1")
	fs.IntVar(&c.shards, "shards", 0, "shardinformer only: shard count; 0 = GOMAXPROCS")
	fs.IntVar(&c.ringSize, "ring-size", 4096, "shardinformer only: ring capacity per (shard, listener worker)")
	fs.StringVar(&policy, "policy", pipeline.Buffer.String(), "shardinformer only: full-ring policy: "+policyNames())
	fs.StringVar(&c.contentType, "content-type", "protobuf", "wire format of the informers' clients: json or protobuf")
	fs.StringVar(&c.watchList, "watchlist", "default", "client-go WatchListClient feature gate: on, off or default (client-go's default, on in v0.37)")
	fs.BoolVar(&c.managedFields, "managed-fields", false, "give pods managedFields (adds 3-6 KB each)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "run against a real cluster: create pods in loadgen's own labelled namespaces, churn through the API server, clean up on exit; empty = embedded simulated API server on 127.0.0.1")
	fs.StringVar(&c.out, "out", "", "write the machine-readable report (JSON) to this file")
	fs.StringVar(&c.html, "html", "", "write an HTML report with charts (self-contained, no network) to this file")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this loopback address, e.g. 127.0.0.1:9090; empty = off")
	fs.StringVar(&c.profile, "profile", "", "profile the run with github.com/pkg/profile: cpu, mem, alloc, mutex, block, goroutine or trace")
	fs.StringVar(&c.profileDir, "profile-dir", "profiles", "directory for --profile output")
	fs.Int64Var(&c.seed, "seed", 1, "random seed for pods and churn")
	fs.DurationVar(&c.quiesce, "quiesce-timeout", 2*time.Minute, "how long to wait after churn for every informer and handler to reach the server's state")
	fs.DurationVar(&c.progress, "progress", time.Second, "progress line and timeline sample interval; 0 = no progress line")
	fs.IntVar(&c.churnWorkers, "churn-workers", 0, "concurrent churn writers; 0 = 1 against the simulator, 16 against a cluster")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `loadgen stresses shardinformer and client-go's SharedIndexInformer with the same
pod workload: populate, initial sync, churn at a target rate, then a
correctness check (each cache and handler ends at the server's state). It
prints a summary table and exits non-zero if a check fails.

Usage: loadgen [flags]

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var errs []error
	switch impl {
	case "both":
		c.impls = []string{implOurs, implClientGo}
	case implOurs, implClientGo:
		c.impls = []string{impl}
	default:
		errs = append(errs, fmt.Errorf("--impl %q: want shardinformer, client-go or both", impl))
	}
	var err error
	if c.mix, err = parseMix(mixS); err != nil {
		errs = append(errs, err)
	}
	if c.policy, err = pipeline.ParseFullRingPolicy(policy); err != nil {
		errs = append(errs, fmt.Errorf("--policy: %w", err))
	}
	errs = append(errs, c.validate()...)
	return c, errors.Join(errs...)
}

// validate checks the numeric and enumerated fields.
func (c *config) validate() []error {
	var errs []error
	nonNeg := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("--%s %d: must not be negative", name, v))
		}
	}
	nonNeg("pods", int64(c.pods))
	nonNeg("churn-events", int64(c.churnEvents))
	nonNeg("handlers", int64(c.handlers))
	nonNeg("readers", int64(c.readers))
	nonNeg("shards", int64(c.shards))
	nonNeg("churn-workers", int64(c.churnWorkers))
	if c.namespaces < 1 {
		errs = append(errs, fmt.Errorf("--namespaces %d: need at least 1", c.namespaces))
	}
	if c.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers %d: need at least 1", c.workers))
	}
	if c.ringSize < 1 {
		errs = append(errs, fmt.Errorf("--ring-size %d: need at least 1", c.ringSize))
	}
	if c.churnRate < 0 {
		errs = append(errs, fmt.Errorf("--churn-rate %v: must not be negative (0 = as fast as possible)", c.churnRate))
	}
	if c.churnDuration < 0 || c.handlerWork < 0 || c.quiesce < 0 || c.progress < 0 {
		errs = append(errs, fmt.Errorf("durations must not be negative (--churn-duration %v, --handler-work %v, --quiesce-timeout %v, --progress %v)",
			c.churnDuration, c.handlerWork, c.quiesce, c.progress))
	}
	if c.mix.create+c.mix.update+c.mix.delete > 0 && c.mix.create == 0 && c.mix.update == 0 && c.pods == 0 {
		errs = append(errs, errors.New("--mix with only deletes needs --pods > 0"))
	}
	switch c.contentType {
	case "json", "protobuf":
	default:
		errs = append(errs, fmt.Errorf("--content-type %q: want json or protobuf", c.contentType))
	}
	switch c.watchList {
	case "on", "off", "default":
	default:
		errs = append(errs, fmt.Errorf("--watchlist %q: want on, off or default", c.watchList))
	}
	switch c.profile {
	case "", "cpu", "mem", "alloc", "mutex", "block", "goroutine", "trace":
	default:
		errs = append(errs, fmt.Errorf("--profile %q: want cpu, mem, alloc, mutex, block, goroutine or trace", c.profile))
	}
	if c.metricsAddr != "" {
		if err := checkLoopback(c.metricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-addr: %w", err))
		}
	}
	if c.kubeconfig != "" {
		if _, err := os.Stat(c.kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--kubeconfig: %w", err))
		}
	}
	return errs
}

// policyNames lists the full-ring policies for --policy's help.
func policyNames() string {
	var names []string
	for _, p := range pipeline.FullRingPolicies() {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}
