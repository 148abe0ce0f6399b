package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/faults"
	"github.com/shardinformer/shardinformer/wire"
)

// The soak scenario (--scenario soak, make soak): the controller scenario
// held for --soak (default 1h) of churn under faults, each implementation
// alone in its process, one after the other. From the moment it is ready,
// each process samples every --soak-sample-every its live heap after a
// forced GC, its goroutines and the sizes of the long-lived structures the
// library exposes (wire's interners and versions table, the shards' fifo
// entries, the index partitions' tables and tombstones, the rings and
// overflows); the parent fits a line to each series after --soak-warmup
// (least squares; Theil–Sen for the goroutines) and fails the run when the
// heap's or the goroutines' slope is beyond ±--soak-max-slope percent per
// hour of their mean, when the cache is not the server's at the end (keys
// and resourceVersions) or a handler panicked.

const scenarioSoak = "soak"

// soakDefaultFaults is the soak's fault spec unless --faults says
// otherwise: every kind, spaced so that at 100k pods relists (a 410, a cut
// list) do not follow each other faster than an informer lists.
const soakDefaultFaults = "cut=0.02:every=30s,stall=0.01:2s:every=1m,500=0.01:every=1m,429=0.01:1s:every=1m,410=0.005:every=5m,seed=1"

// soakDefaultRate is the soak's churn rate unless --churn-rate says
// otherwise (events/s, creates:updates:deletes 1:8:1 with the pod count
// held steady).
const soakDefaultRate = 500

// soakConfig is the soak scenario's flags.
type soakConfig struct {
	duration time.Duration // churn under faults
	every    time.Duration // sampling period
	warmup   time.Duration // samples before this (from ready) are not fitted; 0 = duration/6
	maxSlope float64       // percent of the mean per hour
}

// soakFlags registers the soak scenario's flags into s.
func soakFlags(fs *flag.FlagSet, s *soakConfig) {
	fs.DurationVar(&s.duration, "soak", time.Hour, "soak scenario: how long the churn (and the faults) last, after every implementation's initial sync")
	fs.DurationVar(&s.every, "soak-sample-every", time.Minute, "soak scenario: how often each implementation's process samples its live heap (after a forced GC), goroutines and long-lived structures")
	fs.DurationVar(&s.warmup, "soak-warmup", 0, "soak scenario: samples in this time after an implementation is ready are shown but not fitted; 0 = a sixth of --soak")
	fs.Float64Var(&s.maxSlope, "soak-max-slope", 2, "soak scenario: the most the fitted slope of the live heap (least squares) and of the goroutines (Theil–Sen) may be, in percent of their mean per hour, either way")
}

// applySoak completes c for the soak scenario: the churn lasts --soak,
// keeps the pod count steady, and runs under --faults (soakDefaultFaults
// unless given; --faults none for none); one run unless --runs is given.
func (c *config) applySoak(fs *flag.FlagSet) []error {
	if c.scenario != scenarioSoak {
		return nil
	}
	var errs []error
	s := &c.soak
	if s.duration <= 0 || s.every <= 0 || s.warmup < 0 || s.maxSlope <= 0 {
		errs = append(errs, fmt.Errorf("--soak %v, --soak-sample-every %v, --soak-warmup %v, --soak-max-slope %v: want positive values (warm-up: 0 or more)",
			s.duration, s.every, s.warmup, s.maxSlope))
	}
	if s.warmup == 0 {
		s.warmup = s.duration / 6
	}
	if s.warmup >= s.duration {
		errs = append(errs, fmt.Errorf("--soak-warmup %v: must be shorter than --soak %v", s.warmup, s.duration))
	}
	if n := int((s.duration - s.warmup) / s.every); s.every > 0 && n < 3 {
		errs = append(errs, fmt.Errorf("--soak %v, --soak-warmup %v, --soak-sample-every %v: %d samples after the warm-up, need at least 3 to fit a slope", s.duration, s.warmup, s.every, n))
	}
	if c.sideBySide {
		errs = append(errs, fmt.Errorf("--scenario soak: not --side-by-side (each implementation's heap and goroutines must be its own)"))
	}
	if flagSet(fs, "churn-events") || flagSet(fs, "churn-duration") {
		errs = append(errs, fmt.Errorf("--scenario soak: --soak sets the churn's length, not --churn-events or --churn-duration"))
	}
	if !flagSet(fs, "churn-rate") {
		c.churnRate = soakDefaultRate
	}
	if c.churnRate <= 0 {
		errs = append(errs, fmt.Errorf("--scenario soak: --churn-rate %v: want a rate (events/s)", c.churnRate))
	}
	c.churnDuration, c.churnEvents, c.steadyPods = s.duration, 0, true
	if !flagSet(fs, "runs") {
		c.runs = 1
	}
	switch spec := fs.Lookup("faults").Value.String(); {
	case spec == "none":
		c.faults = nil
	case !flagSet(fs, "faults"):
		fc, err := faults.ParseSpec(soakDefaultFaults)
		if err != nil {
			errs = append(errs, err)
		}
		c.faults = &fc
	}
	return errs
}

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

