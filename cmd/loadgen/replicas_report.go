package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
)

// replicasReport is the replicas scenario's section of the report.
type replicasReport struct {
	Group replicaGroupInfo `json:"group"`
	// Note says how to read the figures on this machine.
	Note string `json:"note"`
	// Rows summarize the trials per server filtering mode and replica
	// count: medians over runs (aggregates) or over runs × replicas (per
	// replica), with min–max.
	Rows   []replicaRow         `json:"rows"`
	Trials []replicaTrialReport `json:"trials"`
	Pass   bool                 `json:"pass"` // every trial's check passed
}

// replicaGroupInfo is the group's settings, the same for every replica.
type replicaGroupInfo struct {
	Counts               []int   `json:"counts"`
	ShardSelector        string  `json:"shard_selector"` // --shard-selector: on, off or both
	Slots                int     `json:"slots"`
	LeaseDurationSeconds float64 `json:"lease_duration_seconds"`
	RenewDeadlineSeconds float64 `json:"renew_deadline_seconds"`
	RenewIntervalSeconds float64 `json:"renew_interval_seconds"`
	HandlerCalls         string  `json:"handler_calls"`
}

// replicaRow is one replica count in one filtering mode.
type replicaRow struct {
	ServerFilters bool `json:"server_filters"`
	Replicas      int  `json:"replicas"`
	// Aggregates, one sample per run.
	ConvergeSeconds          stat `json:"converge_seconds"`
	SyncReconcilesPerSecond  stat `json:"sync_reconciles_per_second"`
	ChurnReconcilesPerSecond stat `json:"churn_reconciles_per_second"`
	CatchUpSeconds           stat `json:"catch_up_seconds"`
	// TotalRetainedHeapBytes sums the replicas' retained heaps (one
	// sample per run): divided by N, the mean per replica.
	TotalRetainedHeapBytes stat `json:"total_retained_heap_bytes"`
	// Per replica, one sample per replica and run. The assignment gives
	// each replica ⌊slots/N⌋ or ⌈slots/N⌉ slots: SlotsOwned shows how
	// the slots were split, and the retained heap per slot owned is the
	// memory per unit of share.
	ReplicaSlotsOwned              stat `json:"replica_slots_owned"`
	ReplicaSlotArrivals            stat `json:"replica_slot_arrivals"`
	ReplicaHeapPerSlotBytes        stat `json:"replica_heap_per_slot_bytes"`
	ReplicaSyncReconcilesPerSecond stat `json:"replica_sync_reconciles_per_second"`
	ReplicaObjects                 stat `json:"replica_objects"`
	ReplicaRetainedHeapBytes       stat `json:"replica_retained_heap_bytes"`
	ReplicaPeakRSSBytes            stat `json:"replica_peak_rss_bytes"`
	ReplicaSyncDecodedShare        stat `json:"replica_sync_decoded_share"`
	ReplicaChurnDecodedShare       stat `json:"replica_churn_decoded_share"`
	ReplicaCPUSeconds              stat `json:"replica_cpu_seconds"`
}

// replicaTrialReport is one trial: a fresh simulated server, N replica
// processes through convergence, churn, catch-up and the checks.
type replicaTrialReport struct {
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
	Churn            churnReport     `json:"churn"`
	ServerObjects    int             `json:"server_objects"`
	Server           trialServer     `json:"server"`
	ParentCPUSeconds float64         `json:"parent_cpu_seconds"` // server and churn writer, replicas' start → caught up
	Check            replicaCheck    `json:"check"`
	Results          []replicaResult `json:"results"`
}

