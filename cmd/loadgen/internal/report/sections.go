package report

// The sections of the replicas and soak scenarios, as report.json holds
// them.

// Replicas is the replicas scenario's section of the report.
type Replicas struct {
	Group ReplicaGroup `json:"group"`
	// Note says how to read the figures on this machine.
	Note string `json:"note"`
	// Rows summarize the trials per server filtering mode and replica
	// count: medians over runs (aggregates) or over runs × replicas (per
	// replica), with min–max.
	Rows   []ReplicaRow   `json:"rows"`
	Trials []ReplicaTrial `json:"trials"`
	Pass   bool           `json:"pass"` // every trial's check passed
}

// ReplicaGroup is the group's settings, the same for every replica.
type ReplicaGroup struct {
	Counts               []int   `json:"counts"`
	ShardSelector        string  `json:"shard_selector"` // --shard-selector: on, off or both
	Slots                int     `json:"slots"`
	LeaseDurationSeconds float64 `json:"lease_duration_seconds"`
	RenewDeadlineSeconds float64 `json:"renew_deadline_seconds"`
	RenewIntervalSeconds float64 `json:"renew_interval_seconds"`
	HandlerCalls         string  `json:"handler_calls"`
}

// ReplicaRow is one replica count in one filtering mode.
type ReplicaRow struct {
	ServerFilters bool `json:"server_filters"`
	Replicas      int  `json:"replicas"`
	// Aggregates, one sample per run.
	ConvergeSeconds          Stat `json:"converge_seconds"`
	SyncReconcilesPerSecond  Stat `json:"sync_reconciles_per_second"`
	ChurnReconcilesPerSecond Stat `json:"churn_reconciles_per_second"`
	CatchUpSeconds           Stat `json:"catch_up_seconds"`
	// TotalRetainedHeapBytes sums the replicas' retained heaps (one
	// sample per run): divided by N, the mean per replica.
	TotalRetainedHeapBytes Stat `json:"total_retained_heap_bytes"`
	// Per replica, one sample per replica and run. The assignment gives
	// each replica ⌊slots/N⌋ or ⌈slots/N⌉ slots: SlotsOwned shows how
	// the slots were split, and the retained heap per slot owned is the
	// memory per unit of share.
	ReplicaSlotsOwned              Stat `json:"replica_slots_owned"`
	ReplicaSlotArrivals            Stat `json:"replica_slot_arrivals"`
	ReplicaHeapPerSlotBytes        Stat `json:"replica_heap_per_slot_bytes"`
	ReplicaSyncReconcilesPerSecond Stat `json:"replica_sync_reconciles_per_second"`
	ReplicaObjects                 Stat `json:"replica_objects"`
	ReplicaRetainedHeapBytes       Stat `json:"replica_retained_heap_bytes"`
	ReplicaPeakRSSBytes            Stat `json:"replica_peak_rss_bytes"`
	ReplicaSyncDecodedShare        Stat `json:"replica_sync_decoded_share"`
	ReplicaChurnDecodedShare       Stat `json:"replica_churn_decoded_share"`
	ReplicaCPUSeconds              Stat `json:"replica_cpu_seconds"`
}

// ReplicaTrial is one trial: a fresh simulated server, N replica
// processes through convergence, churn, catch-up and the checks.
type ReplicaTrial struct {
	Replicas      int  `json:"replicas"`
	ServerFilters bool `json:"server_filters"` // the server applied shardSelector
	Run           int  `json:"run"`
	Pods          int  `json:"pods"`
	// ConvergeSeconds: replicas started → every slot active at its target
	// owner, every initial key reconciled, every queue empty.
	ConvergeSeconds float64 `json:"converge_seconds"`
	// Aggregate reconciles/s: to converge (the initial backlog and
	// hand-overs), and from the churn's start to caught up.
	SyncReconcilesPerSecond  float64 `json:"sync_reconciles_per_second"`
	ChurnReconcilesPerSecond float64 `json:"churn_reconciles_per_second"`
	// CatchUpSeconds: churn end → the group holds the server's state.
	CatchUpSeconds   float64         `json:"catch_up_seconds"`
	Churn            Churn           `json:"churn"`
	ServerObjects    int             `json:"server_objects"`
	Server           TrialServer     `json:"server"`
	ParentCPUSeconds float64         `json:"parent_cpu_seconds"` // server and churn writer, replicas' start → caught up
	Check            ReplicaCheck    `json:"check"`
	Results          []ReplicaResult `json:"results"`
}

