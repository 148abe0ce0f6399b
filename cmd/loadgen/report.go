package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
)

// reportSchemaVersion is the version of report.json's layout; the layout is
// described by report.schema.json (embedded), and any change to it bumps
// this number.
// 5: --faults (settings.faults, trial faults, converge_after_faults_seconds)
// and every result's list_watch_requests; fields of 4 are unchanged.
const reportSchemaVersion = 5

// Trial modes.
const (
	modeProcess    = "process"      // one implementation alone in a child process
	modeSideBySide = "side-by-side" // every implementation in this process on one stream
)

// report is the machine-readable result (report.json); the HTML report is
// rendered from it. Durations are seconds (float), sizes bytes.
type report struct {
	SchemaVersion int       `json:"schema_version"`
	Scenario      string    `json:"scenario"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	Pass          bool      `json:"pass"` // every check of every trial passed
	// Headline says what won, by how much, at which size.
	Headline  string   `json:"headline"`
	Directory string   `json:"directory,omitempty"` // where this run's files are
	Metadata  metadata `json:"metadata"`
	Settings  settings `json:"settings"`
	// Implementations describes each stack: informer, decoder, queue and
	// their settings.
	Implementations []implInfo `json:"implementations"`
	// Figures compare the implementations at the largest size; Scale has
	// the same for every size of a scale sweep.
	Figures []figure     `json:"figures"`
	Scale   []scalePoint `json:"scale,omitempty"`
	// Decomposition splits the figures of a run of the whole 2×2 of cores
	// and decoders (--impl all) into the core's and the decoder's shares.
	Decomposition []decompositionRow `json:"decomposition,omitempty"`
	// Runs compares shardinformer with client-go run by run at the largest
	// size (runs.go).
	Runs   *runComparison `json:"runs,omitempty"`
	Server serverCost     `json:"server"`
	Charts []plot.Chart   `json:"charts"`
	Trials []trialReport  `json:"trials"`
	// Replicas is the replicas scenario's section (its only results).
	Replicas *replicasReport `json:"replicas,omitempty"`
	// Soak is the soak scenario's section: its verdicts (soak.go).
	Soak *soakReport `json:"soak,omitempty"`
	// DidNotFit lists the trials whose implementation did not fit
	// (--child-mem-limit or the machine; fit.go), and those not run
	// because it had not fit before; they have no entry in Trials.
	DidNotFit []didNotFit `json:"did_not_fit,omitempty"`
}

// settings are the workload's and every stack's parameters.
type settings struct {
	// Path is the user path both implementations were built through
	// (--path); Resource what they listed (pods, or the simulator's
	// pod-sized custom resource).
	Path                string   `json:"path"`
	Resource            string   `json:"resource"`
	Impls               []string `json:"impls"`
	Mode                string   `json:"mode"` // modeProcess or modeSideBySide
	Runs                int      `json:"runs"`
	Sizes               []int    `json:"sizes"`
	Namespaces          int      `json:"namespaces"`
	ChurnRate           float64  `json:"churn_rate"` // events/s; 0 = as fast as possible
	ChurnDuration       float64  `json:"churn_duration_seconds"`
	ChurnEvents         int      `json:"churn_events"`
	ChurnWorkers        int      `json:"churn_workers"`
	Mix                 string   `json:"mix"` // create:update:delete
	Workers             int      `json:"workers"`
	ReconcileWork       float64  `json:"reconcile_work_seconds"`
	ReconcileIterations int64    `json:"reconcile_work_iterations"`
	StatusWrites        bool     `json:"status_writes"`
	Handlers            int      `json:"handlers"`
	HandlerWork         float64  `json:"handler_work_seconds"`
	HandlerIterations   int64    `json:"handler_work_iterations"`
	HandlerWorkers      int      `json:"handler_workers"`
	Readers             int      `json:"readers"`
	ContentType         string   `json:"content_type"`
	WatchList           string   `json:"watchlist"`
	ManagedFields       bool     `json:"managed_fields"`
	Target              string   `json:"target"` // "apisim" or "cluster"
	Seed                int64    `json:"seed"`
	QuiesceTimeout      float64  `json:"quiesce_timeout_seconds"`
	Profile             string   `json:"profile,omitempty"`
	Faults              string   `json:"faults,omitempty"` // --faults, as faults.Config.String renders it
	// ChildMemLimit is --child-mem-limit in bytes (fit.go); absent = none.
	ChildMemLimit int64 `json:"child_memory_limit_bytes,omitempty"`
}

// implInfo describes one implementation's stack and its settings.
type implInfo struct {
	Name     string            `json:"name"`
	Informer string            `json:"informer"`
	Decoder  string            `json:"decoder"`
	Diet     string            `json:"diet,omitempty"` // the wire's: dietNone or dietFull
	Queue    string            `json:"queue,omitempty"`
	Options  map[string]string `json:"options"`
}

// figure is one measured quantity across implementations at one size.
type figure struct {
	Key    string          `json:"key"`
	Label  string          `json:"label"`
	Unit   string          `json:"unit"`   // "s", "bytes", "per_s", "count", "bytes_per_object"
	Better string          `json:"better"` // "lower" or "higher"
	Main   bool            `json:"main"`   // counts for the headline
	Pods   int             `json:"pods"`
	Values map[string]stat `json:"values"` // implementation → its runs
	// Ratio is shardinformer/client-go of the medians; Verdict reads it
	// with the spread (see verdictOf). Both absent unless both ran.
	Ratio   *float64 `json:"ratio,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	// VsClientGo compares every other implementation that ran with
	// client-go's stack (shardinformer's entry repeats Ratio and Verdict).
	VsClientGo map[string]comparison `json:"vs_client_go,omitempty"`
	// DidNotFit: implementation → "did not fit in N GiB", for those with
	// no value at this size because they did not fit (fit.go).
	DidNotFit map[string]string `json:"did_not_fit,omitempty"`
}

