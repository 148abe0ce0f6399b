package main

import (
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
)

// CPU scopes of an implementation's CPU figure.
const (
	cpuScopeProcess = "process" // its own process: user+system CPU (getrusage)
	cpuScopeLabel   = "label"   // side by side: CPU profile samples of its goroutines
	cpuScopeShared  = "shared"  // side by side without a profile: not separable (0)
)

// implResult is one implementation's figures from one trial. Durations are
// seconds, sizes bytes.
type implResult struct {
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
	Latency   latencyRep  `json:"latency"`
	Freshness *latencyRep `json:"freshness,omitempty"`
	Reads     uint64      `json:"reads"`
	ReadsPerS float64     `json:"reads_per_second"`
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
	// (cpuSplit.gcCPU); SyncGCEstimateSeconds is the estimate unclamped.
	SyncGCEstimateSeconds float64 `json:"sync_gc_cpu_estimate_seconds,omitempty"`
	// ChurnGCCPUSeconds is the GC's CPU, likewise, from ready until caught
	// up (ChurnCPUSeconds' span): the work of the GC cycles that ended in
	// it (0 if none did); per event, over ChurnEvents.
	ChurnGCCPUSeconds         float64 `json:"churn_gc_cpu_seconds,omitempty"`
	ChurnGCCPUSecondsPerEvent float64 `json:"churn_gc_cpu_seconds_per_event,omitempty"`
	CPUScope                  string  `json:"cpu_scope"`
	// GoMemLimitBytes is the Go soft memory limit in force in its process
	// (below --child-mem-limit in a child of its own: fit.go).
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
	// (faults.go), both implementations alike.
	Requests *listWatchRequests `json:"list_watch_requests,omitempty"`
	// ConvergeAfterFaults (--faults): from the proxy's stop at the churn's
	// end until the check found the cache and every handler's view equal
	// to the server; absent if it never did.
	ConvergeAfterFaults *float64        `json:"converge_after_faults_seconds,omitempty"`
	Check               checkResult     `json:"check"`
	ProfileDir          string          `json:"profile_dir,omitempty"`
	Timeline            []timelinePoint `json:"timeline"`

	// Soak (soak scenario): the samples, fits and verdicts (soak.go).
	Soak *soakResult `json:"soak,omitempty"`
}

// timelinePoint is one sample of an implementation, in seconds since its
// trial started.
type timelinePoint struct {
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

// emittedPoint is the churn writer's count at T seconds since the trial started.
type emittedPoint struct {
	T       float64 `json:"t"`
	Emitted uint64  `json:"emitted"`
}

type latencyRep struct {
	Count   uint64      `json:"count"`
	Mean    float64     `json:"mean"`
	P50     float64     `json:"p50"`
	P90     float64     `json:"p90"`
	P99     float64     `json:"p99"`
	P999    float64     `json:"p999"`
	Max     float64     `json:"max"`
	Buckets []bucketRep `json:"buckets"` // non-empty histogram buckets
}

type bucketRep struct {
	Le    float64 `json:"le"` // upper bound, seconds
	Count uint64  `json:"count"`
}

func latencyReport(s latency.Snapshot) latencyRep {
	r := latencyRep{Count: s.N, Mean: s.Mean().Seconds(), P50: s.Quantile(.5).Seconds(), P90: s.Quantile(.9).Seconds(),
		P99: s.Quantile(.99).Seconds(), P999: s.Quantile(.999).Seconds(), Max: time.Duration(s.Max).Seconds(),
		Buckets: []bucketRep{}}
	for le, c := range s.Buckets() {
		r.Buckets = append(r.Buckets, bucketRep{Le: float64(le) / 1e9, Count: c})
	}
	return r
}

// result assembles c's figures after the check; deletes are the churn
// writer's delete stamps, joined with the delete notifications.
func (c *client) result(chk checkResult, churnStart, churnEnd time.Time, deletes map[string]int64) implResult {
	r := implResult{Impl: c.sp.Impl, Decoder: c.decoder, Diet: c.diet, Queue: c.queue, ListWatch: c.listWatch, Objects: chk.CacheObjects, Check: chk,
		CPUScope: cpuScopeProcess, EventsObservedByHandler: []uint64{}}
	r.InitialSyncSeconds = c.syncedAt.Sub(c.startedAt).Seconds()
	r.ReadySeconds = c.readyAt.Sub(c.startedAt).Seconds()
	if r.ReadySeconds > 0 {
		r.InitialObjectsPerSecond = float64(c.sp.Pods) / r.ReadySeconds
	}
	r.EventsObserved, r.EventsObservedByHandler = c.observed()
	var last int64
	if ctl := c.ctl; ctl != nil {
		ctl.deleteRec.join(deletes, &ctl.latency)
		ctl.deletes.join(deletes, &ctl.freshness)
		r.Latency = latencyReport(latency.Merge(c.latencies()...))
		fr := latencyReport(latency.Merge(&ctl.freshness))
		r.Freshness = &fr
		r.Reconciles, r.ChurnReconciles = ctl.reconciles.Load(), ctl.changes.Load()
		r.StatusPatches, r.StatusPatchErrors = ctl.patches.Load(), ctl.patchErrors.Load()
		last = ctl.lastChange.Load()
		if span := time.Unix(0, last).Sub(churnStart).Seconds(); last > 0 && span > 0 {
			r.ReconcilesPerSecond = float64(r.ChurnReconciles) / span
		}
	} else {
		for _, h := range c.handlers {
			h.deletes.join(deletes, &h.lat)
			last = max(last, h.last.Load())
		}
		r.Latency = latencyReport(latency.Merge(c.latencies()...))
		r.Deliveries = c.calls() - uint64(c.sp.Pods)*uint64(len(c.handlers))
		if span := time.Unix(0, last).Sub(churnStart).Seconds(); last > 0 && span > 0 {
			r.EventsPerSecond = float64(r.EventsObserved) / span
			r.DeliveriesPerSecond = float64(r.Deliveries) / span
		}
	}
	if last > 0 {
		r.CatchUpSeconds = max(0, time.Unix(0, last).Sub(churnEnd).Seconds())
	}
	r.Reads = c.reads.Load()
	if c.reqs != nil {
		r.Requests = c.reqs.report()
	}
	if s := churnEnd.Sub(churnStart).Seconds(); s > 0 {
		r.ReadsPerS = float64(r.Reads) / s
	}
	if c.counts != nil {
		v := func(a interface{ Load() uint64 }) *uint64 { x := a.Load(); return &x }
		r.Overflow, r.Coalesced, r.Panics = v(&c.counts.overflow), v(&c.counts.coalesced), v(&c.counts.panics)
		r.Relists, r.Dropped = v(&c.counts.relists), v(&c.counts.dropped)
	}
	return r
}
