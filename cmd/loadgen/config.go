package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	"github.com/shardinformer/shardinformer/faults"
	"github.com/shardinformer/shardinformer/pipeline"
)

// profileModes are the --profile values, each a github.com/pkg/profile mode.
var profileModes = []string{"cpu", "heap", "allocs", "mutex", "block", "goroutine", "trace"}

// config is everything a run needs, parsed from flags. The zero value is not
// useful; parseFlags gives the documented defaults.
type config struct {
	scenario      string
	path          string             // the user path both implementations are built through (paths.go)
	impls         []string           // implementation names (see variant), in run order
	variants      map[string]variant // by name
	sideBySide    bool               // all implementations in this process on one stream
	runs          int
	pods          int   // informer and controller scenarios
	scalePods     []int // scale scenario
	namespaces    int
	churnRate     float64 // events/s; 0 = as fast as possible
	churnDuration time.Duration
	churnEvents   int
	mix           target.Mix
	// informer scenario
	handlers       int
	handlerWork    time.Duration
	handlerWorkers int
	readers        int
	// controller and scale scenarios
	workers       int
	reconcileWork time.Duration
	// replicas scenario
	replicaCounts []int  // replica counts to run, each a set of processes
	shardSelector string // "on", "off" or "both": the simulator's ShardedListAndWatch
	// shardinformer
	shards   int // 0 = pipeline default (GOMAXPROCS)
	ringSize int
	policy   pipeline.FullRingPolicy
	// the wire decoder
	diet        bool // the default of every wire variant without +diet or +no-diet
	wireWorkers int  // 0 = wire's default (GOMAXPROCS)
	// both
	contentType   string // "json" or "protobuf"
	watchList     string // "on", "off" or "default"
	managedFields bool
	kubeconfig    string
	reusePods     bool  // cluster: keep one populated namespace set across trials (target.Config.ReusePods)
	serverPIDs    []int // local API server processes whose CPU the report gives (apiserver.go)
	outDir        string
	out           string
	html          string
	metricsAddr   string
	profile       string
	seed          int64
	quiesce       time.Duration  // how long to wait for informers to catch up after churn
	progress      time.Duration  // progress line period; 0 = off
	churnWorkers  int            // concurrent writers; 0 = 1 for the simulator, 16 for a cluster
	faults        *faults.Config // --faults: the fault proxy's spec (no Upstream); nil = none (faults.go)
	soak          soakConfig     // soak scenario (soak.go)
	steadyPods    bool           // the churn keeps each writer's pod count steady (soak)
	childMemLimit int64          // --child-mem-limit: bytes of RSS above which a child is killed (did not fit); 0 = none (fit.go)
	args          []string       // the command line, for the report

	// Test hooks, nil in the command.
	onMetrics  func(url string) // called once a metrics endpoint serves (side by side)
	afterCheck func()           // called after the check, informers still running (side by side)
}

func parseMix(s string) (target.Mix, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return target.Mix{}, fmt.Errorf("--mix %q: want create:update:delete, e.g. 1:8:1", s)
	}
	var w [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return target.Mix{}, fmt.Errorf("--mix %q: weight %q is not a non-negative integer", s, p)
		}
		w[i] = n
	}
	if w[0]+w[1]+w[2] == 0 {
		return target.Mix{}, fmt.Errorf("--mix %q: all weights are zero", s)
	}
	return target.Mix{Create: w[0], Update: w[1], Delete: w[2]}, nil
}

// parseSizes parses a comma-separated list of object counts; "k" and "M"
// suffixes multiply by 1000 and 1000000.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		mult := 1
		switch {
		case strings.HasSuffix(f, "k"):
			mult, f = 1000, strings.TrimSuffix(f, "k")
		case strings.HasSuffix(f, "M"):
			mult, f = 1000000, strings.TrimSuffix(f, "M")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--scale-pods %q: %q is not a positive count (e.g. 10k,100k,1M)", s, f)
		}
		out = append(out, n*mult)
	}
	if !slices.IsSorted(out) {
		return nil, fmt.Errorf("--scale-pods %q: sizes must be in increasing order", s)
	}
	return out, nil
}

