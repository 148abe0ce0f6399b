package report

import (
	"fmt"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
	"math"
	"slices"
	"strings"
)

// reportCharts builds the report's charts.
func reportCharts(r *Report) []plot.Chart {
	out := []plot.Chart{}
	if len(r.Figures) == 0 {
		return out
	}
	pods := r.Figures[0].Pods
	ctl := SweptScenario(r.Scenario, r.Settings.Path) != ScenarioInformer
	size := FmtCount(pods) + " pods"

	// Initial sync, median run of each implementation.
	sync := plot.Chart{ID: "sync", Title: "Initial sync (median run by time to ready), " + size,
		X: plot.Axis{Label: "seconds since the informer started", Unit: "s"}, Y: plot.Axis{Label: "objects", Unit: "count"}}
	throughput := plot.Chart{ID: "throughput", Title: "Throughput during and after the churn (median run)",
		X: plot.Axis{Label: "seconds since the churn started", Unit: "s"}, Y: plot.Axis{Label: "per second", Unit: "per_s"}}
	latWhat := "delivery"
	if ctl {
		latWhat = "reconcile start"
	}
	latT := plot.Chart{ID: "latency_timeline", Title: "The " + latWhat + " latency over time: p99 of each 0.1 s sample (median run)",
		X: plot.Axis{Label: "seconds since the churn started", Unit: "s"}, Y: plot.Axis{Label: "p99 (log scale)", Unit: "s", Log: true}}
	var gcNotes []string
	heapT := plot.Chart{ID: "heap_timeline", Title: "Heap of the implementation's process over time (median run)",
		X: plot.Axis{Label: "seconds since the informer started", Unit: "s"}, Y: plot.Axis{Label: "heap objects", Unit: "bytes"}}
	for _, impl := range r.Settings.Impls {
		res, t := r.MedianRun(impl, pods)
		if res == nil {
			continue
		}
		var synced, done, heap, counts [][2]float64
		for _, p := range res.Timeline {
			if p.T <= res.ReadyAt+0.05 {
				synced = append(synced, [2]float64{p.T, float64(p.Synced)})
				done = append(done, [2]float64{p.T, float64(p.Done)})
			}
			heap = append(heap, [2]float64{p.T, float64(p.Heap)})
			c := p.Observed
			if ctl {
				c = p.Done
			}
			counts = append(counts, [2]float64{p.T, float64(c)})
		}
		name := impl + " handled"
		if ctl {
			name = impl + " notified"
		}
		sync.Series = append(sync.Series, plot.Series{Name: name, Impl: impl, Points: synced})
		if ctl {
			sync.Series = append(sync.Series, plot.Series{Name: impl + " reconciled", Impl: impl, Points: done})
		}
		what := " events seen/s"
		if ctl {
			what = " reconciles/s"
		}
		w := WindowFor(res.Timeline[len(res.Timeline)-1].T - t.ChurnStart)
		throughput.Series = append(throughput.Series, plot.Series{Name: impl + what, Impl: impl,
			Points: Rates(counts, t.ChurnStart, math.Inf(1), w)})
		var em [][2]float64
		for _, e := range t.Emitted {
			em = append(em, [2]float64{e.T, float64(e.Emitted)})
		}
		if ch := Rates(em, t.ChurnStart, t.ChurnEnd, w); len(ch) > 0 && (impl == r.Settings.Impls[0] || t.Mode == ModeProcess) {
			throughput.Series = append(throughput.Series, plot.Series{Name: "churn writes/s (" + impl + "'s run)", Impl: "churn", Points: ch})
		}
		if res.CPUScope == CPUScopeProcess {
			heapT.Series = append(heapT.Series, plot.Series{Name: impl, Impl: impl, Points: heap})
			gcNotes = append(gcNotes, fmt.Sprintf("%s %d", impl, res.ChurnGCCycles))
		}
		var p99 [][2]float64
		for _, p := range res.Timeline {
			if p.LatencyCount > 0 && p.T >= t.ChurnStart {
				p99 = append(p99, [2]float64{p.T - t.ChurnStart, p.LatencyP99})
			}
		}
		if len(p99) > 0 {
			latT.Series = append(latT.Series, plot.Series{Name: impl + " p99", Impl: impl, Points: p99})
		}
	}
	if len(gcNotes) > 0 {
		latT.Note = "GC cycles in the churn and catch-up of these runs: " + strings.Join(gcNotes, ", ") +
			" (a cycle's marking takes CPU from delivery)"
	}
	out = append(out, plot.Line(sync), plot.Line(throughput), plot.Line(latT))

	// Latency distributions, every run merged.
	cdf := func(id, title string, get func(*ImplResult) *Latency) {
		c := plot.Chart{ID: id, Title: title + ", " + size + ", all runs", X: plot.Axis{Label: "seconds (log scale)", Unit: "s", Log: true},
			Y: plot.Axis{Label: "% of changes at or below", Unit: "percent"}}
		for _, impl := range r.Settings.Impls {
			byLe := map[float64]uint64{}
			var n uint64
			for _, res := range r.Results(impl, pods) {
				if l := get(res); l != nil {
					for _, b := range l.Buckets {
						byLe[b.Le] += b.Count
						n += b.Count
					}
				}
			}
			if n == 0 {
				continue
			}
			les := slices.Sorted(func(yield func(float64) bool) {
				for le := range byLe {
					if !yield(le) {
						return
					}
				}
			})
			var cum uint64
			s := plot.Series{Name: impl, Impl: impl}
			for _, le := range les {
				cum += byLe[le]
				s.Points = append(s.Points, [2]float64{le, 100 * float64(cum) / float64(n)})
			}
			c.Series = append(c.Series, s)
		}
		if len(c.Series) > 0 {
			c = plot.Line(c)
			c.Y = plot.Axis{Label: c.Y.Label, Unit: "percent", Min: 0, Max: 100, Ticks: []float64{0, 25, 50, 75, 90, 100}}
			out = append(out, c)
		}
	}
	if ctl {
		cdf("latency", "Reconcile start latency after a change (cumulative)", func(r *ImplResult) *Latency { return &r.Latency })
		cdf("freshness", "Cache freshness: change → in the cache (cumulative)", func(r *ImplResult) *Latency { return r.Freshness })
	} else {
		cdf("latency", "Delivery latency: change → handler (cumulative)", func(r *ImplResult) *Latency { return &r.Latency })
	}

	// Per-implementation resources: bars with min–max.
	for _, key := range []string{"retained_heap_bytes", "cpu_seconds"} {
		for _, f := range r.Figures {
			if f.Key != key {
				continue
			}
			c := plot.Chart{ID: key, Title: f.Label + ", " + size + " (median, min–max)", Y: plot.Axis{Label: f.Label, Unit: f.Unit}}
			for _, impl := range r.Settings.Impls {
				if s, ok := f.Values[impl]; ok {
					c.Bars = append(c.Bars, plot.Bar{Name: impl, Impl: impl, Value: s.Median, Lo: s.Min, Hi: s.Max})
				}
			}
			out = append(out, plot.Bars(c))
		}
	}
	if len(heapT.Series) > 0 {
		out = append(out, plot.Line(heapT))
	}

	// Scale: how each figure grows with the object count, on log–log axes;
	// an implementation's line ends at the last size it fitted at (the
	// table says "did not fit in N GiB" beyond).
	if len(r.Scale) > 1 {
		for _, key := range scaleKeys(r.Scale) {
			d := figureDefs[slices.IndexFunc(figureDefs, func(d figureDef) bool { return d.key == key })]
			c := plot.Chart{ID: "scale_" + key, Title: d.label + " by object count",
				X: plot.Axis{Label: "pods (log scale)", Unit: "count", Log: true}, Y: plot.Axis{Label: d.label + " (log scale)", Unit: d.unit, Log: true}}
			// A figure that is 0 at a size where the implementation ran (GC
			// cycles during a short churn, say) has no place on log–log
			// axes: the table has it.
			whole, longest := true, 0
			for _, impl := range r.Settings.Impls {
				s := plot.Series{Name: impl, Impl: impl}
				ran := 0
				for _, p := range r.Scale {
					i := slices.IndexFunc(p.Figures, func(f Figure) bool { return f.Key == key })
					if i < 0 {
						continue
					}
					if v, ok := p.Figures[i].Values[impl]; ok {
						ran++
						if v.Median > 0 {
							s.Points = append(s.Points, [2]float64{float64(p.Pods), v.Median})
						}
					}
				}
				whole = whole && len(s.Points) == ran
				longest = max(longest, len(s.Points))
				if len(s.Points) > 0 {
					c.Series = append(c.Series, s)
				}
			}
			if whole && longest > 1 {
				if len(r.DidNotFit) > 0 {
					c.Note = "A line ends where its implementation did not fit: " + unfitWords(r)
				}
				out = append(out, plot.Line(c))
			}
		}
	}
	for i := range out {
		FinishChart(&out[i])
	}
	return out
}
