package report

import (
	"fmt"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
	"io"
	"strings"
	"text/tabwriter"
)

// SummarizeReplicaTrial derives the trial's aggregates and each replica's shares.
func SummarizeReplicaTrial(t *ReplicaTrial, pods int, emitted uint64) {
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

// SummarizeReplicas builds the rows and the verdict from the trials.
func SummarizeReplicas(rr *Replicas) {
	rr.Pass = len(rr.Trials) > 0
	type rowKey struct {
		filters bool
		n       int
	}
	var order []rowKey
	byRow := map[rowKey][]*ReplicaTrial{}
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
		row := ReplicaRow{ServerFilters: k.filters, Replicas: k.n}
		trial := func(unit string, get func(*ReplicaTrial) float64) Stat {
			var xs []float64
			for _, t := range byRow[k] {
				xs = append(xs, get(t))
			}
			return textStat(unit, xs)
		}
		each := func(unit string, get func(*ReplicaResult) float64) Stat {
			var xs []float64
			for _, t := range byRow[k] {
				for i := range t.Results {
					xs = append(xs, get(&t.Results[i]))
				}
			}
			return textStat(unit, xs)
		}
		row.ConvergeSeconds = trial("s", func(t *ReplicaTrial) float64 { return t.ConvergeSeconds })
		row.SyncReconcilesPerSecond = trial("per_s", func(t *ReplicaTrial) float64 { return t.SyncReconcilesPerSecond })
		row.ChurnReconcilesPerSecond = trial("per_s", func(t *ReplicaTrial) float64 { return t.ChurnReconcilesPerSecond })
		row.CatchUpSeconds = trial("s", func(t *ReplicaTrial) float64 { return t.CatchUpSeconds })
		row.TotalRetainedHeapBytes = trial("bytes", func(t *ReplicaTrial) float64 {
			var sum float64
			for _, r := range t.Results {
				sum += float64(r.RetainedHeapBytes)
			}
			return sum
		})
		row.ReplicaSlotsOwned = each("count", func(r *ReplicaResult) float64 { return float64(r.TargetSlots) })
		row.ReplicaSlotArrivals = each("count", func(r *ReplicaResult) float64 { return float64(r.SlotArrivals) })
		row.ReplicaHeapPerSlotBytes = each("bytes", func(r *ReplicaResult) float64 {
			return float64(r.RetainedHeapBytes) / float64(max(r.TargetSlots, 1))
		})
		row.ReplicaSyncReconcilesPerSecond = each("per_s", func(r *ReplicaResult) float64 { return r.SyncReconcilesPerSecond })
		row.ReplicaObjects = each("count", func(r *ReplicaResult) float64 { return float64(r.Objects) })
		row.ReplicaRetainedHeapBytes = each("bytes", func(r *ReplicaResult) float64 { return float64(r.RetainedHeapBytes) })
		row.ReplicaPeakRSSBytes = each("bytes", func(r *ReplicaResult) float64 { return float64(r.PeakRSSBytes) })
		row.ReplicaSyncDecodedShare = each("ratio", func(r *ReplicaResult) float64 { return r.SyncDecodedShare })
		row.ReplicaChurnDecodedShare = each("ratio", func(r *ReplicaResult) float64 { return r.ChurnDecodedShare })
		row.ReplicaCPUSeconds = each("s", func(r *ReplicaResult) float64 { return r.CPUSeconds })
		rr.Rows = append(rr.Rows, row)
	}
}

// textStat is StatOf with its text in unit.
func textStat(unit string, xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{Samples: []float64{}}
	}
	s := StatOf(xs)
	s.Text = FmtStat(unit, s)
	return s
}

// replicasHeadline says how the per-replica share and the aggregate rate moved
// with the replica count.
func replicasHeadline(rr *Replicas, pods int) string {
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
			heap = append(heap, fmt.Sprintf("%s (%.2f×, largest %s)", FmtBytes(mean), mean/max(first, 1), FmtBytes(row.ReplicaRetainedHeapBytes.Max)))
			share = append(share, fmt.Sprintf("%.2f (largest %.2f)", row.ReplicaChurnDecodedShare.Median, row.ReplicaChurnDecodedShare.Max))
			rate = append(rate, FmtRate(row.SyncReconcilesPerSecond.Median))
		}
		if len(counts) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("shardSelector %s, %s replica(s): retained heap per replica (total/N) %s; churn events decoded per replica (median share of the stream) %s; aggregate reconciles/s to converge %s",
			map[bool]string{true: "on", false: "off (client-side fallback)"}[filters], strings.Join(counts, " → "),
			strings.Join(heap, ", "), strings.Join(share, ", "), strings.Join(rate, ", ")))
	}
	return fmt.Sprintf("Controller replicas on %s pods, each a process on one machine: %s.", FmtCount(pods), strings.Join(parts, "; "))
}

// replicasCharts draws reconciles/s, memory and decoding per replica against the
// replica count.
func replicasCharts(rr *Replicas) []plot.Chart {
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
		suffix, colour := "", ImplOurs
		if !filters {
			suffix, colour = " (client-side fallback)", ImplClientGo
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
		FinishChart(&out[i])
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
func printReplicas(w io.Writer, r *Report) {
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
			row.SyncReconcilesPerSecond.Text, row.ChurnReconcilesPerSecond.Text, FmtBytes(row.TotalRetainedHeapBytes.Median/float64(row.Replicas)),
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