const usageHeader = `loadgen runs client-go's informer stack and shardinformer's on the same pod
workload and reports what a controller author cares about, with the ratio
ours/client-go and a verdict for every figure. It exits non-zero if a
correctness check fails (each cache, handler and reconciler must end at the
server's state).

Scenarios (--scenario):
  controller  (default) informer -> work queue -> --workers workers that read
              the cache (Get + ByIndex of the pod's namespace), burn
              --reconcile-work of CPU and, against a real cluster, patch the
              pod's status. The same reconcile function runs on both stacks.
              Figures: time to sync and reconcile every object, reconciles/s,
              reconcile start latency after a change, cache freshness, CPU,
              retained heap.
  informer    informers with --handlers event handlers (and --readers cache
              readers); figures: sync, events/s, delivery latency.
  scale       the controller scenario swept over --scale-pods object counts
              for --impl (default shardinformer), reporting how each figure
              grows; with a --path other than typed it sweeps the informer
              scenario, the one of those paths. Each implementation runs
              alone in its process at each size; one that does not fit
              (--child-mem-limit, or the machine) is reported as "did not
              fit in N GiB" there and the sweep goes on.
  replicas    the controller scenario split over controller replicas
              (package replicas/runner), each a process of its own, for each
              count in --replicas: Leases, hand-over, one informer per slot
              of the hash space, the same reconcile function and work queue.
              Figures per replica count: reconciles/s in aggregate and per
              replica, time to converge and reconcile everything, and per
              replica the objects cached, decoded and held in memory. On
              this machine's few cores the replicas share the CPU, so the
              aggregate rate cannot grow with N; what must shrink as 1/N is
              each replica's memory and decoding. --pods defaults to 30000
              here; --shard-selector off measures the client-side fallback.
  soak        the controller scenario held for --soak (default 1h) of churn
              (--churn-rate default 500/s, the pod count held steady) under
              --faults (default: every kind, spaced), each implementation
              alone in its process, one after the other. Each samples every
              --soak-sample-every its live heap after GC, goroutines and
              long-lived structures (wire's interner and versions table,
              fifo entries, index tables and tombstones, rings, overflow);
              after --soak-warmup the fitted slope of heap (least squares)
              and goroutines (Theil-Sen, which a sample taken as a watch
              restarts does not tilt) must be within +-2%/h
              (--soak-max-slope), the cache
              equal to the server at the end, no handler panic.

Paths (--path): the way users build an informer, the same for both
implementations, each through its own library's entry point:
  typed       (default) the typed informer factory: our
              informers.NewSharedInformerFactoryWithOptions (client-go's
              informers package with the import swapped) against client-go's,
              Core().V1().Pods(). Every scenario.
  dynamic     the dynamic informer factory, unstructured objects: our
              informers/dynamicinformer against client-go's
              dynamicinformer.NewFilteredDynamicSharedInformerFactory, on a
              dynamic client. On the simulator the resource is a pod-sized
              custom resource (its widgets, each with a pod's content);
              against a cluster it is pods. JSON (the dynamic client's
              encoding, and the custom resource's).
  metadata    the metadata informer factory (PartialObjectMetadata of pods):
              our informers/metadatainformer against client-go's
              metadatainformer, on a metadata client (protobuf, its choice).
  controller-runtime
              a controller-runtime cache with an informer on pods
              (GetInformer): crcache's against controller-runtime's
              cache.New, as manager.Options.NewCache would build it.
Ours takes the wire options (--wire-workers, --diet, +diet, +no-diet) on
every path, and shardinformer+client-go-decoder is ours with the path's
WithoutWire. The non-typed paths run the informer scenario only (the default
with them; --scenario scale sweeps it), and not client-go+wire (client-go's
informer built by hand on the wire: no client-go entry point takes it); the
controller and replicas scenarios and the whole 2x2 of cores and decoders are
the typed path's.

Fairness: by default each implementation runs alone in a process of its own
(loadgen re-executes itself), so CPU, heap and GC are that implementation's
alone; the simulated API server and the churn writer stay in the parent
process. Each run repeats --runs times, alternating the implementations
(A B, B A, A B ...: the order reversed every other run) on the same workload
and seed, and the report gives median and min-max. --side-by-side runs them
at once in one process on one stream.

Output: a summary on stdout; report.json (schema: report.schema.json) and
report.html (rendered from that JSON, offline) in a new directory under
--out-dir, whose path is printed; --profile sessions land there too.

Usage: loadgen [flags]

Flags:
`