// replicaCheck is the group's final state against the server's.
type replicaCheck struct {
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

// replicaResult is one replica's figures in one trial.
type replicaResult struct {
	Identity    string `json:"identity"`
	TargetSlots int    `json:"target_slots"`
	// SlotArrivals counts the slots that entered the replica's view
	// between two of its samples (0.1 s apart) until the group converged:
	// TargetSlots when every slot went straight to its final owner, more
	// when replicas that started apart handed slots on to later ones.
	SlotArrivals int `json:"slot_arrivals"`
	replicaFigures
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

// replicasNote is the report's reading guide for the scenario.
const replicasNote = "Every replica is a process of its own on the same machine, and the simulated API server and churn writer run in the parent: " +
	"N replicas share the machine's cores (%d here), so aggregate reconciles/s cannot grow linearly with N (the processes compete for the same CPU, " +
	"and each replica pays fixed costs: its Leases, its slot informers, its share of the hand-over). What must shrink as 1/N is each replica's share: " +
	"objects cached, events and bytes decoded, and memory. With shardSelector ignored by the server (the client-side fallback) every slot informer " +
	"decodes the whole stream, so a replica holding k slots decodes k times what one unsharded informer does. " +
	"Slots go to replicas by rendezvous hashing with exact quotas, sticky to what each replica holds (replicas.Sticky): ⌊16/N⌋ or ⌈16/N⌉ each, so the largest replica holds " +
	"⌈16/N⌉/16 of the keys (0.375 for 3), and the retained heap per slot owned shows whether memory follows the share. " +
	"Slots moved in counts the slots that entered a replica's view until the group converged: its slots owned when each slot went straight " +
	"to its final owner, more when a replica that started first held slots that later ones then took."

func newReplicasReport(c config) *replicasReport {
	g := replicaGroup
	return &replicasReport{Group: replicaGroupInfo{Counts: c.replicaCounts, ShardSelector: c.shardSelector, Slots: g.Slots,
		LeaseDurationSeconds: g.LeaseDuration.Seconds(), RenewDeadlineSeconds: g.RenewDeadline.Seconds(), RenewIntervalSeconds: g.RenewInterval.Seconds(),
		HandlerCalls: "one at a time per replica (runner Workers 1): the handler only updates the view and enqueues; --workers reconcile workers per replica"},
		Note: fmt.Sprintf(replicasNote, runtime.NumCPU()), Rows: []replicaRow{}, Trials: []replicaTrialReport{}}
}

// summarize derives the trial's aggregates and each replica's shares.
func (t *replicaTrialReport) summarize(pods int, emitted uint64) {
	for i := range t.Results {
		r := &t.Results[i]
		if pods > 0 {
			r.SyncDecodedShare = float64(r.SyncDecodedObjects) / float64(pods)
		}
		if emitted > 0 {
			r.ChurnDecodedShare = float64(r.ChurnDecodedObjects) / float64(emitted)
		}
		t.SyncReconcilesPerSecond += r.SyncReconcilesPerSecond
		t.ChurnReconcilesPerSecond += r.ChurnReconcilesPerSecond
	}
}

// summarize builds the rows and the verdict from the trials.
func (rr *replicasReport) summarize() {
	rr.Pass = len(rr.Trials) > 0
	type rowKey struct {
		filters bool
		n       int
	}
	var order []rowKey
	byRow := map[rowKey][]*replicaTrialReport{}
	for i := range rr.Trials {
		t := &rr.Trials[i]
		rr.Pass = rr.Pass && t.Check.Pass
		k := rowKey{t.ServerFilters, t.Replicas}
		if _, ok := byRow[k]; !ok {
			order = append(order, k)
		}
		byRow[k] = append(byRow[k], t)
	}
	for _, k := range order {
		row := replicaRow{ServerFilters: k.filters, Replicas: k.n}
		trial := func(unit string, get func(*replicaTrialReport) float64) stat {
			var xs []float64
			for _, t := range byRow[k] {
				xs = append(xs, get(t))
			}
			return textStat(unit, xs)
		}
		each := func(unit string, get func(*replicaResult) float64) stat {
			var xs []float64
			for _, t := range byRow[k] {
				for i := range t.Results {
					xs = append(xs, get(&t.Results[i]))
				}
			}
			return textStat(unit, xs)
		}
		row.ConvergeSeconds = trial("s", func(t *replicaTrialReport) float64 { return t.ConvergeSeconds })
		row.SyncReconcilesPerSecond = trial("per_s", func(t *replicaTrialReport) float64 { return t.SyncReconcilesPerSecond })
		row.ChurnReconcilesPerSecond = trial("per_s", func(t *replicaTrialReport) float64 { return t.ChurnReconcilesPerSecond })
		row.CatchUpSeconds = trial("s", func(t *replicaTrialReport) float64 { return t.CatchUpSeconds })
		row.TotalRetainedHeapBytes = trial("bytes", func(t *replicaTrialReport) float64 {
			var sum float64
			for _, r := range t.Results {
				sum += float64(r.RetainedHeapBytes)
			}
			return sum
		})
		row.ReplicaSlotsOwned = each("count", func(r *replicaResult) float64 { return float64(r.TargetSlots) })
		row.ReplicaSlotArrivals = each("count", func(r *replicaResult) float64 { return float64(r.SlotArrivals) })
		row.ReplicaHeapPerSlotBytes = each("bytes", func(r *replicaResult) float64 { return float64(r.RetainedHeapBytes) / float64(max(r.TargetSlots, 1)) })
		row.ReplicaSyncReconcilesPerSecond = each("per_s", func(r *replicaResult) float64 { return r.SyncReconcilesPerSecond })
		row.ReplicaObjects = each("count", func(r *replicaResult) float64 { return float64(r.Objects) })
		row.ReplicaRetainedHeapBytes = each("bytes", func(r *replicaResult) float64 { return float64(r.RetainedHeapBytes) })
		row.ReplicaPeakRSSBytes = each("bytes", func(r *replicaResult) float64 { return float64(r.PeakRSSBytes) })
		row.ReplicaSyncDecodedShare = each("ratio", func(r *replicaResult) float64 { return r.SyncDecodedShare })
		row.ReplicaChurnDecodedShare = each("ratio", func(r *replicaResult) float64 { return r.ChurnDecodedShare })
		row.ReplicaCPUSeconds = each("s", func(r *replicaResult) float64 { return r.CPUSeconds })
		rr.Rows = append(rr.Rows, row)
	}
}

// textStat is statOf with its text in unit.
func textStat(unit string, xs []float64) stat {
	if len(xs) == 0 {
		return stat{Samples: []float64{}}
	}
	s := statOf(xs)
	s.Text = fmtStat(unit, s)
	return s
}

// headline says how the per-replica share and the aggregate rate moved
// with the replica count.
func (rr *replicasReport) headline(pods int) string {
	if len(rr.Rows) == 0 {
		return "no results"
	}
	var parts []string
	for _, filters := range []bool{true, false} {
		var heap, share, rate, counts []string
		var first float64
		for _, row := range rr.Rows {
			if row.ServerFilters != filters {
				continue
			}
			mean := row.TotalRetainedHeapBytes.Median / float64(row.Replicas)
			if first == 0 {
				first = mean
			}
			counts = append(counts, fmt.Sprint(row.Replicas))
			heap = append(heap, fmt.Sprintf("%s (%.2f×, largest %s)", fmtBytes(mean), mean/max(first, 1), fmtBytes(row.ReplicaRetainedHeapBytes.Max)))
			share = append(share, fmt.Sprintf("%.2f (largest %.2f)", row.ReplicaChurnDecodedShare.Median, row.ReplicaChurnDecodedShare.Max))
			rate = append(rate, fmtRate(row.SyncReconcilesPerSecond.Median))
		}
		if len(counts) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("shardSelector %s, %s replica(s): retained heap per replica (total/N) %s; churn events decoded per replica (median share of the stream) %s; aggregate reconciles/s to converge %s",
			map[bool]string{true: "on", false: "off (client-side fallback)"}[filters], strings.Join(counts, " → "),
			strings.Join(heap, ", "), strings.Join(share, ", "), strings.Join(rate, ", ")))
	}
	return fmt.Sprintf("Controller replicas on %s pods, each a process on one machine: %s.", fmtCount(pods), strings.Join(parts, "; "))
}

// charts draws reconciles/s, memory and decoding per replica against the
// replica count.
func (rr *replicasReport) charts() []plot.Chart {
	if len(rr.Rows) == 0 {
		return nil
	}
	x := plot.Axis{Label: "replicas", Unit: "count"}
	rate := plot.Chart{ID: "replicas_reconciles", Title: "Reconciles/s by replica count (median)", X: x, Y: plot.Axis{Label: "reconciles per second", Unit: "per_s"},
		Note: "The replicas share the machine's cores: the aggregate cannot grow linearly with N."}
	mem := plot.Chart{ID: "replicas_memory", Title: "Memory per replica by replica count (median)", X: x, Y: plot.Axis{Label: "bytes per replica", Unit: "bytes"},
		Note: "Ideal: the first count's mean retained heap scaled by its count over N. The largest replica is above the mean when N does not divide the slot count."}
	dec := plot.Chart{ID: "replicas_decoded", Title: "Share decoded per replica by replica count (median)", X: x, Y: plot.Axis{Label: "% of the stream", Unit: "percent"},
		Note: "Churn events decoded by a replica / churn events written; objects decoded to converge / pods. Ideal: 100/N with server-side filtering."}
	for _, filters := range []bool{true, false} {
		suffix, colour := "", implOurs
		if !filters {
			suffix, colour = " (client-side fallback)", implClientGo
		}
		var agg, aggChurn, each, heap, largest, rss, ideal, share, syncShare, idealShare [][2]float64
		var base float64
		for _, row := range rr.Rows {
			if row.ServerFilters != filters {
				continue
			}
			n := float64(row.Replicas)
			if base == 0 {
				base = row.TotalRetainedHeapBytes.Median / n * float64(rr.Rows[0].Replicas)
			}
			agg = append(agg, [2]float64{n, row.SyncReconcilesPerSecond.Median})
			aggChurn = append(aggChurn, [2]float64{n, row.ChurnReconcilesPerSecond.Median})
			each = append(each, [2]float64{n, row.ReplicaSyncReconcilesPerSecond.Median})
			heap = append(heap, [2]float64{n, row.TotalRetainedHeapBytes.Median / n})
			largest = append(largest, [2]float64{n, row.ReplicaRetainedHeapBytes.Max})
			rss = append(rss, [2]float64{n, row.ReplicaPeakRSSBytes.Max})
			ideal = append(ideal, [2]float64{n, base / n})
			share = append(share, [2]float64{n, 100 * row.ReplicaChurnDecodedShare.Median})
			syncShare = append(syncShare, [2]float64{n, 100 * row.ReplicaSyncDecodedShare.Median})
			idealShare = append(idealShare, [2]float64{n, 100 / n})
		}
		if len(agg) == 0 {
			continue
		}
		rate.Series = append(rate.Series,
			plot.Series{Name: "all replicas, to converge" + suffix, Impl: colour, Points: agg},
			plot.Series{Name: "all replicas, churn" + suffix, Impl: colour, Points: aggChurn},
			plot.Series{Name: "per replica, to converge" + suffix, Impl: "churn", Points: each})
		mem.Series = append(mem.Series,
			plot.Series{Name: "retained heap, mean (total/N)" + suffix, Impl: colour, Points: heap},
			plot.Series{Name: "retained heap, largest replica" + suffix, Impl: colour, Points: largest},
			plot.Series{Name: "peak RSS, largest replica" + suffix, Impl: colour, Points: rss},
			plot.Series{Name: "ideal 1/N of one replica's heap" + suffix, Impl: "churn", Points: ideal})
		dec.Series = append(dec.Series,
			plot.Series{Name: "churn events" + suffix, Impl: colour, Points: share},
			plot.Series{Name: "objects to converge" + suffix, Impl: colour, Points: syncShare})
		if filters {
			dec.Series = append(dec.Series, plot.Series{Name: "ideal 100/N", Impl: "churn", Points: idealShare})
		}
	}
	out := []plot.Chart{plot.Line(rate), plot.Line(mem), plot.Line(dec)}
	for i := range out {
		out[i].X = countAxis(out[i].X, rr.Group.Counts[len(rr.Group.Counts)-1])
		finishChart(&out[i])
	}
	return out
}

// countAxis ticks a replica-count axis at whole counts from 0 to n.
func countAxis(a plot.Axis, n int) plot.Axis {
	step := 1
	for n/step > 8 {
		step *= 2
	}
	a.Min, a.Max, a.Ticks = 0, float64((n+step-1)/step*step), nil
	for v := 0; v <= int(a.Max); v += step {
		a.Ticks = append(a.Ticks, float64(v))
	}
	return a
}

// printReplicas writes the replicas scenario's table, note and checks.
func printReplicas(w io.Writer, r *report) {
	rr := r.Replicas
	g := rr.Group
	fmt.Fprintf(w, "group: %d slots, leases %gs (renew deadline %gs, every %gs); handler calls %s\n\n",
		g.Slots, g.LeaseDurationSeconds, g.RenewDeadlineSeconds, g.RenewIntervalSeconds, g.HandlerCalls)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "shardSelector\treplicas\tconverge\treconciles/s all (to converge)\treconciles/s all (churn)\tretained heap total/N\tper replica: slots\tslots moved in (to converge)\treconciles/s (to converge)\tobjects cached\tretained heap\theap per slot\tpeak RSS\tdecoded share (to converge)\tdecoded share (churn)\tCPU s")
	for _, row := range rr.Rows {
		mode := "server"
		if !row.ServerFilters {
			mode = "client (fallback)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", mode, row.Replicas, row.ConvergeSeconds.Text,
			row.SyncReconcilesPerSecond.Text, row.ChurnReconcilesPerSecond.Text, fmtBytes(row.TotalRetainedHeapBytes.Median/float64(row.Replicas)),
			row.ReplicaSlotsOwned.Text, row.ReplicaSlotArrivals.Text, row.ReplicaSyncReconcilesPerSecond.Text,
			row.ReplicaObjects.Text, row.ReplicaRetainedHeapBytes.Text, row.ReplicaHeapPerSlotBytes.Text, row.ReplicaPeakRSSBytes.Text,
			row.ReplicaSyncDecodedShare.Text, row.ReplicaChurnDecodedShare.Text, row.ReplicaCPUSeconds.Text)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nEach cell: median [min–max], over runs (all) or over replicas and runs (per replica).\n%s\n\n", rr.Note)
	for _, t := range rr.Trials {
		c := t.Check
		verdict := "PASS"
		if !c.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s %d replica(s), shardSelector %s, run %d: views and reconciled versions against the server's %d keys: %d and %d mismatches; %d keys in two views at the end; %d of %d stays overlapping another replica's\n",
			verdict, t.Replicas, map[bool]string{true: "on", false: "off"}[t.ServerFilters], t.Run, c.ServerObjects,
			c.ViewMismatches, c.ReconciledMismatches, c.KeysInTwoViews, c.Overlaps, c.Stays)
		for _, d := range c.Details {
			fmt.Fprintf(w, "  %s\n", d)
		}
	}
}