// comparison is one implementation's figure against client-go's: the ratio
// of the medians and a verdict from the implementation's side (compare).
type comparison struct {
	Ratio   *float64 `json:"ratio,omitempty"` // absent when client-go's median is 0
	Verdict string   `json:"verdict"`
}

// decompositionRow is one figure of the 2×2 of cores and decoders as
// ratios of medians: each cell against client-go's whole stack, and each
// part's effect on top of the other.
type decompositionRow struct {
	Key    string `json:"key"`
	Label  string `json:"label"`
	Better string `json:"better"`
	// Core: shardinformer+client-go-decoder / client-go (our core alone).
	Core float64 `json:"core"`
	// Wire: client-go+wire / client-go (the wire alone).
	Wire float64 `json:"wire"`
	// Both: shardinformer / client-go.
	Both float64 `json:"both"`
	// WireOnOurs: shardinformer / shardinformer+client-go-decoder (the
	// wire's effect on our core); CoreOnWire: shardinformer / client-go+wire.
	WireOnOurs float64 `json:"wire_on_ours"`
	CoreOnWire float64 `json:"core_on_wire"`
}

// stat is the runs of one figure: median, min, max and every sample.
type stat struct {
	Text    string    `json:"text"` // median [min–max], formatted in the figure's unit
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

// scalePoint is one size of a scale sweep.
type scalePoint struct {
	Pods    int      `json:"pods"`
	Figures []figure `json:"figures"`
	// DidNotFit: implementation → "did not fit in N GiB" at this size.
	DidNotFit map[string]string `json:"did_not_fit,omitempty"`
}

// serverCost is what the simulated server and churn writer cost, summed
// over trials, so that it can be set against the clients'.
type serverCost struct {
	PopulateSeconds  float64 `json:"populate_seconds"`
	PreencodeSeconds float64 `json:"preencode_seconds"`
	SetupCPUSeconds  float64 `json:"setup_cpu_seconds"` // populate and pre-encode
	// CPUSeconds is the parent process's CPU while clients ran: the server
	// and churn writer alone when the clients are child processes.
	CPUSeconds float64 `json:"cpu_seconds"`
	// ServerCPUSeconds and ChurnCPUSeconds split it by goroutine label when
	// a CPU profile was available; the rest is the Go runtime (GC).
	ServerCPUSeconds float64 `json:"server_cpu_seconds"`
	ChurnCPUSeconds  float64 `json:"churn_cpu_seconds"`
}

// trialReport is one trial: a fresh cluster, one implementation alone (or
// all side by side), sync, churn, catch-up, check.
type trialReport struct {
	Pods       int                `json:"pods"`
	Run        int                `json:"run"`
	Impls      []string           `json:"impls"`
	Mode       string             `json:"mode"`
	Target     string             `json:"target"`
	StartedAt  time.Time          `json:"started_at"`
	ChurnStart float64            `json:"churn_start"` // seconds since StartedAt
	ChurnEnd   float64            `json:"churn_end"`
	Churn      churnReport        `json:"churn"`
	Emitted    []emittedPoint     `json:"emitted"`
	Server     trialServer        `json:"server"`
	CPUByLabel map[string]float64 `json:"cpu_by_label,omitempty"` // this process's CPU by "impl/role" label
	// ServerObjects is the number of pods on the server after the churn.
	ServerObjects int    `json:"server_objects"`
	ProfileDir    string `json:"profile_dir,omitempty"`
	// Faults: the trial's fault proxy (--faults).
	Faults  *trialFaults `json:"faults,omitempty"`
	Results []implResult `json:"results"`
}

type trialServer struct {
	PopulateSeconds  float64 `json:"populate_seconds"`
	PreencodeSeconds float64 `json:"preencode_seconds"`
	SetupCPUSeconds  float64 `json:"setup_cpu_seconds"`
	CPUSeconds       float64 `json:"cpu_seconds"` // this process, clients' start → check
	// APIServerSyncCPUSeconds is the CPU of the --server-pids processes
	// from the clients' start until every client was ready.
	APIServerSyncCPUSeconds float64 `json:"apiserver_sync_cpu_seconds,omitempty"`
}

type churnReport struct {
	Seconds float64 `json:"seconds"`
	Creates uint64  `json:"creates"`
	Updates uint64  `json:"updates"`
	Deletes uint64  `json:"deletes"`
	Emitted uint64  `json:"emitted"` // creates+updates+deletes
	Failed  uint64  `json:"failed"`  // writes that returned an error
	Rate    float64 `json:"rate"`    // emitted / seconds
}

func newReport(c config, md metadata) *report {
	r := &report{SchemaVersion: reportSchemaVersion, Scenario: c.scenario, StartedAt: time.Now(), Metadata: md,
		Figures: []figure{}, Charts: []plot.Chart{}, Trials: []trialReport{}}
	target := "apisim"
	if c.kubeconfig != "" {
		target = "cluster"
	}
	r.Settings = settings{Path: c.path, Resource: resourceOn(c.path, target), Impls: c.impls, Mode: modeProcess, Runs: c.runs, Sizes: c.sizes(), Namespaces: c.namespaces,
		ChurnRate: c.churnRate, ChurnDuration: c.churnDuration.Seconds(), ChurnEvents: c.churnEvents, ChurnWorkers: c.churnWorkers,
		Mix: c.mix.String(), ContentType: c.contentType, WatchList: c.watchList, ManagedFields: c.managedFields,
		Target: "apisim", Seed: c.seed, QuiesceTimeout: c.quiesce.Seconds(), Profile: c.profile}
	if !c.sideBySide && c.scenario != scenarioReplicas {
		r.Settings.ChildMemLimit = c.childMemLimit
	}
	if c.faults != nil {
		r.Settings.Faults = c.faults.String()
	}
	if c.sideBySide {
		r.Settings.Mode = modeSideBySide
	}
	if c.kubeconfig != "" {
		r.Settings.Target = "cluster"
	}
	if c.controller() {
		r.Settings.Workers, r.Settings.ReconcileWork = c.workers, c.reconcileWork.Seconds()
		r.Settings.StatusWrites = c.kubeconfig != ""
	} else {
		r.Settings.Handlers, r.Settings.HandlerWork, r.Settings.HandlerWorkers = c.handlers, c.handlerWork.Seconds(), c.handlerWorkers
		r.Settings.Readers = c.readers
	}
	for _, impl := range c.impls {
		v := c.variants[impl]
		info := implInfo{Name: impl, Decoder: v.decoder, Diet: v.dietName(), Options: map[string]string{
			"resync": "0", "indexers": indexerNames(c), "content_type": c.contentType, "watchlist": c.watchList}}
		if c.controller() {
			info.Options["workers"] = fmt.Sprint(c.workers)
			info.Options["rate_limiter"] = "DefaultTypedControllerRateLimiter (5ms..1000s per item, 10 qps burst 100)"
			info.Queue = queueClientGo
			if v.core == implOurs {
				info.Queue = queueOurs
			}
		}
		info.Informer = describeImpl(c.path, v.core, v.decoder, r.Settings.Resource)
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
		case implOurs:
			if c.scenario == scenarioReplicas {
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
		case implClientGo:
			if c.scenario == scenarioReplicas {
				info.Informer = "replicas/runner.Runner: one client-go cache.SharedIndexInformer per slot held"
			}
		}
		r.Implementations = append(r.Implementations, info)
	}
	return r
}

// finish derives everything that summarizes the trials: pass, the stacks'
// decoders and queues, figures, scale points, server cost, charts and
// headline.
func (r *report) finish() {
	r.FinishedAt = time.Now()
	r.Pass = len(r.Trials) > 0
	for _, t := range r.Trials {
		r.Server.PopulateSeconds += t.Server.PopulateSeconds
		r.Server.PreencodeSeconds += t.Server.PreencodeSeconds
		r.Server.SetupCPUSeconds += t.Server.SetupCPUSeconds
		if t.Mode == modeProcess {
			r.Server.CPUSeconds += t.Server.CPUSeconds
		}
		r.Server.ServerCPUSeconds += t.CPUByLabel["server"]
		r.Server.ChurnCPUSeconds += t.CPUByLabel["churn"]
		for _, res := range t.Results {
			r.Pass = r.Pass && res.Check.Pass
			for i := range r.Implementations {
				if im := &r.Implementations[i]; im.Name == res.Impl {
					im.Decoder, im.Diet, im.Queue = res.Decoder, res.Diet, res.Queue
					if res.ListWatch != "" {
						im.Options["list_watch"] = res.ListWatch
					}
				}
			}
		}
	}
	sizes := r.Settings.Sizes
	for _, pods := range sizes {
		figs := r.figuresAt(pods)
		if r.Scenario == scenarioScale {
			r.Scale = append(r.Scale, scalePoint{Pods: pods, Figures: figs, DidNotFit: r.unfitAt(pods)})
		}
		// The largest size; a sweep's largest size with a result (beyond
		// it every implementation did not fit).
		if pods == sizes[len(sizes)-1] && r.Scenario != scenarioScale || r.Scenario == scenarioScale && len(figs) > 0 {
			r.Figures = figs
		}
	}
	r.Decomposition = r.decompose()
	r.Runs = r.compareRuns(sizes[len(sizes)-1])
	r.Charts = r.charts()
	r.Headline = r.headline()
	if len(r.DidNotFit) > 0 && r.Scenario != scenarioScale && len(r.Figures) > 0 { // a sweep's says it itself
		r.Headline += " Did not fit: " + unfitWords(r) + "."
	}
	if rr := r.Replicas; rr != nil {
		r.Pass = rr.Pass
		for _, t := range rr.Trials {
			r.Server.PopulateSeconds += t.Server.PopulateSeconds
			r.Server.PreencodeSeconds += t.Server.PreencodeSeconds
			r.Server.SetupCPUSeconds += t.Server.SetupCPUSeconds
			r.Server.CPUSeconds += t.ParentCPUSeconds
		}
		r.Charts = append(r.Charts, rr.charts()...)
		r.Headline = rr.headline(r.Settings.Sizes[0])
	}
}

// decompose returns the 2×2 decomposition of the figures, or nil unless
// every cell of it ran.
func (r *report) decompose() []decompositionRow {
	if !hasDecomposition(r.Settings.Impls) {
		return nil
	}
	var rows []decompositionRow
	for _, f := range r.Figures {
		m := map[string]float64{}
		for _, n := range decomposition {
			if s, ok := f.Values[n]; ok && s.Median > 0 {
				m[n] = s.Median
			}
		}
		if len(m) < len(decomposition) {
			continue
		}
		cg := m[implClientGo]
		rows = append(rows, decompositionRow{Key: f.Key, Label: f.Label, Better: f.Better,
			Core: m[implOursClientGoDecode] / cg, Wire: m[implClientGoWire] / cg, Both: m[implOurs] / cg,
			WireOnOurs: m[implOurs] / m[implOursClientGoDecode], CoreOnWire: m[implOurs] / m[implClientGoWire]})
	}
	return rows
}

// figureDef defines a figure: how to read it from one result.
type figureDef struct {
	key, label, unit, better string
	main                     bool
	scenario                 string // "" = every scenario, else only this one
	get                      func(*implResult) (float64, bool)
}

func always(f func(*implResult) float64) func(*implResult) (float64, bool) {
	return func(r *implResult) (float64, bool) { return f(r), true }
}

var figureDefs = []figureDef{
	{"ready_seconds", "time to sync and reconcile every object", "s", "lower", true, scenarioController, always(func(r *implResult) float64 { return r.ReadySeconds })},
	{"initial_objects_per_second", "reconciles/s at saturation (initial backlog)", "per_s", "higher", false, scenarioController, always(func(r *implResult) float64 { return r.InitialObjectsPerSecond })},
	{"initial_sync_seconds", "initial sync (informer synced)", "s", "lower", true, "", always(func(r *implResult) float64 { return r.InitialSyncSeconds })},
	{"reconciles_per_second", "reconciles/s during churn", "per_s", "higher", false, scenarioController, always(func(r *implResult) float64 { return r.ReconcilesPerSecond })},
	{"events_per_second", "events/s (slowest handler)", "per_s", "higher", true, scenarioInformer, always(func(r *implResult) float64 { return r.EventsPerSecond })},
	{"deliveries_per_second", "deliveries/s (all handlers)", "per_s", "higher", false, scenarioInformer, always(func(r *implResult) float64 { return r.DeliveriesPerSecond })},
	{"latency_p50", "reconcile start latency p50", "s", "lower", false, scenarioController, always(func(r *implResult) float64 { return r.Latency.P50 })},
	{"latency_p90", "reconcile start latency p90", "s", "lower", false, scenarioController, always(func(r *implResult) float64 { return r.Latency.P90 })},
	{"latency_p99", "reconcile start latency p99", "s", "lower", true, scenarioController, always(func(r *implResult) float64 { return r.Latency.P99 })},
	{"delivery_p50", "delivery latency p50", "s", "lower", false, scenarioInformer, always(func(r *implResult) float64 { return r.Latency.P50 })},
	{"delivery_p90", "delivery latency p90", "s", "lower", false, scenarioInformer, always(func(r *implResult) float64 { return r.Latency.P90 })},
	{"delivery_p99", "delivery latency p99", "s", "lower", true, scenarioInformer, always(func(r *implResult) float64 { return r.Latency.P99 })},
	{"freshness_p50", "cache freshness p50 (change → in cache)", "s", "lower", false, scenarioController, freshness(func(l *latencyRep) float64 { return l.P50 })},
	{"freshness_p99", "cache freshness p99 (change → in cache)", "s", "lower", false, scenarioController, freshness(func(l *latencyRep) float64 { return l.P99 })},
	{"catch_up_seconds", "catch-up after churn", "s", "lower", false, "", always(func(r *implResult) float64 { return r.CatchUpSeconds })},
	{"reads_per_second", "cache reads/s (readers)", "per_s", "higher", false, scenarioInformer, func(r *implResult) (float64, bool) { return r.ReadsPerS, r.Reads > 0 }},
	{"cpu_seconds", "CPU seconds, start → caught up", "s", "lower", true, "", func(r *implResult) (float64, bool) { return r.CPUSeconds, r.CPUScope != cpuScopeShared }},
	{"sync_cpu_seconds", "CPU seconds to ready", "s", "lower", false, "", func(r *implResult) (float64, bool) { return r.SyncCPUSeconds, r.CPUScope == cpuScopeProcess }},
	{"churn_cpu_seconds_per_event", "client CPU per churn event (ready → caught up)", "s", "lower", false, "", func(r *implResult) (float64, bool) {
		return r.ChurnCPUSecondsPerEvent, r.CPUScope == cpuScopeProcess && r.ChurnEvents > 0
	}},
	{"sync_gc_cpu_seconds", "GC CPU seconds to ready (estimate)", "s", "lower", false, "", func(r *implResult) (float64, bool) { return r.SyncGCCPUSeconds, r.CPUScope == cpuScopeProcess }},
	{"churn_gc_cpu_seconds_per_event", "GC CPU per churn event (estimate, ready → caught up)", "s", "lower", false, "", func(r *implResult) (float64, bool) {
		return r.ChurnGCCPUSecondsPerEvent, r.CPUScope == cpuScopeProcess && r.ChurnEvents > 0
	}},
	{"sync_sys_cpu_seconds", "kernel CPU seconds to ready", "s", "lower", false, "", func(r *implResult) (float64, bool) { return r.SyncSysCPUSeconds, r.CPUScope == cpuScopeProcess }},
	{"sync_page_faults", "page faults to ready", "count", "lower", false, "", func(r *implResult) (float64, bool) { return float64(r.SyncPageFaults), r.CPUScope == cpuScopeProcess }},
	{"retained_heap_bytes", "retained heap (informer + queue)", "bytes", "lower", true, "", always(func(r *implResult) float64 { return float64(r.RetainedHeapBytes) })},
	{"heap_bytes_per_object", "retained heap per cached object", "bytes", "lower", false, "", always(func(r *implResult) float64 { return r.HeapBytesPerObject })},
	{"peak_rss_bytes", "peak RSS of its process", "bytes", "lower", false, "", func(r *implResult) (float64, bool) { return float64(r.PeakRSSBytes), r.CPUScope == cpuScopeProcess }},
	{"churn_gc_cycles", "GC cycles during churn and catch-up", "count", "lower", false, "", func(r *implResult) (float64, bool) { return float64(r.ChurnGCCycles), r.CPUScope == cpuScopeProcess }},
	{"churn_alloc_bytes", "heap allocated during churn and catch-up", "bytes", "lower", false, "", func(r *implResult) (float64, bool) { return float64(r.ChurnAllocBytes), r.CPUScope == cpuScopeProcess }},
	{"churn_alloc_objects", "heap objects allocated during churn and catch-up", "count", "lower", false, "", func(r *implResult) (float64, bool) {
		return float64(r.ChurnAllocObjects), r.CPUScope == cpuScopeProcess
	}},
	{"churn_gc_headroom_bytes", "GC goal minus heap at the churn's start", "bytes", "higher", false, "", func(r *implResult) (float64, bool) {
		return float64(r.ChurnStartGoal) - float64(r.ChurnStartHeap), r.CPUScope == cpuScopeProcess && r.ChurnStartGoal > 0
	}},
	{"gc_pause_seconds", "GC pause total of its process", "s", "lower", false, "", func(r *implResult) (float64, bool) { return r.GCPauseSeconds, r.CPUScope == cpuScopeProcess }},
}

func freshness(f func(*latencyRep) float64) func(*implResult) (float64, bool) {
	return func(r *implResult) (float64, bool) {
		if r.Freshness == nil {
			return 0, false
		}
		return f(r.Freshness), true
	}
}

func (d figureDef) applies(scenario string) bool {
	if scenario == scenarioScale || scenario == scenarioSoak {
		scenario = scenarioController
	}
	return d.scenario == "" || d.scenario == scenario
}

// results returns every result of impl at pods, in run order.
func (r *report) results(impl string, pods int) []*implResult {
	var out []*implResult
	for i := range r.Trials {
		t := &r.Trials[i]
		if t.Pods != pods {
			continue
		}
		for j := range t.Results {
			if t.Results[j].Impl == impl {
				out = append(out, &t.Results[j])
			}
		}
	}
	return out
}

// figuresAt computes every applicable figure at pods.
func (r *report) figuresAt(pods int) []figure {
	figs := []figure{}
	for _, d := range figureDefs {
		if !d.applies(sweptScenario(r.Scenario, r.Settings.Path)) {
			continue
		}
		f := figure{Key: d.key, Label: d.label, Unit: d.unit, Better: d.better, Main: d.main, Pods: pods, Values: map[string]stat{}}
		for _, impl := range r.Settings.Impls {
			var xs []float64
			for _, res := range r.results(impl, pods) {
				if v, ok := d.get(res); ok {
					xs = append(xs, v)
				}
			}
			if len(xs) > 0 {
				st := statOf(xs)
				st.Text = fmtStat(d.unit, st)
				f.Values[impl] = st
			}
		}
		if len(f.Values) == 0 {
			continue
		}
		for impl, text := range r.unfitAt(pods) {
			if _, ok := f.Values[impl]; !ok {
				if f.DidNotFit == nil {
					f.DidNotFit = map[string]string{}
				}
				f.DidNotFit[impl] = text
			}
		}
		if cg, ok := f.Values[implClientGo]; ok {
			for _, impl := range r.Settings.Impls {
				x, ok := f.Values[impl]
				if !ok || impl == implClientGo {
					continue
				}
				var cmp comparison
				if cg.Median != 0 {
					ratio := x.Median / cg.Median
					cmp.Ratio = &ratio
				}
				cmp.Verdict = comparisonWords[compare(d.better, x, cg)+2]
				if f.VsClientGo == nil {
					f.VsClientGo = map[string]comparison{}
				}
				f.VsClientGo[impl] = cmp
				if impl == implOurs {
					f.Ratio, f.Verdict = cmp.Ratio, verdictOf(d.better, x, cg)
				}
			}
		}
		figs = append(figs, f)
	}
	return figs
}

func statOf(xs []float64) stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{Median: m, Min: s[0], Max: s[len(s)-1], Samples: xs}
}