// soakSample reads c's process and structures now: a forced GC first, so
// that the live heap is the heap the last cycle marked (runtime/metrics
// /gc/heap/live:bytes).
func (c *client) soakSample() report.SoakPoint {
	before := heapObjects()
	runtime.GC()
	v := map[string]float64{
		"heap_live_bytes":    float64(runtimeMetric("/gc/heap/live:bytes")),
		"heap_objects_bytes": float64(before),
		"goroutines":         float64(runtime.NumGoroutine()),
		"rss_bytes":          float64(rss()),
		"objects":            float64(len(c.inf.GetStore().ListKeys())),
	}
	if c.ctl != nil {
		v["workqueue_len"] = float64(c.ctl.queue.Len())
	}
	if c.reqs != nil {
		r := c.reqs.report()
		v["relists"], v["watch_restarts"] = float64(r.Relists), float64(r.WatchRestarts)
	}
	if c.counts != nil {
		v["overflow_episodes"] = float64(c.counts.episodes.Load())
		v["overflowed"] = float64(c.counts.overflow.Load())
		v["panics"] = float64(c.counts.panics.Load())
	}
	if c.ours != nil {
		st := c.ours.Stats()
		var queued, entries, slots, tombs, sets, ring, backlog, coalescing int
		for _, s := range st.Shards {
			queued += s.Queued
			entries += s.Entries
			slots += s.Table.Slots
			tombs += s.Table.Tombstones
			sets += s.Table.IndexSets
		}
		for _, l := range st.Listeners {
			ring += l.InRing
			backlog += l.InOverflow
			if l.Coalescing {
				coalescing++
			}
		}
		for k, n := range map[string]int{"fifo_queued": queued, "fifo_entries": entries, "index_slots": slots, "index_tombstones": tombs,
			"index_sets": sets, "ring_occupancy": ring, "overflow_backlog": backlog, "overflow_coalescing": coalescing} {
			v[k] = float64(n)
		}
		if w, ok := c.ours.ListerWatcher().(interface{ Stats() wire.Stats }); ok {
			ws := w.Stats()
			v["wire_interners"], v["wire_interned_strings"], v["wire_shared_values"] = float64(ws.Interners), float64(ws.InternedStrings), float64(ws.SharedValues)
			v["wire_versions"], v["wire_versions_dead"] = float64(ws.Versions), float64(ws.VersionsDead)
		}
	}
	return report.SoakPoint{At: time.Now().UnixNano(), Values: v}
}

// soakSampler is a client's soak sampling goroutine: a point at once, then
// every period, until stop.
type soakSampler struct {
	quit, exited chan struct{}
	once         sync.Once
}