// ReplicaCheck is the group's final state against the server's.
type ReplicaCheck struct {
	Pass          bool `json:"pass"`
	ServerObjects int  `json:"server_objects"`
	// Keys missing, extra or at another resourceVersion in the union of the
	// handlers' views, and in the union of the versions last reconciled.
	ViewMismatches       int `json:"view_mismatches"`
	ReconciledMismatches int `json:"reconciled_mismatches"`
	// KeysInTwoViews at the end; Overlaps: keys whose stays in two
	// replicas' views overlapped in time (wall clock of one machine), out
	// of Stays recorded.
	KeysInTwoViews int      `json:"keys_in_two_views"`
	Overlaps       int      `json:"overlaps"`
	Stays          int      `json:"stays"`
	Details        []string `json:"details"`
}

// ReplicaResult is one replica's figures in one trial.
type ReplicaResult struct {
	Identity    string `json:"identity"`
	TargetSlots int    `json:"target_slots"`
	// SlotArrivals counts the slots that entered the replica's view
	// between two of its samples (0.1 s apart) until the group converged:
	// TargetSlots when every slot went straight to its final owner, more
	// when replicas that started apart handed slots on to later ones.
	SlotArrivals int `json:"slot_arrivals"`
	ReplicaFigures
	SyncReconciles           uint64  `json:"sync_reconciles"`
	SyncReconcilesPerSecond  float64 `json:"sync_reconciles_per_second"`
	ChurnReconcilesPerSecond float64 `json:"churn_reconciles_per_second"`
	SyncDecodedObjects       uint64  `json:"sync_decoded_objects"`
	SyncDecodedBytes         uint64  `json:"sync_decoded_bytes"`
	ChurnDecodedObjects      uint64  `json:"churn_decoded_objects"`
	ChurnDecodedBytes        uint64  `json:"churn_decoded_bytes"`
	// Shares: objects decoded to converge / pods; churn events decoded /
	// churn events written. With server-side filtering about 1/N.
	SyncDecodedShare  float64 `json:"sync_decoded_share"`
	ChurnDecodedShare float64 `json:"churn_decoded_share"`
	SyncCPUSeconds    float64 `json:"sync_cpu_seconds"`
	ChurnCPUSeconds   float64 `json:"churn_cpu_seconds"`
}

// ReplicaFigures is what a replica measures of itself at the end; the
// parent adds the phase splits from its samples.
type ReplicaFigures struct {
	Objects           int     `json:"objects"`   // cached by its running slot informers
	ViewKeys          int     `json:"view_keys"` // in its handler's view
	ActiveSlots       []int   `json:"active_slots"`
	Reconciles        uint64  `json:"reconciles"`
	ChurnReconciles   uint64  `json:"churn_reconciles"` // reconciles that took a churn change
	Latency           Latency `json:"latency"`          // change → reconcile start
	DecodedObjects    uint64  `json:"decoded_objects"`
	DecodedBytes      uint64  `json:"decoded_bytes"`
	Fallbacks         uint64  `json:"fallbacks"`       // slot informers that found shardSelector ignored
	DroppedObjects    uint64  `json:"dropped_objects"` // objects filtered out on the client
	CPUSeconds        float64 `json:"cpu_seconds"`     // the process's, from its start
	PeakHeapBytes     uint64  `json:"peak_heap_bytes"`
	PeakRSSBytes      uint64  `json:"peak_rss_bytes"`
	RetainedHeapBytes uint64  `json:"retained_heap_bytes"` // live heap at the end, bookkeeping released, minus the live heap at the start
	BookkeepingBytes  uint64  `json:"bookkeeping_bytes"`   // loadgen's per-key records, released before the heap was measured
	GCCount           uint32  `json:"gc_count"`
}

// Soak is the soak scenario's section of the report: its settings
// and each implementation's verdict.
type Soak struct {
	DurationSeconds    float64           `json:"duration_seconds"`
	SampleEverySeconds float64           `json:"sample_every_seconds"`
	WarmupSeconds      float64           `json:"warmup_seconds"`
	MaxSlopePctPerHour float64           `json:"max_slope_percent_per_hour"`
	Pass               bool              `json:"pass"`
	Impls              []SoakImplSummary `json:"impls"`
}

type SoakImplSummary struct {
	Impl     string   `json:"impl"`
	Run      int      `json:"run"`
	Pass     bool     `json:"pass"`
	Failures []string `json:"failures"`
	// HeapSlope and GoroutineSlope: the gated fits' slopes, %/h.
	HeapSlope      float64 `json:"heap_slope_percent_per_hour"`
	GoroutineSlope float64 `json:"goroutine_slope_percent_per_hour"`
}