// Verdicts.
const (
	verdictOursBetter   = "shardinformer better"
	verdictOursLikely   = "shardinformer likely better"
	verdictTie          = "no clear difference"
	verdictTheirsLikely = "client-go likely better"
	verdictTheirsBetter = "client-go better"
)

// comparisonWords are compare's results, from -2 to 2, as the report
// spells them in vs_client_go.
var comparisonWords = [5]string{"worse", "likely worse", verdictTie, "likely better", "better"}

// verdictOf is compare of shardinformer's runs with client-go's, in words.
func verdictOf(better string, ours, theirs stat) string {
	return [5]string{verdictTheirsBetter, verdictTheirsLikely, verdictTie, verdictOursLikely, verdictOursBetter}[compare(better, ours, theirs)+2]
}

// compare compares x's runs with base's: 2 (better) when the medians
// differ by more than 5% and the min–max ranges do not overlap, 1 (likely
// better) when the medians differ by more than 10% but the ranges overlap
// (or there is one run each), 0 when there is no clear difference, and -1
// and -2 the same the other way round.
func compare(better string, x, base stat) int {
	ahead := x.Median < base.Median
	if better != "lower" {
		ahead = x.Median > base.Median
	}
	hi, lo := math.Max(x.Median, base.Median), math.Min(x.Median, base.Median)
	if hi == 0 {
		return 0
	}
	diff := (hi - lo) / hi
	separate := x.Max < base.Min || base.Max < x.Min
	n := 0
	switch {
	case diff > 0.05 && separate && len(x.Samples) > 1 && len(base.Samples) > 1:
		n = 2
	case diff > 0.10:
		n = 1
	}
	if !ahead {
		n = -n
	}
	return n
}

