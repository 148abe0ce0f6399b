package main

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
)

// medianRun returns impl's result at pods whose key figure is the median of
// its runs, and the trial it belongs to.
func (r *report) medianRun(impl string, pods int) (*implResult, *trialReport) {
	type run struct {
		res *implResult
		t   *trialReport
	}
	var runs []run
	for i := range r.Trials {
		t := &r.Trials[i]
		if t.Pods != pods {
			continue
		}
		for j := range t.Results {
			if t.Results[j].Impl == impl {
				runs = append(runs, run{&t.Results[j], t})
			}
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(runs, func(a, b run) int { return cmp.Compare(a.res.ReadySeconds, b.res.ReadySeconds) })
	m := runs[(len(runs)-1)/2]
	return m.res, m.t
}

// rates resamples a cumulative count (points t, count) into a rate per
// window of w seconds on [from, to): only whole windows with samples at
// both ends, so the line does not fall to zero at a partial last window.
func rates(pts [][2]float64, from, to, w float64) [][2]float64 {
	if len(pts) < 2 {
		return nil
	}
	at := func(t float64) float64 { // linear interpolation of the count at t
		i, _ := slices.BinarySearchFunc(pts, t, func(p [2]float64, t float64) int { return cmp.Compare(p[0], t) })
		switch {
		case i == 0:
			return pts[0][1]
		case i >= len(pts):
			return pts[len(pts)-1][1]
		}
		a, b := pts[i-1], pts[i]
		if b[0] == a[0] {
			return b[1]
		}
		return a[1] + (b[1]-a[1])*(t-a[0])/(b[0]-a[0])
	}
	to = math.Min(to, pts[len(pts)-1][0])
	from = math.Max(from, pts[0][0])
	var out [][2]float64
	for t := from; t+w <= to+1e-9; t += w {
		out = append(out, [2]float64{t + w - from, (at(t+w) - at(t)) / w})
	}
	return out
}

// windowFor returns the rate window for a span of s seconds: 1 s, shorter
// for short spans (at least two sampling periods), longer beyond 200 s.
func windowFor(s float64) float64 {
	return math.Max(0.2, math.Min(math.Max(1, s/200), s/10))
}

// charts builds the report's charts.
func (r *report) charts() []plot.Chart {
	out := []plot.Chart{}
	if len(r.Figures) == 0 {
		return out
	}
	pods := r.Figures[0].Pods
	ctl := sweptScenario(r.Scenario, r.Settings.Path) != scenarioInformer
	size := fmtCount(pods) + " pods"

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
		res, t := r.medianRun(impl, pods)
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
		w := windowFor(res.Timeline[len(res.Timeline)-1].T - t.ChurnStart)
		throughput.Series = append(throughput.Series, plot.Series{Name: impl + what, Impl: impl,
			Points: rates(counts, t.ChurnStart, math.Inf(1), w)})
		var em [][2]float64
		for _, e := range t.Emitted {
			em = append(em, [2]float64{e.T, float64(e.Emitted)})
		}
		if ch := rates(em, t.ChurnStart, t.ChurnEnd, w); len(ch) > 0 && (impl == r.Settings.Impls[0] || t.Mode == modeProcess) {
			throughput.Series = append(throughput.Series, plot.Series{Name: "churn writes/s (" + impl + "'s run)", Impl: "churn", Points: ch})
		}
		if res.CPUScope == cpuScopeProcess {
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
	cdf := func(id, title string, get func(*implResult) *latencyRep) {
		c := plot.Chart{ID: id, Title: title + ", " + size + ", all runs", X: plot.Axis{Label: "seconds (log scale)", Unit: "s", Log: true},
			Y: plot.Axis{Label: "% of changes at or below", Unit: "percent"}}
		for _, impl := range r.Settings.Impls {
			byLe := map[float64]uint64{}
			var n uint64
			for _, res := range r.results(impl, pods) {
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
		cdf("latency", "Reconcile start latency after a change (cumulative)", func(r *implResult) *latencyRep { return &r.Latency })
		cdf("freshness", "Cache freshness: change → in the cache (cumulative)", func(r *implResult) *latencyRep { return r.Freshness })
	} else {
		cdf("latency", "Delivery latency: change → handler (cumulative)", func(r *implResult) *latencyRep { return &r.Latency })
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
					i := slices.IndexFunc(p.Figures, func(f figure) bool { return f.Key == key })
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
		finishChart(&out[i])
	}
	return out
}

// finishChart drops empty series and labels the ticks.
func finishChart(c *plot.Chart) {
	c.Series = slices.DeleteFunc(c.Series, func(s plot.Series) bool { return len(s.Points) == 0 })
	if c.Bars == nil {
		c.Bars = []plot.Bar{}
	}
	for _, a := range []*plot.Axis{&c.X, &c.Y} {
		a.Labels = []string{}
		for _, t := range a.Ticks {
			a.Labels = append(a.Labels, tickLabel(a.Unit, t))
		}
	}
}

// tickLabel formats a tick value in unit (the page has the same rules).
func tickLabel(unit string, v float64) string {
	switch unit {
	case "percent":
		return fmt.Sprintf("%g%%", v)
	case "count":
		return fmtCount(int(v))
	case "per_s":
		if v >= 1000 {
			return fmt.Sprintf("%gk/s", v/1000)
		}
		return fmt.Sprintf("%g/s", v)
	case "s":
		switch {
		case v == 0:
			return "0"
		case v < 1e-3:
			return fmt.Sprintf("%gµs", math.Round(v*1e9)/1e3)
		case v < 1:
			return fmt.Sprintf("%gms", math.Round(v*1e6)/1e3)
		}
		return fmt.Sprintf("%gs", v)
	case "bytes":
		for _, u := range []struct {
			n    float64
			name string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if v >= u.n {
				return fmt.Sprintf("%g %s", math.Round(v/u.n*100)/100, u.name)
			}
		}
		return fmt.Sprintf("%g B", v)
	}
	return fmtValue(unit, v)
}
