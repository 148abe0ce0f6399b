package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// report is the machine-readable result written by --out. Field meanings are
// in the json tags' comments; durations are seconds (float), sizes bytes.
// Schema version 1.
type report struct {
	Schema    int          `json:"schema"`     // 1
	StartedAt time.Time    `json:"started_at"` // wall clock at start
	Mode      string       `json:"mode"`       // "side-by-side" (one stream, both informers at once) or "sequential"
	Pass      bool         `json:"pass"`       // every implementation's check passed
	Host      hostInfo     `json:"host"`
	Config    reportConfig `json:"config"`
	// Scenarios: one in side-by-side mode, one per implementation in
	// sequential mode. Each has its own cluster, churn and measurements.
	Scenarios []scenarioReport `json:"scenarios"`
	// Implementations flattens the scenarios' implementation results.
	Implementations []implReport `json:"implementations"`
}

type hostInfo struct {
	GoVersion  string `json:"go_version"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// MemoryLimit is the Go soft memory limit in force: GOMEMLIMIT, or half
	// the machine's memory (math.MaxInt64 = none).
	MemoryLimit int64 `json:"memory_limit_bytes"`
}

type reportConfig struct {
	Impls         []string `json:"impls"`
	Sequential    bool     `json:"sequential"`
	Pods          int      `json:"pods"`
	Namespaces    int      `json:"namespaces"`
	ChurnRate     float64  `json:"churn_rate"` // events/s; 0 = as fast as possible
	ChurnDuration float64  `json:"churn_duration_seconds"`
	ChurnEvents   int      `json:"churn_events"`
	Mix           string   `json:"mix"` // create:update:delete
	Handlers      int      `json:"handlers"`
	HandlerWork   float64  `json:"handler_work_seconds"`
	Readers       int      `json:"readers"`
	Workers       int      `json:"workers"`
	Shards        int      `json:"shards"` // 0 = GOMAXPROCS
	RingSize      int      `json:"ring_size"`
	Policy        string   `json:"policy"`
	ContentType   string   `json:"content_type"`
	WatchList     string   `json:"watchlist"`
	ManagedFields bool     `json:"managed_fields"`
	Target        string   `json:"target"` // "apisim" or "cluster"
	Seed          int64    `json:"seed"`
}

type scenarioReport struct {
	Impls       []string `json:"impls"`
	Target      string   `json:"target"`
	URL         string   `json:"url"`
	InitialPods int      `json:"initial_pods"`
	// Populate is the time to create the initial pods in the target.
	PopulateSeconds float64     `json:"populate_seconds"`
	Churn           churnReport `json:"churn"`
	// ServerObjects is the number of pods on the server after churn.
	ServerObjects int `json:"server_objects"`
	// Process-wide resources over the scenario (informers' start to the end
	// of the check). In side-by-side mode they are shared by both.
	CPUSeconds      float64 `json:"cpu_seconds"`
	SyncCPUSeconds  float64 `json:"sync_cpu_seconds"`  // during the initial sync
	ChurnCPUSeconds float64 `json:"churn_cpu_seconds"` // churn and catch-up
	// CPUByLabel splits CPUSeconds by goroutine label from a CPU profile:
	// "<impl>/informer" (reflector, decoding, HTTP, shards, handlers),
	// "<impl>/reader", "server" (apisim), "churn", "" (runtime: GC workers,
	// scheduler). Absent with --profile cpu.
	CPUByLabel     map[string]float64 `json:"cpu_by_label,omitempty"`
	PeakHeapBytes  uint64             `json:"peak_heap_bytes"`
	PeakRSSBytes   uint64             `json:"peak_rss_bytes"`
	GCCount        uint32             `json:"gc_count"`
	GCPauseSeconds float64            `json:"gc_pause_seconds"`
	Timeline       []timelinePoint    `json:"timeline"`
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

// timelinePoint is one sample of the progress sampler.
type timelinePoint struct {
	T        float64           `json:"t"`     // seconds since the informers started
	Phase    string            `json:"phase"` // sync, churn, catch-up
	Emitted  uint64            `json:"emitted"`
	Calls    map[string]uint64 `json:"calls"`    // handler calls so far, per implementation
	Observed map[string]uint64 `json:"observed"` // churn events seen (fewest over handlers)
	Synced   map[string]int    `json:"synced"`   // initial-list adds handled (fewest over handlers)
	Heap     uint64            `json:"heap_bytes"`
	RSS      uint64            `json:"rss_bytes"`
}

type implReport struct {
	Name     string `json:"name"`
	Scenario int    `json:"scenario"` // index into scenarios
	// Objects cached at the end; InitialSyncSeconds from Run until the
	// informer and every handler registration reported HasSynced.
	Objects            int     `json:"objects"`
	InitialSyncSeconds float64 `json:"initial_sync_seconds"`
	InitialObjectsPerS float64 `json:"initial_objects_per_second"`
	// Churn delivery. EventsObserved is the fewest churn events any handler
	// saw (adds after sync, updates that changed the resourceVersion,
	// deletes); equal to the scenario's emitted count when nothing was
	// coalesced or lost to a relist. EventsPerSecond divides it by the time
	// from churn start to the last delivery; DeliveriesPerSecond does the
	// same for all handler calls (EventsPerSecond × handlers when nothing
	// is merged).
	EventsObserved      uint64   `json:"events_observed"`
	EventsObservedByH   []uint64 `json:"events_observed_by_handler"`
	Deliveries          uint64   `json:"deliveries"`
	EventsPerSecond     float64  `json:"events_per_second"`
	DeliveriesPerSecond float64  `json:"deliveries_per_second"`
	// DeliverySeconds: churn start to the last delivery. CatchUpSeconds:
	// churn end to the last delivery (how far behind the informer was).
	DeliverySeconds float64    `json:"delivery_seconds"`
	CatchUpSeconds  float64    `json:"catch_up_seconds"`
	Latency         latencyRep `json:"latency"`
	Reads           uint64     `json:"reads"`
	ReadsPerSecond  float64    `json:"reads_per_second"`
	// CPUSeconds is attributed by goroutine label (informer + readers) when
	// available; CPUShared says the process CPU was shared with another
	// implementation (side by side) and ProcessCPUSeconds is the scenario's.
	CPUSeconds        float64 `json:"cpu_seconds"`
	CPUAttributed     bool    `json:"cpu_attributed"`
	ProcessCPUSeconds float64 `json:"process_cpu_seconds"`
	CPUShared         bool    `json:"cpu_shared"`
	// Memory: peaks are the scenario's (shared side by side). Retained heap
	// is measured by releasing: live heap before minus after stopping the
	// informer and dropping it; HandlerStateBytes is loadgen's own per-key
	// bookkeeping (split evenly over the scenario's implementations),
	// released first and not included.
	PeakHeapBytes      uint64  `json:"peak_heap_bytes"`
	PeakRSSBytes       uint64  `json:"peak_rss_bytes"`
	RetainedHeapBytes  uint64  `json:"retained_heap_bytes"`
	HeapBytesPerObject float64 `json:"heap_bytes_per_object"`
	HandlerStateBytes  uint64  `json:"handler_state_bytes"`
	GCCount            uint32  `json:"gc_count"`
	GCPauseSeconds     float64 `json:"gc_pause_seconds"`
	// Pipeline counters (shardinformer only, from its Observer).
	Overflow  *uint64     `json:"overflow,omitempty"`
	Coalesced *uint64     `json:"coalesced,omitempty"`
	Panics    *uint64     `json:"panics,omitempty"`
	Relists   *uint64     `json:"relists,omitempty"`
	Dropped   *uint64     `json:"dropped,omitempty"`
	Check     checkResult `json:"check"`
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

func latencyReport(s snapshot) latencyRep {
	r := latencyRep{Count: s.n, Mean: s.mean().Seconds(), P50: s.quantile(.5).Seconds(), P90: s.quantile(.9).Seconds(),
		P99: s.quantile(.99).Seconds(), P999: s.quantile(.999).Seconds(), Max: time.Duration(s.max).Seconds()}
	for b, c := range s.counts {
		if c > 0 {
			_, hi := bucketBounds(b)
			r.Buckets = append(r.Buckets, bucketRep{Le: float64(hi+1) / 1e9, Count: c})
		}
	}
	return r
}

func writeJSON(path string, r *report) error {
	b, err := json.MarshalIndent(r, "", "  ")
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

// printSummary writes the human-readable summary: one column per implementation.
func printSummary(w io.Writer, r *report) {
	fmt.Fprintf(w, "\nloadgen: %d pods in %d namespaces, %s, %s, churn %s mix %s, %d handler(s)",
		r.Config.Pods, r.Config.Namespaces, r.Config.Target, r.Config.ContentType, churnDesc(r.Config), r.Config.Mix, r.Config.Handlers)
	if r.Config.HandlerWork > 0 {
		fmt.Fprintf(w, " × %s work", fmtDur(r.Config.HandlerWork))
	}
	fmt.Fprintf(w, ", %d reader(s); mode %s; GOMAXPROCS %d\n", r.Config.Readers, r.Mode, r.Host.GOMAXPROCS)
	for i, s := range r.Scenarios {
		fmt.Fprintf(w, "scenario %d (%s): churn %d events in %s (%s: %d creates, %d updates, %d deletes, %d failed), server ends with %d pods\n",
			i+1, strings.Join(s.Impls, " + "), s.Churn.Emitted, fmtDur(s.Churn.Seconds), fmtRate(s.Churn.Rate),
			s.Churn.Creates, s.Churn.Updates, s.Churn.Deletes, s.Churn.Failed, s.ServerObjects)
		if len(s.CPUByLabel) > 0 {
			var parts []string
			for _, k := range sortedKeys(s.CPUByLabel) {
				name := k
				if name == "" {
					name = "runtime/unlabelled"
				}
				parts = append(parts, fmt.Sprintf("%s %.1fs", name, s.CPUByLabel[k]))
			}
			fmt.Fprintf(w, "  CPU by goroutine label: %s\n", strings.Join(parts, ", "))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(ir *implReport) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for i := range r.Implementations {
			fmt.Fprintf(tw, "%s\t", f(&r.Implementations[i]))
		}
		fmt.Fprintln(tw)
	}
	row("", func(ir *implReport) string { return ir.Name })
	row("objects cached", func(ir *implReport) string { return fmt.Sprint(ir.Objects) })
	row("initial sync", func(ir *implReport) string { return fmtDur(ir.InitialSyncSeconds) })
	row("initial sync objects/s", func(ir *implReport) string { return fmtRate(ir.InitialObjectsPerS) })
	row("churn events seen (min/handler)", func(ir *implReport) string { return fmt.Sprint(ir.EventsObserved) })
	row("events/s", func(ir *implReport) string { return fmtRate(ir.EventsPerSecond) })
	row("deliveries/s (all handlers)", func(ir *implReport) string { return fmtRate(ir.DeliveriesPerSecond) })
	row("catch-up after churn", func(ir *implReport) string { return fmtDur(ir.CatchUpSeconds) })
	row("latency p50", func(ir *implReport) string { return fmtDur(ir.Latency.P50) })
	row("latency p90", func(ir *implReport) string { return fmtDur(ir.Latency.P90) })
	row("latency p99", func(ir *implReport) string { return fmtDur(ir.Latency.P99) })
	row("latency max", func(ir *implReport) string { return fmtDur(ir.Latency.Max) })
	if r.Config.Readers > 0 {
		row("cache reads/s", func(ir *implReport) string { return fmtRate(ir.ReadsPerSecond) })
	}
	row("CPU seconds", func(ir *implReport) string {
		switch {
		case ir.CPUAttributed:
			return fmt.Sprintf("%.1f (by label)", ir.CPUSeconds)
		case ir.CPUShared:
			return fmt.Sprintf("%.1f (process, shared)", ir.ProcessCPUSeconds)
		}
		return fmt.Sprintf("%.1f (process)", ir.ProcessCPUSeconds)
	})
	shared := func(ir *implReport, s string) string {
		if ir.CPUShared {
			return s + " (shared)"
		}
		return s
	}
	row("peak heap", func(ir *implReport) string { return shared(ir, fmtBytes(float64(ir.PeakHeapBytes))) })
	row("peak RSS", func(ir *implReport) string { return shared(ir, fmtBytes(float64(ir.PeakRSSBytes))) })
	row("retained heap (informer)", func(ir *implReport) string { return fmtBytes(float64(ir.RetainedHeapBytes)) })
	row("heap bytes / cached object", func(ir *implReport) string { return fmt.Sprintf("%.0f", ir.HeapBytesPerObject) })
	row("GC count / pause total", func(ir *implReport) string {
		return shared(ir, fmt.Sprintf("%d / %s", ir.GCCount, fmtDur(ir.GCPauseSeconds)))
	})
	opt := func(p *uint64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	row("overflow / coalesced", func(ir *implReport) string { return opt(ir.Overflow) + " / " + opt(ir.Coalesced) })
	row("relists / dropped / panics", func(ir *implReport) string {
		return opt(ir.Relists) + " / " + opt(ir.Dropped) + " / " + opt(ir.Panics)
	})
	row("check", func(ir *implReport) string {
		if ir.Check.Pass {
			return "PASS"
		}
		return "FAIL"
	})
	tw.Flush()
	for _, ir := range r.Implementations {
		for _, d := range ir.Check.Details {
			fmt.Fprintf(w, "  %s: %s\n", ir.Name, d)
		}
	}
	for _, ir := range r.Implementations {
		if ir.Check.Pass {
			fmt.Fprintf(w, "PASS %s: cache and all %d handler(s) match the server (%d keys and resourceVersions)\n",
				ir.Name, r.Config.Handlers, ir.Check.ServerObjects)
		} else {
			fmt.Fprintf(w, "FAIL %s: %d cache and %d handler mismatches against the server's %d keys\n",
				ir.Name, ir.Check.CacheMismatches, ir.Check.HandlerMismatches, ir.Check.ServerObjects)
		}
	}
}

func churnDesc(c reportConfig) string {
	var parts []string
	if c.ChurnRate > 0 {
		parts = append(parts, fmt.Sprintf("%.0f/s", c.ChurnRate))
	} else {
		parts = append(parts, "as fast as possible")
	}
	if c.ChurnDuration > 0 {
		parts = append(parts, "for "+fmtDur(c.ChurnDuration))
	}
	if c.ChurnEvents > 0 {
		parts = append(parts, fmt.Sprintf("up to %d events", c.ChurnEvents))
	}
	return strings.Join(parts, " ")
}