// factor describes a ratio in words: "2.1× lower" / "1.3× higher".
func factor(f figure) string {
	if f.Ratio == nil || *f.Ratio == 0 {
		return "n/a"
	}
	x := *f.Ratio
	word := "higher"
	if x < 1 {
		x, word = 1/x, "lower"
	}
	if f.Unit == "s" && f.Better == "lower" && word == "lower" {
		word = "less"
	}
	return fmt.Sprintf("%.2f× %s", x, word)
}

// headline says what won, by how much, at which size.
func (r *report) headline() string {
	how := fmt.Sprintf("%d run(s) each, %s", r.Settings.Runs, modeWords(r.Settings.Mode))
	if r.Scenario == scenarioScale && len(r.Scale) > 1 {
		return r.scaleHeadline(how)
	}
	if len(r.Figures) == 0 {
		if len(r.DidNotFit) > 0 {
			return "No results: " + unfitWords(r) + "."
		}
		return "no results"
	}
	pods := r.Figures[0].Pods
	noun := "pods"
	if r.Settings.Resource == resourceWidgets {
		noun = "pod-sized custom resources"
	}
	var ahead, behind, even []string
	for _, f := range r.Figures {
		if !f.Main || f.Verdict == "" {
			continue
		}
		desc := fmt.Sprintf("%s %s", f.Label, factor(f))
		switch f.Verdict {
		case verdictOursBetter, verdictOursLikely:
			ahead = append(ahead, desc)
		case verdictTheirsBetter, verdictTheirsLikely:
			behind = append(behind, desc)
		default:
			even = append(even, f.Label)
		}
	}
	if len(ahead)+len(behind)+len(even) == 0 {
		return fmt.Sprintf("%s alone at %s %s (%s).", strings.Join(r.Settings.Impls, ", "), fmtCount(pods), noun, how)
	}
	winner := "no clear difference"
	switch {
	case len(ahead) > len(behind):
		winner = "shardinformer ahead"
	case len(behind) > len(ahead):
		winner = "client-go ahead"
	case len(ahead) > 0:
		winner = "no overall winner"
	}
	if sure := func(v string) bool { return v == verdictOursBetter || v == verdictTheirsBetter }; winner != "no clear difference" &&
		!slices.ContainsFunc(r.Figures, func(f figure) bool { return f.Main && sure(f.Verdict) }) {
		winner += " (no verdict beyond \"likely\")"
	}
	s := fmt.Sprintf("%s at %s %s (%s, %s scenario%s): ", winner, fmtCount(pods), noun, how, r.Scenario, pathWords(r.Settings.Path))
	var parts []string
	if len(ahead) > 0 {
		parts = append(parts, "shardinformer ahead on "+strings.Join(ahead, ", "))
	}
	if len(behind) > 0 {
		parts = append(parts, "behind on "+strings.Join(behind, ", "))
	}
	if len(even) > 0 {
		parts = append(parts, "even on "+strings.Join(even, ", "))
	}
	s += strings.Join(parts, "; ") + "."
	var shares []string
	for _, d := range r.Decomposition {
		for _, f := range r.Figures {
			if f.Key == d.Key && f.Main {
				shares = append(shares, fmt.Sprintf("%s: core %s, wire %s, both %s", d.Label, fmtRatio(d.Core), fmtRatio(d.Wire), fmtRatio(d.Both)))
			}
		}
	}
	if len(shares) > 0 {
		s += " Ratios to client-go's stack of our core alone, the wire alone and both: " + strings.Join(shares, "; ") + "."
	}
	if c := r.Runs; c != nil && len(c.Runs) > 1 {
		s += fmt.Sprintf(" Run by run, shardinformer at or below client-go on the initial sync and the latency p50, p90 and p99 in %d of %d runs.",
			c.AtOrBelow, len(c.Runs))
	}
	return s
}