// parseFlags parses args (without the program name). Usage and errors go to
// stderr; a -h/--help request returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := config{args: append([]string{"loadgen"}, args...)}
	var impl, mixS, policy, scalePods, replicaCounts, serverPIDs, faultSpec, childMem string
	fs.StringVar(&c.scenario, "scenario", report.ScenarioController, "what to run: controller, informer, scale, replicas or soak (see above); informer with a --path other than typed")
	fs.StringVar(&c.path, "path", pathTyped, "the user path both implementations are built through: "+strings.Join(paths, ", ")+" (see above)")
	fs.StringVar(&impl, "impl", "", "implementation(s) to run: a comma-separated list of shardinformer (our informer factory, informer and work queue, on the wire decoder), client-go (client-go's informer factory, informer, work queue and decoder), client-go+wire (client-go's informer built by hand on the wire decoder: no client-go factory takes it), shardinformer+client-go-decoder (our factory with informers.WithoutWire: client-go's decoder), each optionally with +diet or +no-diet (the wire's memory diet, overriding --diet); both = shardinformer,client-go; all = those four, the 2×2 of cores and decoders; empty = both (scale and replicas: shardinformer; replicas takes one)")
	fs.BoolVar(&c.sideBySide, "side-by-side", false, "run the implementations at once in one process on one stream of events, instead of each alone in its own process; CPU is then split by goroutine label and heap and GC are shared")
	fs.IntVar(&c.runs, "runs", 3, "repetitions of each implementation (alternating), reported as median and min-max")
	fs.IntVar(&c.pods, "pods", 100000, "pods to create before the informers start (controller, informer and replicas scenarios; replicas: default 30000)")
	fs.StringVar(&scalePods, "scale-pods", "10k,30k,100k", "object counts the scale scenario sweeps, increasing; at 1M the simulated server (this process) needs ≈3 GiB at its peak and each implementation's process its cache: ≈13 GiB for shardinformer with the diet, ≈22 GiB for client-go")
	fs.StringVar(&replicaCounts, "replicas", "1,2,3", "replicas scenario: the replica counts to run, increasing, each replica a process of its own")
	fs.StringVar(&c.shardSelector, "shard-selector", "on", "replicas scenario: whether the simulated API server applies shardSelector (on), ignores it so that every replica filters client-side (off: each slot informer then decodes the whole stream), or both row sets (both)")
	fs.IntVar(&c.namespaces, "namespaces", 100, "namespaces the pods are spread over")
	fs.Float64Var(&c.churnRate, "churn-rate", 2000, "churn events per second (creates+updates+deletes); 0 = as fast as possible")
	fs.DurationVar(&c.churnDuration, "churn-duration", 10*time.Second, "length of the churn phase; with --churn-rate and no --churn-events it sets the event count (rate × duration), so every trial writes the same events; 0 = bounded by --churn-events only (both 0: no churn phase)")
	fs.IntVar(&c.churnEvents, "churn-events", 0, "stop the churn after this many events; 0 = bounded by --churn-duration only")
	fs.StringVar(&mixS, "mix", "1:8:1", "relative weights create:update:delete of churn events")
	fs.IntVar(&c.workers, "workers", 4, "controller: reconcile workers taking keys from the work queue")
	fs.DurationVar(&c.reconcileWork, "reconcile-work", 20*time.Microsecond, "controller: CPU each reconcile burns in a deterministic loop, calibrated once to this duration on this machine (the same iteration count on both stacks)")
	fs.IntVar(&c.handlers, "handlers", 2, "informer scenario: event handlers registered on each informer")
	fs.DurationVar(&c.handlerWork, "handler-work", 0, "informer scenario: CPU per handler call (deterministic loop, calibrated like --reconcile-work), e.g. 20us")
	fs.IntVar(&c.handlerWorkers, "handler-workers", 1, "informer scenario, shardinformer only: handlers are registered with AddParallelEventHandler(h, n) when n > 1")
	fs.IntVar(&c.readers, "readers", 0, "informer scenario: goroutines per implementation reading the cache during churn (ByIndex(namespace) then GetByKey)")
	fs.IntVar(&c.shards, "shards", 0, "shardinformer only: shard count; 0 = GOMAXPROCS")
	fs.IntVar(&c.ringSize, "ring-size", 4096, "shardinformer only: ring capacity per (shard, listener worker)")
	fs.StringVar(&policy, "policy", pipeline.Buffer.String(), "shardinformer only: full-ring policy: "+policyNames())
	fs.BoolVar(&c.diet, "diet", defaultDiet, "the wire decoder's memory diet (wire.WithDiet: drop managedFields, intern repeated strings, compact slices) for every implementation on the wire without +diet or +no-diet")
	fs.IntVar(&c.wireWorkers, "wire-workers", 0, "decoder goroutines per list or watch of the wire decoder; 0 = GOMAXPROCS")
	fs.StringVar(&c.contentType, "content-type", "protobuf", "wire format of the informers' clients: json or protobuf")
	fs.StringVar(&c.watchList, "watchlist", "default", "client-go WatchListClient feature gate: on, off or default (client-go's default, on in v0.37)")
	fs.BoolVar(&c.managedFields, "managed-fields", false, "give pods managedFields (adds 3-6 KB each)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "run against a real cluster: create pods in loadgen's own labelled namespaces (new ones for every run), churn through the API server, clean up on exit; empty = embedded simulated API server on 127.0.0.1")
	fs.BoolVar(&c.reusePods, "reuse-pods", false, "with --kubeconfig: keep the pods for later trials and invocations instead of creating new namespaces every trial: namespaces loadgen-keep-<pods>-<namespaces>-<seed>-NNN, created (with what an interrupted populate missed) on first use and never deleted (kubectl delete ns -l "+target.LabelRun+"=keep-<pods>-<namespaces>-<seed>); needs --scenario informer and no churn")
	fs.StringVar(&serverPIDs, "server-pids", "", "comma-separated process ids of a local API server (and etcd): the report gives their CPU from the clients' start until every client was ready (Linux /proc)")
	fs.StringVar(&c.outDir, "out-dir", "loadgen-results", "each invocation writes report.json, report.html and profiles into a new directory DIR/<time>-<scenario>; empty = none")
	fs.StringVar(&c.out, "out", "", "also write the JSON report to this file")
	fs.StringVar(&c.html, "html", "", "also write the HTML report to this file")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this loopback address, e.g. 127.0.0.1:9090, from the process running the informers; empty = off")
	fs.StringVar(&c.profile, "profile", "", "profile every implementation process with github.com/pkg/profile: "+strings.Join(profileModes, ", ")+"; files go to <run directory>/profiles/<size>-run<N>-<impl>/, goroutines labelled impl=<name>")
	fs.Int64Var(&c.seed, "seed", 1, "random seed for pods and churn")
	fs.DurationVar(&c.quiesce, "quiesce-timeout", 2*time.Minute, "how long to wait after churn for every informer, handler and reconciler to reach the server's state")
	fs.DurationVar(&c.progress, "progress", 2*time.Second, "progress line interval; 0 = no progress line")
	fs.IntVar(&c.churnWorkers, "churn-workers", 0, "concurrent churn writers; 0 = 1 against the simulator, 16 against a cluster")
	soakFlags(fs, &c.soak)
	fs.StringVar(&faultSpec, "faults", "", "put a seeded fault-injecting proxy (package faults) between the implementations' clients and the server, injecting into their list and watch requests of the resource (discovery and writes pass untouched) until the churn ends; the report gives the faults by kind, each implementation's relists and watch restarts and its time to converge after the faults stopped; not with --scenario replicas. The spec: "+faults.SpecHelp)
	fs.StringVar(&childMem, "child-mem-limit", defaultChildMemLimitFlag(), "the most resident memory an implementation's child process may take, in binary units (20GiB, 512MiB) or 0 for no limit; the default is this machine's memory less 4 GiB for this process (the simulated server: ≈2.7 GiB at its peak at 1M pods) and the system. The parent samples each child's RSS every 50ms and kills it above the limit; that trial, like a child the kernel killed (the OOM killer's SIGKILL) or whose Go runtime ran out of memory, is reported as \"did not fit in N GiB\" for that implementation and size, the run goes on with the next trial, and that implementation is not run again at that size or above. The child's Go soft memory limit (GOMEMLIMIT, unless set) is 90% of it, so that the GC works harder before the limit instead of a child being killed for uncollected garbage. Not with --side-by-side or --scenario replicas")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.path != pathTyped && !flagSet(fs, "scenario") {
		c.scenario = report.ScenarioInformer // the one scenario of the other paths
	}
	var errs []error
	var err error
	if c.impls, c.variants, err = parseImpls(impl, c.scenario, c.diet); err != nil {
		errs = append(errs, err)
	}
	if c.mix, err = parseMix(mixS); err != nil {
		errs = append(errs, err)
	}
	if c.policy, err = pipeline.ParseFullRingPolicy(policy); err != nil {
		errs = append(errs, fmt.Errorf("--policy: %w", err))
	}
	if c.scalePods, err = parseSizes(scalePods); err != nil {
		errs = append(errs, err)
	}
	if c.replicaCounts, err = parseReplicaCounts(replicaCounts); err != nil {
		errs = append(errs, err)
	}
	if c.scenario == report.ScenarioReplicas && !flagSet(fs, "pods") {
		c.pods = defaultReplicaPods
	}
	if c.serverPIDs, err = parsePIDs(serverPIDs); err != nil {
		errs = append(errs, err)
	}
	if faultSpec != "" && faultSpec != "none" { // none: the soak scenario's way to say no faults (soak.go)
		fc, err := faults.ParseSpec(faultSpec)
		if err != nil {
			errs = append(errs, fmt.Errorf("--faults %q: %w", faultSpec, err))
		} else {
			c.faults = &fc
		}
		if c.scenario == report.ScenarioReplicas {
			errs = append(errs, errors.New("--faults: not with --scenario replicas (its replicas reach the simulator directly)"))
		}
	}
	if c.childMemLimit, err = parseMemLimit(childMem); err != nil {
		errs = append(errs, err)
	} else if flagSet(fs, "child-mem-limit") && c.childMemLimit > 0 && (c.sideBySide || c.scenario == report.ScenarioReplicas) {
		errs = append(errs, errors.New("--child-mem-limit: applies to each implementation alone in its child process, not with --side-by-side or --scenario replicas"))
	}
	errs = append(errs, c.applySoak(fs)...)
	errs = append(errs, c.validate()...)
	errs = append(errs, c.validateReuse()...)
	errs = append(errs, c.applyPath(flagSet(fs, "content-type"))...)
	if c.churnEvents == 0 && c.churnRate > 0 && c.churnDuration > 0 && c.scenario != report.ScenarioSoak { // a soak lasts --soak
		// Every trial writes the same sequence of events: a duration bound
		// would end wherever the writer got to.
		c.churnEvents, c.churnDuration = int(c.churnRate*c.churnDuration.Seconds()), 0
	}
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
	nonNeg("wire-workers", int64(c.wireWorkers))
	atLeast1 := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("--%s %d: need at least 1", name, v))
		}
	}
	atLeast1("namespaces", c.namespaces)
	atLeast1("workers", c.workers)
	atLeast1("handler-workers", c.handlerWorkers)
	atLeast1("ring-size", c.ringSize)
	atLeast1("runs", c.runs)
	switch c.scenario {
	case report.ScenarioController, report.ScenarioInformer, report.ScenarioScale, report.ScenarioSoak:
	case report.ScenarioReplicas:
		errs = append(errs, c.validateReplicas()...)
	default:
		errs = append(errs, fmt.Errorf("--scenario %q: want controller, informer, scale, replicas or soak", c.scenario))
	}
	if c.churnRate < 0 {
		errs = append(errs, fmt.Errorf("--churn-rate %v: must not be negative (0 = as fast as possible)", c.churnRate))
	}
	if c.churnDuration < 0 || c.handlerWork < 0 || c.reconcileWork < 0 || c.quiesce < 0 || c.progress < 0 {
		errs = append(errs, fmt.Errorf("durations must not be negative (--churn-duration %v, --handler-work %v, --reconcile-work %v, --quiesce-timeout %v, --progress %v)",
			c.churnDuration, c.handlerWork, c.reconcileWork, c.quiesce, c.progress))
	}
	if c.mix.Create+c.mix.Update+c.mix.Delete > 0 && c.mix.Create == 0 && c.mix.Update == 0 && c.pods == 0 {
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
	if c.profile != "" && !slices.Contains(profileModes, c.profile) {
		errs = append(errs, fmt.Errorf("--profile %q: want one of %s", c.profile, strings.Join(profileModes, ", ")))
	}
	if c.profile != "" && c.outDir == "" {
		errs = append(errs, errors.New("--profile needs --out-dir (profiles go into the run's directory)"))
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
	for _, f := range []struct{ name, path string }{{"out", c.out}, {"html", c.html}} {
		if err := checkReportPath(f.path); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", f.name, err))
		}
	}
	return errs
}

