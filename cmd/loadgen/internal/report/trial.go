package report

import "time"

// The report's trials: one trial's figures per implementation, its samples
// and its soak, as report.json holds them. Durations are seconds, sizes
// bytes.

// ImplResult is one implementation's figures from one trial. Durations are
// seconds, sizes bytes.
type ImplResult struct {
	Impl    string `json:"impl"`
	Decoder string `json:"decoder"`         // decoder of its ListerWatcher: "client-go" or "wire"
	Diet    string `json:"diet,omitempty"`  // the wire's diet: "none" or "full"; "" with client-go's decoder
	Queue   string `json:"queue,omitempty"` // controller: its work queue
	// ListWatch says what listed and watched: ours' Stats().ListerWatcher
	// (package wire's description, or a factory's fallback), or the path's
	// description of client-go's.
	ListWatch string `json:"list_watch,omitempty"`
	Objects   int    `json:"objects"` // cached at the end
	// Sync: from the informer's start until it and its handlers reported
	// HasSynced; ready: until every initial object was handled (controller:
	// reconciled once). SyncedAt and ReadyAt are the same instants in
	// seconds since the trial started.
	InitialSyncSeconds      float64 `json:"initial_sync_seconds"`
	ReadySeconds            float64 `json:"ready_seconds"`
	InitialObjectsPerSecond float64 `json:"initial_objects_per_second"` // initial objects / ready_seconds
	SyncedAt                float64 `json:"synced_at"`
	ReadyAt                 float64 `json:"ready_at"`
	// Churn. EventsObserved is the fewest churn events any handler saw
	// (controller: notifications of churn changes).
	EventsObserved          uint64   `json:"events_observed"`
	EventsObservedByHandler []uint64 `json:"events_observed_by_handler"`
	// Informer scenario: handler calls after the initial list, and rates over
	// churn start → last delivery.
	Deliveries          uint64  `json:"deliveries"`
	EventsPerSecond     float64 `json:"events_per_second"`
	DeliveriesPerSecond float64 `json:"deliveries_per_second"`
	// Controller: every reconcile; those that took a churn change (several
	// changes of one key waiting in the queue make one); their rate over
	// churn start → the last of them; status patches (real cluster).
	Reconciles          uint64  `json:"reconciles"`
	ChurnReconciles     uint64  `json:"churn_reconciles"`
	ReconcilesPerSecond float64 `json:"reconciles_per_second"`
	StatusPatches       uint64  `json:"status_patches"`
	StatusPatchErrors   uint64  `json:"status_patch_errors"`
	// CatchUpSeconds: churn end → the last churn change handled.
	CatchUpSeconds float64 `json:"catch_up_seconds"`
	// Latency: controller: a change's emission → the start of the reconcile
	// that took it (the oldest waiting change of the key); informer: emission
	// → handler call. Freshness (controller): emission → the handler was
	// notified, when the cache already holds the change.
	Latency   Latency  `json:"latency"`
	Freshness *Latency `json:"freshness,omitempty"`
	Reads     uint64   `json:"reads"`
	ReadsPerS float64  `json:"reads_per_second"`
	// CPU from the informer's start until it had caught up, the final
	// check's own reading of the cache excluded (SyncCPU: to ready); see
	// CPUScope.
	CPUSeconds     float64 `json:"cpu_seconds"`
	SyncCPUSeconds float64 `json:"sync_cpu_seconds"`
	// ChurnCPUSeconds is the CPU from ready until caught up with the churn
	// (the same end as CPUSeconds'); per event, divided by ChurnEvents, the
	// events the churn wrote. Own process only, else 0.
	ChurnCPUSeconds         float64 `json:"churn_cpu_seconds,omitempty"`
	ChurnEvents             uint64  `json:"churn_events,omitempty"`
	ChurnCPUSecondsPerEvent float64 `json:"churn_cpu_seconds_per_event,omitempty"`
	// Parts of SyncCPUSeconds (own process only, else 0): the Go runtime's
	// GC CPU estimate (/cpu/classes/gc/total: it counts the time GC workers
	// hold a P, so it overstates GC on a contended machine), the kernel's
	// share (page faults of a growing heap among it) and the page faults.
	SyncGCCPUSeconds  float64 `json:"sync_gc_cpu_seconds,omitempty"`
	SyncSysCPUSeconds float64 `json:"sync_sys_cpu_seconds,omitempty"`
	SyncPageFaults    int64   `json:"sync_page_faults,omitempty"`
	// SyncGCCPUSeconds is the runtime's GC estimate, which is P-time and
	// can exceed the CPU on a loaded machine, clamped to SyncCPUSeconds
	// (selfstat.CPUSplit.GCCPU); SyncGCEstimateSeconds is the estimate unclamped.
	SyncGCEstimateSeconds float64 `json:"sync_gc_cpu_estimate_seconds,omitempty"`
	// ChurnGCCPUSeconds is the GC's CPU, likewise, from ready until caught
	// up (ChurnCPUSeconds' span): the work of the GC cycles that ended in
	// it (0 if none did); per event, over ChurnEvents.
	ChurnGCCPUSeconds         float64 `json:"churn_gc_cpu_seconds,omitempty"`
	ChurnGCCPUSecondsPerEvent float64 `json:"churn_gc_cpu_seconds_per_event,omitempty"`
	CPUScope                  string  `json:"cpu_scope"`
	// GoMemLimitBytes is the Go soft memory limit in force in its process
	// (below --child-mem-limit in a child of its own: cmd/loadgen/fit.go).
	GoMemLimitBytes int64 `json:"go_memory_limit_bytes,omitempty"`
	// HandlerWorkCPUSecondsPerCall (informer scenario, --handler-work) is
	// the CPU one handler call's work loop took, measured around the loop
	// by its thread's CPU clock in this process: the parent calibrates the
	// loop, and a loaded machine makes the same iterations cost more or
	// less than the duration asked for.
	HandlerWorkCPUSecondsPerCall float64 `json:"handler_work_cpu_seconds_per_call,omitempty"`
	// Process peaks and GC over the same span: the implementation's own in
	// its process, shared side by side.
	PeakHeapBytes  uint64  `json:"peak_heap_bytes"`
	PeakRSSBytes   uint64  `json:"peak_rss_bytes"`
	GCCount        uint32  `json:"gc_count"`
	GCPauseSeconds float64 `json:"gc_pause_seconds"`
	// GC cycles that ended between the churn's start and the catch-up: a
	// cycle's marking takes CPU from delivery, so runs with one and runs
	// without differ in latency.
	ChurnGCCycles uint64 `json:"churn_gc_cycles"`
	// Heap allocated between the churn's start and the catch-up, before the
	// check that passed (bytes and objects, from runtime/metrics), and at
	// the churn's start the heap the last cycle marked live, the next
	// cycle's goal and the heap then: goal minus heap is how much the churn
	// may allocate before a cycle starts (own process only, else 0).
	ChurnAllocBytes   uint64 `json:"churn_alloc_bytes,omitempty"`
	ChurnAllocObjects uint64 `json:"churn_alloc_objects,omitempty"`
	ChurnStartLive    uint64 `json:"churn_start_live_bytes,omitempty"`
	ChurnStartGoal    uint64 `json:"churn_start_goal_bytes,omitempty"`
	ChurnStartHeap    uint64 `json:"churn_start_heap_bytes,omitempty"`
	// Retained heap: live heap before minus after stopping and dropping the
	// informer (and queue); loadgen's own per-key bookkeeping is released
	// first and reported apart.
	RetainedHeapBytes  uint64  `json:"retained_heap_bytes"`
	HeapBytesPerObject float64 `json:"heap_bytes_per_object"`
	BookkeepingBytes   uint64  `json:"bookkeeping_bytes"`
	// Pipeline counters (shardinformer only, from its Observer).
	Overflow  *uint64 `json:"overflow,omitempty"`
	Coalesced *uint64 `json:"coalesced,omitempty"`
	Panics    *uint64 `json:"panics,omitempty"`
	Relists   *uint64 `json:"relists,omitempty"`
	Dropped   *uint64 `json:"dropped,omitempty"`
	// Requests: its list and watch requests, relists and watch restarts
	// (cmd/loadgen/faults.go), both implementations alike.
	Requests *ListWatchRequests `json:"list_watch_requests,omitempty"`
	// ConvergeAfterFaults (--faults): from the proxy's stop at the churn's
	// end until the check found the cache and every handler's view equal
	// to the server; absent if it never did.
	ConvergeAfterFaults *float64        `json:"converge_after_faults_seconds,omitempty"`
	Check               Check           `json:"check"`
	ProfileDir          string          `json:"profile_dir,omitempty"`
	Timeline            []TimelinePoint `json:"timeline"`

	// Soak (soak scenario): the samples, fits and verdicts (AnalyseSoak).
	Soak *SoakResult `json:"soak,omitempty"`
}