// scaleHeadline is a sweep's headline: how much each main figure of each
// implementation grew from the first size to the last it fitted at, and
// where it did not fit.
func (r *report) scaleHeadline(how string) string {
	first, last := r.Scale[0], r.Scale[len(r.Scale)-1]
	var parts []string
	for _, impl := range r.Settings.Impls {
		for _, g := range first.Figures {
			b, ok := g.Values[impl]
			if !g.Main || !ok || b.Median <= 0 {
				continue
			}
			for j := len(r.Scale) - 1; j > 0; j-- {
				p := r.Scale[j]
				i := slices.IndexFunc(p.Figures, func(f figure) bool { return f.Key == g.Key })
				if i < 0 {
					continue
				}
				if s, ok := p.Figures[i].Values[impl]; ok {
					at := ""
					if p.Pods != last.Pods {
						at = " (to " + fmtCount(p.Pods) + ")"
					}
					parts = append(parts, fmt.Sprintf("%s %s ×%.1f%s", impl, g.Label, s.Median/b.Median, at))
					break
				}
			}
		}
	}
	h := fmt.Sprintf("From %s to %s pods (×%.0f objects; %s)", fmtCount(first.Pods), fmtCount(last.Pods),
		float64(last.Pods)/float64(first.Pods), how)
	if len(parts) > 0 {
		h += ": " + strings.Join(parts, "; ")
	}
	h += "."
	if len(r.DidNotFit) > 0 {
		h += " Did not fit: " + unfitWords(r) + "."
	}
	return h
}