// checkReportPath reports, before a run of minutes, what would make writing
// a report to path fail after it: a directory there, or no directory to
// put it in. Empty means no report.
func checkReportPath(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory; give a file name (--out-dir takes a directory)", path)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(path))
	}
	return nil
}

// sizes returns the object counts this run sweeps: one, or the scale list.
func (c *config) sizes() []int {
	if c.scenario == report.ScenarioScale {
		return c.scalePods
	}
	return []int{c.pods}
}

// controller reports whether the scenario runs the controller stack: the
// scale scenario sweeps the controller scenario on the typed path and the
// informer scenario, their one scenario, on the others.
func (c *config) controller() bool {
	return report.SweptScenario(c.scenario, c.path) != report.ScenarioInformer
}

// policyNames lists the full-ring policies for --policy's help.
func policyNames() string {
	var names []string
	for _, p := range pipeline.FullRingPolicies() {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// validateReuse checks that --reuse-pods is asked for where it keeps every
// trial's objects identical (target.Config.ReusePods).
func (c *config) validateReuse() []error {
	if !c.reusePods {
		return nil
	}
	var errs []error
	if c.kubeconfig == "" {
		errs = append(errs, errors.New("--reuse-pods needs --kubeconfig (the simulator is populated in memory)"))
	}
	if c.scenario != report.ScenarioInformer {
		errs = append(errs, fmt.Errorf("--reuse-pods needs --scenario informer (the %s scenario writes to the pods)", c.scenario))
	}
	if c.churnEvents > 0 || c.churnDuration > 0 {
		errs = append(errs, errors.New("--reuse-pods needs no churn (--churn-duration 0 --churn-events 0): churn changes the kept pods"))
	}
	return errs
}

// targetKind is the kind of target c runs on: a cluster with --kubeconfig,
// else the simulator.
func (c config) targetKind() string {
	if c.kubeconfig != "" {
		return target.KindCluster
	}
	return target.KindSim
}

// targetConfig is what the target and its churn read of c: the one place
// that turns the flags into a target.Config.
func targetConfig(c config) target.Config {
	return target.Config{Resource: resourceOn(c.path, c.targetKind()), Namespaces: c.namespaces, Seed: c.seed,
		ManagedFields: c.managedFields, Kubeconfig: c.kubeconfig, ReusePods: c.reusePods,
		ChurnWorkers: c.churnWorkers, ChurnRate: c.churnRate, ChurnDuration: c.churnDuration, ChurnEvents: c.churnEvents,
		Mix: c.mix, SteadyPods: c.steadyPods}
}

// reportSettings is what the report says of c: the workload's settings and
// each stack under test with its settings (md: the machine's GOMAXPROCS,
// the default of the shards and the wire's workers). The one place that
// turns the flags into the report's plain values.
func reportSettings(c config, md report.Metadata) (report.Settings, []report.ImplInfo) {
	set := report.Settings{Path: c.path, Resource: resourceOn(c.path, c.targetKind()), Impls: c.impls, Mode: report.ModeProcess, Runs: c.runs, Sizes: c.sizes(), Namespaces: c.namespaces,
		ChurnRate: c.churnRate, ChurnDuration: c.churnDuration.Seconds(), ChurnEvents: c.churnEvents, ChurnWorkers: c.churnWorkers,
		Mix: c.mix.String(), ContentType: c.contentType, WatchList: c.watchList, ManagedFields: c.managedFields,
		Target: "apisim", Seed: c.seed, QuiesceTimeout: c.quiesce.Seconds(), Profile: c.profile}
	if !c.sideBySide && c.scenario != report.ScenarioReplicas {
		set.ChildMemLimit = c.childMemLimit
	}
	if c.faults != nil {
		set.Faults = c.faults.String()
	}
	if c.sideBySide {
		set.Mode = report.ModeSideBySide
	}
	if c.kubeconfig != "" {
		set.Target = "cluster"
	}
	if c.controller() {
		set.Workers, set.ReconcileWork = c.workers, c.reconcileWork.Seconds()
		set.StatusWrites = c.kubeconfig != ""
	} else {
		set.Handlers, set.HandlerWork, set.HandlerWorkers = c.handlers, c.handlerWork.Seconds(), c.handlerWorkers
		set.Readers = c.readers
	}
	var impls []report.ImplInfo
	for _, impl := range c.impls {
		v := c.variants[impl]
		info := report.ImplInfo{Name: impl, Decoder: v.decoder, Diet: v.dietName(), Options: map[string]string{
			"resync": "0", "indexers": indexerNames(c), "content_type": c.contentType, "watchlist": c.watchList}}
		if c.controller() {
			info.Options["workers"] = fmt.Sprint(c.workers)
			info.Options["rate_limiter"] = "DefaultTypedControllerRateLimiter (5ms..1000s per item, 10 qps burst 100)"
			info.Queue = queueClientGo
			if v.core == report.ImplOurs {
				info.Queue = queueOurs
			}
		}
		info.Informer = describeImpl(c.path, v.core, v.decoder, set.Resource)
		if v.decoder == decoderWire {
			workers := "GOMAXPROCS (" + fmt.Sprint(md.GOMAXPROCS) + ")"
			if c.wireWorkers > 0 {
				workers = fmt.Sprint(c.wireWorkers)
			}
			info.Options["wire_workers"] = workers
			info.Options["wire_diet"] = "none"
			if v.diet {
				info.Options["wire_diet"] = "wire.WithDiet() (drop managedFields, intern strings, compact slices)"
			}
		}
		switch v.core {
		case report.ImplOurs:
			if c.scenario == report.ScenarioReplicas {
				info.Informer = "replicas/runner.Runner: one shardinformer pipeline.Informer per slot held"
			}
			shards := "GOMAXPROCS (" + fmt.Sprint(md.GOMAXPROCS) + ")"
			if c.shards > 0 {
				shards = fmt.Sprint(c.shards)
			}
			info.Options["shards"] = shards
			info.Options["ring_size"] = fmt.Sprint(c.ringSize)
			info.Options["full_ring_policy"] = c.policy.String()
			if !c.controller() {
				info.Options["handler_workers"] = fmt.Sprint(c.handlerWorkers)
			}
		case report.ImplClientGo:
			if c.scenario == report.ScenarioReplicas {
				info.Informer = "replicas/runner.Runner: one client-go cache.SharedIndexInformer per slot held"
			}
		}
		impls = append(impls, info)
	}
	return set, impls
}

func indexerNames(c config) string {
	if c.controller() {
		return "namespace, " + appIndex
	}
	return "namespace"
}
