package report

import (
	"fmt"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// soakSeriesDef names one sampled series. gate: its slope decides the
// verdict; the others are reported with their fit. robust: fitted by
// Theil–Sen (fitRobust) instead of least squares.
type soakSeriesDef struct {
	key, label, unit string
	gate, robust     bool
}

var soakSeries = []soakSeriesDef{
	{"heap_live_bytes", "live heap after GC", "bytes", true, false},
	// A sample taken while a watch is being restarted finds its goroutines
	// gone (7 of 26 once in the hour): one point far below a flat line,
	// which tilts a least-squares fit by several %/h and not a Theil–Sen
	// one. A leak is growth, which both see.
	{"goroutines", "goroutines", "count", true, true},
	{"heap_objects_bytes", "heap objects (runtime/metrics, before the GC)", "bytes", false, false},
	{"rss_bytes", "resident set", "bytes", false, false},
	{"objects", "objects in the cache", "count", false, false},
	{"workqueue_len", "controller work queue length", "count", false, false},
	{"fifo_queued", "fifo: keys queued, all shards", "count", false, false},
	{"fifo_entries", "fifo: entries (queued or in flight), all shards", "count", false, false},
	{"index_slots", "index: item table slots, all partitions", "count", false, false},
	{"index_tombstones", "index: item table tombstones, all partitions", "count", false, false},
	{"index_sets", "index: value sets, all partitions and indexes", "count", false, false},
	{"ring_occupancy", "rings: notifications waiting, all listeners", "count", false, false},
	{"overflow_backlog", "overflow: notifications kept plus keys coalesced", "count", false, false},
	{"overflow_coalescing", "overflow: listeners coalescing", "count", false, false},
	{"overflow_episodes", "overflow: coalescing episodes so far", "count", false, false},
	{"overflowed", "overflow: notifications that went to an overflow so far", "count", false, false},
	{"wire_interners", "wire: interners in the pool", "count", false, false},
	{"wire_interned_strings", "wire: interned strings", "count", false, false},
	{"wire_shared_values", "wire: shared values cached", "count", false, false},
	{"wire_versions", "wire: versions table entries", "count", false, false},
	{"wire_versions_dead", "wire: versions table entries awaiting a sweep", "count", false, false},
	{"relists", "relists so far (HTTP)", "count", false, false},
	{"watch_restarts", "watch restarts so far (HTTP)", "count", false, false},
	{"panics", "handler panics so far", "count", false, false},
}

// fitLine fits y = a + b·t by least squares.
func fitLine(ts, ys []float64) (a, b, seB, r2 float64) {
	n := float64(len(ts))
	var tm, ym float64
	for i := range ts {
		tm += ts[i]
		ym += ys[i]
	}
	tm, ym = tm/n, ym/n
	var sxx, sxy, syy float64
	for i := range ts {
		dt, dy := ts[i]-tm, ys[i]-ym
		sxx += dt * dt
		sxy += dt * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return ym, 0, 0, 0
	}
	b = sxy / sxx
	a = ym - b*tm
	var sse float64
	for i := range ts {
		e := ys[i] - a - b*ts[i]
		sse += e * e
	}
	if len(ts) > 2 {
		seB = math.Sqrt(sse / (n - 2) / sxx)
	}
	if syy > 0 {
		r2 = 1 - sse/syy
	}
	return a, b, seB, r2
}

// fitRobust fits y = a + b·t by Theil–Sen: b the median of the slopes of
// all pairs of samples, a the median of y − b·t; lo..hi is Sen's 95%
// interval for b (the pairwise slopes ranked ±1.96 standard deviations of
// Kendall's statistic around the median, without the correction for ties),
// and r2 the share of y's variance the line explains. A few samples off the
// line move b by a few ranks among n(n−1)/2 slopes; a least-squares b moves
// by their distance.
func fitRobust(ts, ys []float64) (a, b, lo, hi, r2 float64) {
	n := len(ts)
	var slopes []float64
	for i := range n {
		for j := i + 1; j < n; j++ {
			if ts[j] != ts[i] {
				slopes = append(slopes, (ys[j]-ys[i])/(ts[j]-ts[i]))
			}
		}
	}
	if len(slopes) == 0 {
		a, _, _, _ = fitLine(ts, ys)
		return a, 0, 0, 0, 0
	}
	slices.Sort(slopes)
	b = StatOf(slopes).Median
	res := make([]float64, n)
	for i := range n {
		res[i] = ys[i] - b*ts[i]
	}
	a = StatOf(res).Median
	m := len(slopes)
	c := 1.96 * math.Sqrt(float64(n*(n-1)*(2*n+5))/18)
	lo = slopes[max(0, min(m-1, int(math.Floor((float64(m)-c)/2))))]
	hi = slopes[max(0, min(m-1, int(math.Ceil((float64(m)+c)/2))))]
	var ym, sse, syy float64
	for _, y := range ys {
		ym += y
	}
	ym /= float64(n)
	for i := range n {
		e, d := ys[i]-a-b*ts[i], ys[i]-ym
		sse, syy = sse+e*e, syy+d*d
	}
	if syy > 0 {
		r2 = 1 - sse/syy
	}
	return a, b, lo, hi, r2
}

// tQuantile975 is Student's t 97.5% quantile for df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(table):
		return table[df-1]
	case df <= 60:
		return 2.000
	case df <= 120:
		return 1.980
	}
	return 1.960
}

