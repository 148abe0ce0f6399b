package report

// The report's plain value types: its settings, figures and samples, as
// report.json holds them (cmd/loadgen/report.schema.json describes the
// layout). Durations are seconds, sizes bytes.

// Settings are the workload's and every stack's parameters.
type Settings struct {
	// Path is the user path both implementations were built through
	// (--path); Resource what they listed (pods, or the simulator's
	// pod-sized custom resource).
	Path                string   `json:"path"`
	Resource            string   `json:"resource"`
	Impls               []string `json:"impls"`
	Mode                string   `json:"mode"` // "process" (each alone) or "side-by-side"
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
	// ChildMemLimit is --child-mem-limit in bytes (cmd/loadgen/fit.go); absent = none.
	ChildMemLimit int64 `json:"child_memory_limit_bytes,omitempty"`
}

// ImplInfo describes one implementation's stack and its settings.
type ImplInfo struct {
	Name     string            `json:"name"`
	Informer string            `json:"informer"`
	Decoder  string            `json:"decoder"`
	Diet     string            `json:"diet,omitempty"` // the wire's: "none" or "full"
	Queue    string            `json:"queue,omitempty"`
	Options  map[string]string `json:"options"`
}

// Figure is one measured quantity across implementations at one size.
type Figure struct {
	Key    string          `json:"key"`
	Label  string          `json:"label"`
	Unit   string          `json:"unit"`   // "s", "bytes", "per_s", "count", "bytes_per_object"
	Better string          `json:"better"` // "lower" or "higher"
	Main   bool            `json:"main"`   // counts for the headline
	Pods   int             `json:"pods"`
	Values map[string]Stat `json:"values"` // implementation → its runs
	// Ratio is shardinformer/client-go of the medians; Verdict reads it
	// with the spread (see VerdictOf). Both absent unless both ran.
	Ratio   *float64 `json:"ratio,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	// VsClientGo compares every other implementation that ran with
	// client-go's stack (shardinformer's entry repeats Ratio and Verdict).
	VsClientGo map[string]Comparison `json:"vs_client_go,omitempty"`
	// DidNotFit: implementation → "did not fit in N GiB", for those with
	// no value at this size because they did not fit (cmd/loadgen/fit.go).
	DidNotFit map[string]string `json:"did_not_fit,omitempty"`
}

// Comparison is one implementation's figure against client-go's: the ratio
// of the medians and a verdict from the implementation's side (Compare).
type Comparison struct {
	Ratio   *float64 `json:"ratio,omitempty"` // absent when client-go's median is 0
	Verdict string   `json:"verdict"`
}

// DecompositionRow is one figure of the 2×2 of cores and decoders as
// ratios of medians: each cell against client-go's whole stack, and each
// part's effect on top of the other.
type DecompositionRow struct {
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

// ScalePoint is one size of a scale sweep.
type ScalePoint struct {
	Pods    int      `json:"pods"`
	Figures []Figure `json:"figures"`
	// DidNotFit: implementation → "did not fit in N GiB" at this size.
	DidNotFit map[string]string `json:"did_not_fit,omitempty"`
}

// ServerCost is what the simulated server and churn writer cost, summed
// over trials, so that it can be set against the clients'.
type ServerCost struct {
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

// TrialServer is what one trial's server and this process cost.
type TrialServer struct {
	PopulateSeconds  float64 `json:"populate_seconds"`
	PreencodeSeconds float64 `json:"preencode_seconds"`
	SetupCPUSeconds  float64 `json:"setup_cpu_seconds"`
	CPUSeconds       float64 `json:"cpu_seconds"` // this process, clients' start → check
	// APIServerSyncCPUSeconds is the CPU of the --server-pids processes
	// from the clients' start until every client was ready.
	APIServerSyncCPUSeconds float64 `json:"apiserver_sync_cpu_seconds,omitempty"`
}

// Churn is what a trial's churn writer did.
type Churn struct {
	Seconds float64 `json:"seconds"`
	Creates uint64  `json:"creates"`
	Updates uint64  `json:"updates"`
	Deletes uint64  `json:"deletes"`
	Emitted uint64  `json:"emitted"` // creates+updates+deletes
	Failed  uint64  `json:"failed"`  // writes that returned an error
	Rate    float64 `json:"rate"`    // emitted / seconds
}

// TimelinePoint is one sample of an implementation, in seconds since its
// trial started.
type TimelinePoint struct {
	T        float64 `json:"t"`
	Synced   int     `json:"synced"`
	Observed uint64  `json:"observed"`
	Done     uint64  `json:"done"` // reconciles or handler calls
	Heap     uint64  `json:"heap_bytes"`
	RSS      uint64  `json:"rss_bytes"`
	CPU      float64 `json:"cpu_seconds"`
	GC       uint64  `json:"gc_cycles"` // GC cycles completed since the process started
	// Latency recorded since the previous point (none: nothing recorded).
	LatencyCount uint64  `json:"latency_count,omitempty"`
	LatencyP50   float64 `json:"latency_p50,omitempty"`
	LatencyP99   float64 `json:"latency_p99,omitempty"`
}

// EmittedPoint is the churn writer's count at T seconds since the trial started.
type EmittedPoint struct {
	T       float64 `json:"t"`
	Emitted uint64  `json:"emitted"`
}

// Latency is a latency histogram's summary in seconds and its non-empty
// buckets.
type Latency struct {
	Count   uint64   `json:"count"`
	Mean    float64  `json:"mean"`
	P50     float64  `json:"p50"`
	P90     float64  `json:"p90"`
	P99     float64  `json:"p99"`
	P999    float64  `json:"p999"`
	Max     float64  `json:"max"`
	Buckets []Bucket `json:"buckets"` // non-empty histogram buckets
}

// Bucket is one histogram bucket: the count of values up to Le.
type Bucket struct {
	Le    float64 `json:"le"` // upper bound, seconds
	Count uint64  `json:"count"`
}