// heapDir, when not empty (--profile heap), receives a heap profile taken
// after each sample's forced GC, soak-heap-<seconds since ready, to the millisecond>s.pprof, so
// that two points of the process can be diffed (go tool pprof -diff_base).
func startSoakSampler(c *client, every time.Duration, heapDir string, emit func(message)) *soakSampler {
	s := &soakSampler{quit: make(chan struct{}), exited: make(chan struct{})}
	go func() { // the client's soak sampler goroutine; stop waits for it
		defer close(s.exited)
		tick := time.NewTicker(every)
		defer tick.Stop()
		start := time.Now()
		for {
			p := c.soakSample()
			if heapDir != "" {
				// to the millisecond: a sample late on a loaded machine is followed at once by the next
				name := filepath.Join(heapDir, fmt.Sprintf("soak-heap-%09.3fs.pprof", time.Since(start).Seconds()))
				if err := writeProfile("heap", name); err != nil { // a missing profile does not stop the soak
					fmt.Fprintf(os.Stderr, "loadgen: --profile heap: %v\n", err)
				}
			}
			emit(message{Type: msgSoak, Soak: &p})
			select {
			case <-s.quit:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampler and waits for it; nil-safe.
func (s *soakSampler) stop() {
	if s == nil {
		return
	}
	s.once.Do(func() { close(s.quit) })
	<-s.exited
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
	b = report.StatOf(slopes).Median
	res := make([]float64, n)
	for i := range n {
		res[i] = ys[i] - b*ts[i]
	}
	a = report.StatOf(res).Median
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

// analyseSoak fits every series of pts from warm-up after ready until the
// churn's end and gives the verdicts: the gated series flat within
// ±maxSlope %/h, the check passed, no handler panic.
func analyseSoak(sc soakConfig, pts []report.SoakPoint, readyAt, churnEnd float64, r *report.ImplResult) *report.SoakResult {
	res := &report.SoakResult{Pass: true, Failures: []string{}, Disturbed: []float64{}, Fits: []report.SoakFit{}, Samples: pts}
	if res.Samples == nil {
		res.Samples = []report.SoakPoint{}
	}
	res.From, res.To = readyAt+sc.warmup.Seconds(), churnEnd
	var fitted []report.SoakPoint
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
		f := report.SoakFit{Series: d.key, Label: d.label, Unit: d.unit, Gate: d.gate, N: len(ts), First: ys[0], Last: ys[len(ys)-1], Min: ys[0], Max: ys[0]}
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
		f.Flat = math.Abs(f.SlopePct) <= sc.maxSlope
		if f.Gate && len(fitted) >= 3 && !f.Flat {
			fail("%s: slope %+.2f%%/h of its mean (95%% interval %+.2f..%+.2f), beyond ±%g%%/h", d.label, f.SlopePct, f.CILo, f.CIHi, sc.maxSlope)
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
func soakSection(r *report.Report, sc soakConfig) *report.Soak {
	out := &report.Soak{DurationSeconds: sc.duration.Seconds(), SampleEverySeconds: sc.every.Seconds(), WarmupSeconds: sc.warmup.Seconds(),
		MaxSlopePctPerHour: sc.maxSlope, Pass: true}
	for _, t := range r.Trials {
		for _, res := range t.Results {
			if res.Soak == nil {
				continue
			}
			s := report.SoakImplSummary{Impl: res.Impl, Run: t.Run, Pass: res.Soak.Pass, Failures: res.Soak.Failures}
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
func soakCharts(r *report.Report) []plot.Chart {
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
		report.FinishChart(&c)
		out = append(out, c)
	}
	return out
}

// printSoak writes the soak's verdicts and each implementation's fits.
func printSoak(w io.Writer, r *report.Report) {
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
			fits := append([]report.SoakFit(nil), res.Soak.Fits...)
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
		return report.FmtBytes(v)
	}
	return fmt.Sprintf("%.0f", v)
}

// addSoak adds the soak section and its charts to a finished report; the
// run passes only if every implementation's soak did.
func addSoak(r *report.Report, sc soakConfig) {
	r.Soak = soakSection(r, sc)
	if r.Soak == nil {
		r.Pass = false
		return
	}
	r.Pass = r.Pass && r.Soak.Pass
	r.Charts = append(r.Charts, soakCharts(r)...)
}