// pathWords names a path other than the typed one for the headline.
func pathWords(path string) string {
	if path == pathTyped || path == "" {
		return ""
	}
	return ", " + path + " path"
}

// objectsWord names what the informers cached, for the summary.
func objectsWord(resource string) string {
	if resource == resourceWidgets {
		return "pod-sized custom resources (" + resourceGVR(resource).GroupResource().String() + ")"
	}
	return "pods"
}

func indexerNames(c config) string {
	if c.controller() {
		return "namespace, " + appIndex
	}
	return "namespace"
}

func modeWords(mode string) string {
	if mode == modeSideBySide {
		return "side by side in one process"
	}
	return "each alone in its own process"
}

func fmtCount(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func writeJSON(path string, r *report) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func fmtDur(sec float64) string {
	d := time.Duration(sec * 1e9)
	switch {
	case d == 0:
		return "0"
	case d < 10*time.Microsecond: // CPU per event, say
		return fmt.Sprintf("%.1fµs", sec*1e6)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", sec*1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1fms", sec*1e3)
	default:
		return fmt.Sprintf("%.2fs", sec)
	}
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func fmtRate(r float64) string {
	if r >= 10000 {
		return fmt.Sprintf("%.1fk/s", r/1000)
	}
	return fmt.Sprintf("%.0f/s", r)
}

// fmtValue formats v in unit.
func fmtValue(unit string, v float64) string {
	switch unit {
	case "s":
		return fmtDur(v)
	case "bytes":
		return fmtBytes(v)
	case "per_s":
		return fmtRate(v)
	case "bytes_per_object":
		return fmt.Sprintf("%.0f B", v)
	case "ratio":
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtStat(unit string, s stat) string {
	if len(s.Samples) == 1 {
		return fmtValue(unit, s.Median)
	}
	return fmt.Sprintf("%s [%s–%s]", fmtValue(unit, s.Median), fmtValue(unit, s.Min), fmtValue(unit, s.Max))
}

// printSummary writes the human-readable summary.
func printSummary(w io.Writer, r *report) {
	s := r.Settings
	fmt.Fprintf(w, "\nloadgen %s scenario, %s path, on %s: %s %s in %d namespaces, %s, churn %s; %s\n",
		r.Scenario, s.Path, s.Target, joinSizes(s.Sizes), objectsWord(s.Resource), s.Namespaces, s.ContentType, churnDesc(s), modeWords(s.Mode))
	if s.Workers > 0 {
		fmt.Fprintf(w, "controller: %d workers, %s of CPU per reconcile (%d iterations), status writes %v\n",
			s.Workers, fmtDur(s.ReconcileWork), s.ReconcileIterations, s.StatusWrites)
	}
	for _, im := range r.Implementations {
		fmt.Fprintf(w, "%s: %s, decoder %s", im.Name, im.Informer, im.Decoder)
		if im.Diet != "" {
			fmt.Fprintf(w, " (diet %s, %s workers)", im.Diet, im.Options["wire_workers"])
		}
		if im.Queue != "" {
			fmt.Fprintf(w, ", queue %s", im.Queue)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s, %d cores, GOMAXPROCS %d, %s, commit %s\n\n", r.Metadata.CPUModel, r.Metadata.NumCPU,
		r.Metadata.GOMAXPROCS, r.Metadata.GoVersion, short(r.Metadata.Commit))
	fmt.Fprintln(w, r.Headline)
	fmt.Fprintln(w)
	switch {
	case r.Scenario == scenarioScale:
		printScale(w, r)
	case r.Replicas != nil:
		printReplicas(w, r)
	default:
		printFigures(w, r)
		printDecomposition(w, r)
		printRuns(w, r.Runs)
	}
	switch {
	case r.Server.CPUSeconds > 0 && s.Target == "cluster":
		fmt.Fprintf(w, "\nchurn writer (parent process, not in the figures): %.1f CPU s while clients ran; populate %.1f s\n",
			r.Server.CPUSeconds, r.Server.PopulateSeconds)
	case r.Server.CPUSeconds > 0:
		byLabel := "" // the replicas scenario does not profile the parent
		if r.Server.ServerCPUSeconds+r.Server.ChurnCPUSeconds > 0 {
			byLabel = fmt.Sprintf(" (server %.1f s, churn %.1f s by label)", r.Server.ServerCPUSeconds, r.Server.ChurnCPUSeconds)
		}
		fmt.Fprintf(w, "\nserver and churn writer (parent process, not in the figures): %.1f CPU s while clients ran%s; populate %.1f s, pre-encode %.1f s\n",
			r.Server.CPUSeconds, byLabel, r.Server.PopulateSeconds, r.Server.PreencodeSeconds)
	}
	for _, t := range r.Trials {
		if t.Server.APIServerSyncCPUSeconds > 0 {
			fmt.Fprintf(w, "API server (--server-pids) CPU during the sync of %s (%d pods, run %d): %.2f s\n",
				strings.Join(t.Impls, " + "), t.Pods, t.Run, t.Server.APIServerSyncCPUSeconds)
		}
	}
	for _, t := range r.Trials {
		for _, res := range t.Results {
			for _, d := range res.Check.Details {
				fmt.Fprintf(w, "  %s (%d pods, run %d): %s\n", res.Impl, t.Pods, t.Run, d)
			}
		}
	}
	printDidNotFit(w, r)
	for _, t := range r.Trials {
		for _, res := range t.Results {
			what := "handler(s)"
			if res.Queue != "" {
				what = "reconciler"
			}
			if res.Check.Pass {
				fmt.Fprintf(w, "PASS %s (%d pods, run %d): cache and %s match the server (%d keys and resourceVersions)\n",
					res.Impl, t.Pods, t.Run, what, res.Check.ServerObjects)
			} else {
				fmt.Fprintf(w, "FAIL %s (%d pods, run %d): %d cache and %d %s mismatches against the server's %d keys\n",
					res.Impl, t.Pods, t.Run, res.Check.CacheMismatches, res.Check.HandlerMismatches, what, res.Check.ServerObjects)
			}
		}
	}
}

func printFigures(w io.Writer, r *report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "figure"
	for _, impl := range r.Settings.Impls {
		head += "\t" + impl
	}
	// Ratio columns: shardinformer's with its verdict, then every other
	// implementation's, each against client-go's stack.
	var others []string
	both := slices.Contains(r.Settings.Impls, implOurs) && slices.Contains(r.Settings.Impls, implClientGo)
	if both {
		head += "\tours/client-go\tverdict"
	}
	if slices.Contains(r.Settings.Impls, implClientGo) {
		for _, impl := range r.Settings.Impls {
			if impl != implOurs && impl != implClientGo {
				others = append(others, impl)
				head += "\t" + impl + "/client-go"
			}
		}
	}
	fmt.Fprintln(tw, head)
	ratio := func(x *float64) string {
		if x == nil {
			return "-"
		}
		return fmtRatio(*x)
	}
	for _, f := range r.Figures {
		line := f.Label
		for _, impl := range r.Settings.Impls {
			line += "\t" + f.Values[impl].Text
		}
		if both {
			line += "\t" + ratio(f.Ratio) + "\t" + f.Verdict
		}
		for _, impl := range others {
			line += "\t" + ratio(f.VsClientGo[impl].Ratio)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// printDecomposition prints the 2×2 of cores and decoders, if it ran.
func printDecomposition(w io.Writer, r *report) {
	if len(r.Decomposition) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhere the difference comes from (ratios of medians; core = %s / %s, wire = %s / %s, both = %s / %s):\n",
		implOursClientGoDecode, implClientGo, implClientGoWire, implClientGo, implOurs, implClientGo)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tcore alone\twire alone\tboth\twire on our core\tour core on the wire")
	for _, d := range r.Decomposition {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Label, fmtRatio(d.Core), fmtRatio(d.Wire), fmtRatio(d.Both), fmtRatio(d.WireOnOurs), fmtRatio(d.CoreOnWire))
	}
	tw.Flush()
}

// printScale prints, per implementation, each figure at every size (or
// why it has none there: "did not fit in N GiB") and its growth from the
// first size to the last it has a value at.
func printScale(w io.Writer, r *report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, impl := range r.Settings.Impls {
		head := impl
		for _, p := range r.Scale {
			head += "\t" + fmtCount(p.Pods)
		}
		fmt.Fprintln(tw, head+"\tgrowth (last/first)")
		for _, key := range scaleKeys(r.Scale) {
			line := figureDefs[slices.IndexFunc(figureDefs, func(d figureDef) bool { return d.key == key })].label
			var first, last float64
			n := 0 // sizes with a value
			for _, p := range r.Scale {
				i := slices.IndexFunc(p.Figures, func(f figure) bool { return f.Key == key })
				var v stat
				ok := i >= 0
				if ok {
					v, ok = p.Figures[i].Values[impl]
				}
				switch {
				case ok:
					line += "\t" + v.Text
					if n == 0 {
						first = v.Median
					}
					last = v.Median
					n++
				case p.DidNotFit[impl] != "":
					line += "\t" + p.DidNotFit[impl]
				default:
					line += "\t-"
				}
			}
			if first > 0 && n > 1 {
				line += fmt.Sprintf("\t×%.1f", last/first)
			}
			fmt.Fprintln(tw, line)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// scaleKeys are the keys of the figures of any size of a sweep, in
// figureDefs' order.
func scaleKeys(points []scalePoint) []string {
	var keys []string
	for _, d := range figureDefs {
		if slices.ContainsFunc(points, func(p scalePoint) bool {
			return slices.ContainsFunc(p.Figures, func(f figure) bool { return f.Key == d.key })
		}) {
			keys = append(keys, d.key)
		}
	}
	return keys
}

// fmtRatio shows two decimals, or two significant digits below 0.1.
func fmtRatio(x float64) string {
	if x < 0.1 {
		return fmt.Sprintf("%.2g", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func joinSizes(sizes []int) string {
	var s []string
	for _, n := range sizes {
		s = append(s, fmtCount(n))
	}
	return strings.Join(s, ", ")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return "unknown"
	}
	return commit
}

func churnDesc(s settings) string {
	if s.ChurnDuration <= 0 && s.ChurnEvents <= 0 {
		return "none"
	}
	var parts []string
	if s.ChurnRate > 0 {
		parts = append(parts, fmt.Sprintf("%.0f/s", s.ChurnRate))
	} else {
		parts = append(parts, "as fast as possible")
	}
	if s.ChurnDuration > 0 {
		parts = append(parts, "for "+fmtDur(s.ChurnDuration))
	}
	if s.ChurnEvents > 0 {
		parts = append(parts, fmt.Sprintf("up to %d events", s.ChurnEvents))
	}
	return strings.Join(parts, " ") + " mix " + s.Mix
}