// AnalyseSoak fits every series of pts from set's warm-up after ready until
// the churn's end and gives the verdicts: the gated series flat within
// ±set.MaxSlopePctPerHour, the check passed, no handler panic. Of set only
// the warm-up and the slope are read.
func AnalyseSoak(set Soak, pts []SoakPoint, readyAt, churnEnd float64, r *ImplResult) *SoakResult {
	res := &SoakResult{Pass: true, Failures: []string{}, Disturbed: []float64{}, Fits: []SoakFit{}, Samples: pts}
	if res.Samples == nil {
		res.Samples = []SoakPoint{}
	}
	res.From, res.To = readyAt+set.WarmupSeconds, churnEnd
	var fitted []SoakPoint
	for i, p := range pts {
		if p.T < res.From-1e-9 || p.T > res.To+1e-9 {
			continue
		}
		if i > 0 && p.Values["relists"] > pts[i-1].Values["relists"] {
			res.Disturbed = append(res.Disturbed, p.T)
			continue
		}
		fitted = append(fitted, p)
	}
	fail := func(format string, a ...any) {
		res.Pass = false
		res.Failures = append(res.Failures, fmt.Sprintf(format, a...))
	}
	if len(fitted) < 3 {
		fail("%d samples after the warm-up (%.0fs to %.0fs) outside relists (%d during one), need at least 3", len(fitted), res.From, res.To, len(res.Disturbed))
	}
	for _, d := range soakSeries {
		var ts, ys []float64
		for _, p := range fitted {
			if v, ok := p.Values[d.key]; ok {
				ts, ys = append(ts, p.T), append(ys, v)
			}
		}
		if len(ts) == 0 {
			continue
		}
		f := SoakFit{Series: d.key, Label: d.label, Unit: d.unit, Gate: d.gate, N: len(ts), First: ys[0], Last: ys[len(ys)-1], Min: ys[0], Max: ys[0]}
		for _, y := range ys {
			f.Mean += y
			f.Min, f.Max = math.Min(f.Min, y), math.Max(f.Max, y)
		}
		f.Mean /= float64(len(ys))
		var lo, hi float64
		if d.robust {
			f.Intercept, f.Slope, lo, hi, f.R2 = fitRobust(ts, ys)
		} else {
			var seB float64
			f.Intercept, f.Slope, seB, f.R2 = fitLine(ts, ys)
			half := tQuantile975(len(ts)-2) * seB
			if math.IsInf(half, 0) || math.IsNaN(half) {
				half = 0
			}
			lo, hi = f.Slope-half, f.Slope+half
		}
		if f.Mean != 0 {
			k := 3600 * 100 / f.Mean
			f.SlopePct, f.CILo, f.CIHi = f.Slope*k, lo*k, hi*k
		}
		f.Flat = math.Abs(f.SlopePct) <= set.MaxSlopePctPerHour
		if f.Gate && len(fitted) >= 3 && !f.Flat {
			fail("%s: slope %+.2f%%/h of its mean (95%% interval %+.2f..%+.2f), beyond ±%g%%/h", d.label, f.SlopePct, f.CILo, f.CIHi, set.MaxSlopePctPerHour)
		}
		res.Fits = append(res.Fits, f)
	}
	if !r.Check.Pass {
		fail("the cache or a handler's view is not the server's at the end: %s", strings.Join(r.Check.Details, "; "))
	}
	if r.Panics != nil && *r.Panics > 0 {
		fail("%d handler panics", *r.Panics)
	}
	return res
}

// soakSection builds the report's soak section from the trials, or nil
// when no result has a soak.
func soakSection(r *Report, set Soak) *Soak {
	out := &Soak{DurationSeconds: set.DurationSeconds, SampleEverySeconds: set.SampleEverySeconds, WarmupSeconds: set.WarmupSeconds,
		MaxSlopePctPerHour: set.MaxSlopePctPerHour, Pass: true}
	for _, t := range r.Trials {
		for _, res := range t.Results {
			if res.Soak == nil {
				continue
			}
			s := SoakImplSummary{Impl: res.Impl, Run: t.Run, Pass: res.Soak.Pass, Failures: res.Soak.Failures}
			if f, ok := res.Soak.Fit("heap_live_bytes"); ok {
				s.HeapSlope = f.SlopePct
			}
			if f, ok := res.Soak.Fit("goroutines"); ok {
				s.GoroutineSlope = f.SlopePct
			}
			out.Pass = out.Pass && s.Pass
			out.Impls = append(out.Impls, s)
		}
	}
	if len(out.Impls) == 0 {
		return nil
	}
	return out
}