// Trial is one trial: a fresh cluster, one implementation alone (or
// all side by side), sync, churn, catch-up, check.
type Trial struct {
	Pods       int                `json:"pods"`
	Run        int                `json:"run"`
	Impls      []string           `json:"impls"`
	Mode       string             `json:"mode"`
	Target     string             `json:"target"`
	StartedAt  time.Time          `json:"started_at"`
	ChurnStart float64            `json:"churn_start"` // seconds since StartedAt
	ChurnEnd   float64            `json:"churn_end"`
	Churn      Churn              `json:"churn"`
	Emitted    []EmittedPoint     `json:"emitted"`
	Server     TrialServer        `json:"server"`
	CPUByLabel map[string]float64 `json:"cpu_by_label,omitempty"` // this process's CPU by "impl/role" label
	// ServerObjects is the number of pods on the server after the churn.
	ServerObjects int    `json:"server_objects"`
	ProfileDir    string `json:"profile_dir,omitempty"`
	// Faults: the trial's fault proxy (--faults).
	Faults  *TrialFaults `json:"faults,omitempty"`
	Results []ImplResult `json:"results"`
}

// SoakPoint is one sample of an implementation's process: seconds since
// its trial started, and the value of each series (soakSeries).
type SoakPoint struct {
	At     int64              `json:"at"` // unix nanos
	T      float64            `json:"t"`
	Values map[string]float64 `json:"values"`
}

