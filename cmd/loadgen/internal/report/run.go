package report

// The report's values of a run's machine, its trials' checks, fault proxies
// and request counts, and the run-by-run comparison, as report.json holds
// them.

// Metadata says what ran where: enough to reproduce a report or to tell two
// apart.
type Metadata struct {
	CommandLine []string `json:"command_line"`
	Commit      string   `json:"commit"` // "" if unknown
	Dirty       bool     `json:"dirty"`  // uncommitted changes in the work tree
	GoVersion   string   `json:"go_version"`
	GOOS        string   `json:"goos"`
	GOARCH      string   `json:"goarch"`
	CPUModel    string   `json:"cpu_model"`
	NumCPU      int      `json:"num_cpu"`
	GOMAXPROCS  int      `json:"gomaxprocs"`
	MemoryBytes uint64   `json:"memory_bytes"` // the machine's
	// MemoryLimit is the Go soft memory limit in force in the parent
	// process: GOMEMLIMIT, or half the machine's memory (math.MaxInt64 =
	// none); a child's is its result's go_memory_limit_bytes (below
	// --child-mem-limit: cmd/loadgen/fit.go).
	MemoryLimit int64 `json:"memory_limit_bytes"`
	// BurnIterationsPerSecond calibrates --reconcile-work and --handler-work.
	BurnIterationsPerSecond float64  `json:"burn_iterations_per_second"`
	MainModule              Module   `json:"main_module"`
	Modules                 []Module `json:"modules"` // every dependency in the binary
}

// Module is a Go module in the binary.
type Module struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// RunComparison sets shardinformer against client-go run by run on the
// figures a user compares first: the initial sync and the scenario's latency
// quantiles. Medians can tie while single runs split, and a target stated as
// "at or below in k of n runs" is read off the runs, not the medians. The
// collections each process ran during the churn are shown beside them: on
// two cores one cycle decides a run's p90 and p99.
type RunComparison struct {
	Pods    int       `json:"pods"`
	Figures []string  `json:"figures"` // figure keys, the order of each run's values
	Labels  []string  `json:"labels"`  // their labels
	Runs    []RunPair `json:"runs"`
	// AtOrBelow counts the runs where shardinformer is at or below
	// client-go on every figure.
	AtOrBelow int `json:"at_or_below"`
}

// RunPair is one run of both implementations at the same size.
type RunPair struct {
	Run      int       `json:"run"`
	Ours     []float64 `json:"ours"`
	ClientGo []float64 `json:"client_go"`
	Text     []string  `json:"text"` // "ours / client-go" per figure, formatted in its unit
	// Churn GC cycles of each process (trials in a process of their own).
	OursChurnGC     uint64 `json:"ours_churn_gc_cycles"`
	ClientGoChurnGC uint64 `json:"client_go_churn_gc_cycles"`
	AtOrBelow       bool   `json:"at_or_below"`
}

// DidNotFit is one trial of an implementation that did not fit: its child
// exceeded --child-mem-limit, or the machine, or it was not run because it
// had not fit at a smaller size or in an earlier run.
type DidNotFit struct {
	Impl string `json:"impl"`
	Pods int    `json:"pods"`
	Run  int    `json:"run"`
	// Text is the report's words: "did not fit in 20 GiB".
	Text string `json:"text"`
	// LimitBytes: --child-mem-limit (0 = none); the machine's memory when
	// the kernel killed the child without it.
	LimitBytes int64 `json:"limit_bytes"`
	// PeakRSSBytes is the largest resident set the parent saw of the child.
	PeakRSSBytes uint64 `json:"peak_rss_bytes,omitempty"`
	// Reason says what happened: killed by loadgen above the limit, by
	// SIGKILL (the kernel's OOM killer or a cgroup limit), or the Go
	// runtime's out of memory; or why the trial was not run.
	Reason string `json:"reason"`
	// Phase is the trial's phase when the child ended (sync, churn,
	// catch-up, finish); empty when not run.
	Phase string `json:"phase,omitempty"`
	// Seconds since the child started (0 when not run).
	Seconds float64 `json:"seconds,omitempty"`
	// NotRun: the trial was skipped, as an earlier one of this
	// implementation (at a smaller size or in an earlier run) did not fit.
	NotRun bool `json:"not_run,omitempty"`
}

// TrialFaults is a trial's fault proxy: its spec and what it did.
type TrialFaults struct {
	Spec     string            `json:"spec"`
	Seed     int64             `json:"seed"`
	Requests uint64            `json:"requests"` // requests through the proxy
	Drawn    uint64            `json:"drawn"`    // draws that came up with a fault (at requests and in watch streams)
	Vetoed   uint64            `json:"vetoed"`   // draws a bound (max, every) refused
	Injected map[string]uint64 `json:"injected"` // faults that happened, by kind (cut, stall, 500, 429, 410)
	// StoppedAt: when the proxy stopped injecting (the churn's end), in
	// seconds since the trial started.
	StoppedAt float64 `json:"stopped_at"`
}

// ListWatchRequests counts an implementation's list and watch requests for
// its resource, at the HTTP level, so that client-go's informer and ours
// are counted alike: every LIST (first pages: a request without a continue
// token), WATCH and WatchList stream (a WATCH with sendInitialEvents=true).
// Relists are the full reads of the state after the first (LISTs and
// WatchList streams, minus one); watch restarts are the WATCH requests,
// WatchList streams included, after the first.
type ListWatchRequests struct {
	Lists         uint64 `json:"lists"`
	Watches       uint64 `json:"watches"`
	WatchLists    uint64 `json:"watch_lists"`
	Relists       uint64 `json:"relists"`
	WatchRestarts uint64 `json:"watch_restarts"`
}

// Check compares an informer's cache and its handlers' views with the
// server's final state.
type Check struct {
	Pass              bool     `json:"pass"`
	ServerObjects     int      `json:"server_objects"`
	CacheObjects      int      `json:"cache_objects"`
	CacheMismatches   int      `json:"cache_mismatches"`   // keys missing, extra or at another resourceVersion
	HandlerMismatches int      `json:"handler_mismatches"` // the same, summed over handlers or the reconciler's last reconciled versions
	Details           []string `json:"details,omitempty"`  // the first few mismatches
}