// soakCharts draws every sampled series over time, one chart per series,
// each implementation's samples with its fitted line (dashed) over the
// fitted span.
func soakCharts(r *Report) []plot.Chart {
	var out []plot.Chart
	for _, d := range soakSeries {
		c := plot.Chart{ID: "soak_" + d.key, Title: "Soak: " + d.label,
			X: plot.Axis{Label: "seconds since the trial started", Unit: "s"}, Y: plot.Axis{Label: d.label, Unit: d.unit}}
		for _, t := range r.Trials {
			for _, res := range t.Results {
				if res.Soak == nil {
					continue
				}
				var pts [][2]float64
				for _, p := range res.Soak.Samples {
					if v, ok := p.Values[d.key]; ok {
						pts = append(pts, [2]float64{p.T, v})
					}
				}
				if len(pts) == 0 {
					continue
				}
				c.Series = append(c.Series, plot.Series{Name: res.Impl, Impl: res.Impl, Points: pts})
				if f, ok := res.Soak.Fit(d.key); ok && f.N >= 2 {
					line := [][2]float64{{res.Soak.From, f.Intercept + f.Slope*res.Soak.From}, {res.Soak.To, f.Intercept + f.Slope*res.Soak.To}}
					c.Series = append(c.Series, plot.Series{Name: fmt.Sprintf("%s fit %+.2f%%/h", res.Impl, f.SlopePct), Impl: res.Impl, Points: line})
				}
			}
		}
		if len(c.Series) == 0 {
			continue
		}
		if d.gate {
			c.Note = fmt.Sprintf("Gated: the fitted slope (dashed, after the warm-up) must be within ±%g%% of the mean per hour.", r.Soak.MaxSlopePctPerHour)
		}
		c = plot.Line(c)
		FinishChart(&c)
		out = append(out, c)
	}
	return out
}

// PrintSoak writes the soak's verdicts and each implementation's fits.
func PrintSoak(w io.Writer, r *Report) {
	s := r.Soak
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nSoak: %s of churn under faults, a sample every %s, fitted after a warm-up of %s; heap and goroutines must be flat within ±%g%%/h:\n",
		time.Duration(s.DurationSeconds*1e9), time.Duration(s.SampleEverySeconds*1e9), time.Duration(s.WarmupSeconds*1e9), s.MaxSlopePctPerHour)
	for _, t := range r.Trials {
		for _, res := range t.Results {
			if res.Soak == nil {
				continue
			}
			verdict := "PASS"
			if !res.Soak.Pass {
				verdict = "FAIL: " + strings.Join(res.Soak.Failures, "; ")
			}
			fmt.Fprintf(w, "  %s (run %d, %d samples, fitted %.0fs..%.0fs, %d left out as a relist began): %s\n", res.Impl, t.Run, len(res.Soak.Samples),
				res.Soak.From, res.Soak.To, len(res.Soak.Disturbed), verdict)
			fits := append([]SoakFit(nil), res.Soak.Fits...)
			sort.SliceStable(fits, func(i, j int) bool { return fits[i].Gate && !fits[j].Gate })
			for _, f := range fits {
				gate := " "
				if f.Gate {
					gate = "*"
				}
				fmt.Fprintf(w, "   %s %-50s first %12s last %12s max %12s  slope %+8.2f%%/h [%+.2f..%+.2f] r² %.2f\n", gate, f.Label,
					tickValue(f.Unit, f.First), tickValue(f.Unit, f.Last), tickValue(f.Unit, f.Max), f.SlopePct, f.CILo, f.CIHi, f.R2)
			}
		}
	}
}

// tickValue formats v in unit for the soak's table.
func tickValue(unit string, v float64) string {
	if unit == "bytes" {
		return FmtBytes(v)
	}
	return fmt.Sprintf("%.0f", v)
}

// AddSoak adds the soak section and its charts to a finished report; the
// run passes only if every implementation's soak did.
func AddSoak(r *Report, set Soak) {
	r.Soak = soakSection(r, set)
	if r.Soak == nil {
		r.Pass = false
		return
	}
	r.Pass = r.Pass && r.Soak.Pass
	r.Charts = append(r.Charts, soakCharts(r)...)
}