// SoakResult is an implementation's soak: its samples, a fit per series
// after the warm-up, and the verdicts.
type SoakResult struct {
	Pass bool `json:"pass"`
	// Failures says why not, one line each.
	Failures []string `json:"failures"`
	// From and To bound the fitted samples, in seconds since the trial
	// started (after the warm-up, until the churn ended).
	From float64 `json:"from"`
	To   float64 `json:"to"`
	// Disturbed: samples in that span left out of the fits because a
	// relist began since the previous sample (its relists count grew): while
	// an informer relists it holds the old state and the new list at once,
	// a transient of up to twice the cache, not growth. Their times.
	Disturbed []float64   `json:"disturbed"`
	Fits      []SoakFit   `json:"fits"`
	Samples   []SoakPoint `json:"samples"`
}

// SoakFit is the line y = intercept + slope·t fitted to one series over the
// fitted samples, with the slope in percent of the series' mean per hour
// and its 95% confidence interval: least squares and Student's t, or for
// the goroutines Theil–Sen and Sen's interval.
type SoakFit struct {
	Series    string  `json:"series"`
	Label     string  `json:"label"`
	Unit      string  `json:"unit"`
	Gate      bool    `json:"gate"` // the verdict depends on it
	N         int     `json:"n"`
	Mean      float64 `json:"mean"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	First     float64 `json:"first"` // first fitted sample
	Last      float64 `json:"last"`
	Slope     float64 `json:"slope_per_second"`
	Intercept float64 `json:"intercept"`
	R2        float64 `json:"r2"`
	// SlopePct: slope × 3600 / mean × 100 (0 for a series whose mean is
	// 0); CILo, CIHi: its 95% interval.
	SlopePct float64 `json:"slope_percent_per_hour"`
	CILo     float64 `json:"ci95_low_percent_per_hour"`
	CIHi     float64 `json:"ci95_high_percent_per_hour"`
	Flat     bool    `json:"flat"` // |SlopePct| ≤ the maximum
}

// Fit returns the fit of series key, if any.
func (s *SoakResult) Fit(key string) (SoakFit, bool) {
	for _, f := range s.Fits {
		if f.Series == key {
			return f, true
		}
	}
	return SoakFit{}, false
}
