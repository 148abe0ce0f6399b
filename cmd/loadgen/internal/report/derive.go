package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Finish derives everything that summarizes the trials: pass, the stacks'
// decoders and queues, figures, scale points, server cost, charts and
// headline.
func Finish(r *Report) {
	r.FinishedAt = time.Now()
	r.Pass = len(r.Trials) > 0
	for _, t := range r.Trials {
		r.Server.PopulateSeconds += t.Server.PopulateSeconds
		r.Server.PreencodeSeconds += t.Server.PreencodeSeconds
		r.Server.SetupCPUSeconds += t.Server.SetupCPUSeconds
		if t.Mode == ModeProcess {
			r.Server.CPUSeconds += t.Server.CPUSeconds
		}
		r.Server.ServerCPUSeconds += t.CPUByLabel["server"]
		r.Server.ChurnCPUSeconds += t.CPUByLabel["churn"]
		for _, res := range t.Results {
			r.Pass = r.Pass && res.Check.Pass
			for i := range r.Implementations {
				if im := &r.Implementations[i]; im.Name == res.Impl {
					im.Decoder, im.Diet, im.Queue = res.Decoder, res.Diet, res.Queue
					if res.ListWatch != "" {
						im.Options["list_watch"] = res.ListWatch
					}
				}
			}
		}
	}
	sizes := r.Settings.Sizes
	for _, pods := range sizes {
		figs := figuresAt(r, pods)
		if r.Scenario == ScenarioScale {
			r.Scale = append(r.Scale, ScalePoint{Pods: pods, Figures: figs, DidNotFit: r.UnfitAt(pods)})
		}
		// The largest size; a sweep's largest size with a result (beyond
		// it every implementation did not fit).
		if pods == sizes[len(sizes)-1] && r.Scenario != ScenarioScale || r.Scenario == ScenarioScale && len(figs) > 0 {
			r.Figures = figs
		}
	}
	r.Decomposition = decompose(r)
	r.Runs = compareRuns(r, sizes[len(sizes)-1])
	r.Charts = reportCharts(r)
	r.Headline = headline(r)
	if len(r.DidNotFit) > 0 && r.Scenario != ScenarioScale && len(r.Figures) > 0 { // a sweep's says it itself
		r.Headline += " Did not fit: " + unfitWords(r) + "."
	}
	if rr := r.Replicas; rr != nil {
		r.Pass = rr.Pass
		for _, t := range rr.Trials {
			r.Server.PopulateSeconds += t.Server.PopulateSeconds
			r.Server.PreencodeSeconds += t.Server.PreencodeSeconds
			r.Server.SetupCPUSeconds += t.Server.SetupCPUSeconds
			r.Server.CPUSeconds += t.ParentCPUSeconds
		}
		r.Charts = append(r.Charts, replicasCharts(rr)...)
		r.Headline = replicasHeadline(rr, r.Settings.Sizes[0])
	}
}

// decompose returns the 2×2 decomposition of the figures, or nil unless
// every cell of it ran.
func decompose(r *Report) []DecompositionRow {
	if !HasDecomposition(r.Settings.Impls) {
		return nil
	}
	var rows []DecompositionRow
	for _, f := range r.Figures {
		m := map[string]float64{}
		for _, n := range Decomposition {
			if s, ok := f.Values[n]; ok && s.Median > 0 {
				m[n] = s.Median
			}
		}
		if len(m) < len(Decomposition) {
			continue
		}
		cg := m[ImplClientGo]
		rows = append(rows, DecompositionRow{Key: f.Key, Label: f.Label, Better: f.Better,
			Core: m[ImplOursClientGoDecode] / cg, Wire: m[ImplClientGoWire] / cg, Both: m[ImplOurs] / cg,
			WireOnOurs: m[ImplOurs] / m[ImplOursClientGoDecode], CoreOnWire: m[ImplOurs] / m[ImplClientGoWire]})
	}
	return rows
}

// figureDef defines a figure: how to read it from one result.
type figureDef struct {
	key, label, unit, better string
	main                     bool
	scenario                 string // "" = every scenario, else only this one
	get                      func(*ImplResult) (float64, bool)
}

func always(f func(*ImplResult) float64) func(*ImplResult) (float64, bool) {
	return func(r *ImplResult) (float64, bool) { return f(r), true }
}

var figureDefs = []figureDef{
	{"ready_seconds", "time to sync and reconcile every object", "s", "lower", true, ScenarioController, always(func(r *ImplResult) float64 { return r.ReadySeconds })},
	{"initial_objects_per_second", "reconciles/s at saturation (initial backlog)", "per_s", "higher", false, ScenarioController, always(func(r *ImplResult) float64 { return r.InitialObjectsPerSecond })},
	{"initial_sync_seconds", "initial sync (informer synced)", "s", "lower", true, "", always(func(r *ImplResult) float64 { return r.InitialSyncSeconds })},
	{"reconciles_per_second", "reconciles/s during churn", "per_s", "higher", false, ScenarioController, always(func(r *ImplResult) float64 { return r.ReconcilesPerSecond })},
	{"events_per_second", "events/s (slowest handler)", "per_s", "higher", true, ScenarioInformer, always(func(r *ImplResult) float64 { return r.EventsPerSecond })},
	{"deliveries_per_second", "deliveries/s (all handlers)", "per_s", "higher", false, ScenarioInformer, always(func(r *ImplResult) float64 { return r.DeliveriesPerSecond })},
	{"latency_p50", "reconcile start latency p50", "s", "lower", false, ScenarioController, always(func(r *ImplResult) float64 { return r.Latency.P50 })},
	{"latency_p90", "reconcile start latency p90", "s", "lower", false, ScenarioController, always(func(r *ImplResult) float64 { return r.Latency.P90 })},
	{"latency_p99", "reconcile start latency p99", "s", "lower", true, ScenarioController, always(func(r *ImplResult) float64 { return r.Latency.P99 })},
	{"delivery_p50", "delivery latency p50", "s", "lower", false, ScenarioInformer, always(func(r *ImplResult) float64 { return r.Latency.P50 })},
	{"delivery_p90", "delivery latency p90", "s", "lower", false, ScenarioInformer, always(func(r *ImplResult) float64 { return r.Latency.P90 })},
	{"delivery_p99", "delivery latency p99", "s", "lower", true, ScenarioInformer, always(func(r *ImplResult) float64 { return r.Latency.P99 })},
	{"freshness_p50", "cache freshness p50 (change → in cache)", "s", "lower", false, ScenarioController, freshness(func(l *Latency) float64 { return l.P50 })},
	{"freshness_p99", "cache freshness p99 (change → in cache)", "s", "lower", false, ScenarioController, freshness(func(l *Latency) float64 { return l.P99 })},
	{"catch_up_seconds", "catch-up after churn", "s", "lower", false, "", always(func(r *ImplResult) float64 { return r.CatchUpSeconds })},
	{"reads_per_second", "cache reads/s (readers)", "per_s", "higher", false, ScenarioInformer, func(r *ImplResult) (float64, bool) { return r.ReadsPerS, r.Reads > 0 }},
	{"cpu_seconds", "CPU seconds, start → caught up", "s", "lower", true, "", func(r *ImplResult) (float64, bool) { return r.CPUSeconds, r.CPUScope != CPUScopeShared }},
	{"sync_cpu_seconds", "CPU seconds to ready", "s", "lower", false, "", func(r *ImplResult) (float64, bool) { return r.SyncCPUSeconds, r.CPUScope == CPUScopeProcess }},
	{"churn_cpu_seconds_per_event", "client CPU per churn event (ready → caught up)", "s", "lower", false, "", func(r *ImplResult) (float64, bool) {
		return r.ChurnCPUSecondsPerEvent, r.CPUScope == CPUScopeProcess && r.ChurnEvents > 0
	}},
	{"sync_gc_cpu_seconds", "GC CPU seconds to ready (estimate)", "s", "lower", false, "", func(r *ImplResult) (float64, bool) { return r.SyncGCCPUSeconds, r.CPUScope == CPUScopeProcess }},
	{"churn_gc_cpu_seconds_per_event", "GC CPU per churn event (estimate, ready → caught up)", "s", "lower", false, "", func(r *ImplResult) (float64, bool) {
		return r.ChurnGCCPUSecondsPerEvent, r.CPUScope == CPUScopeProcess && r.ChurnEvents > 0
	}},
	{"sync_sys_cpu_seconds", "kernel CPU seconds to ready", "s", "lower", false, "", func(r *ImplResult) (float64, bool) { return r.SyncSysCPUSeconds, r.CPUScope == CPUScopeProcess }},
	{"sync_page_faults", "page faults to ready", "count", "lower", false, "", func(r *ImplResult) (float64, bool) {
		return float64(r.SyncPageFaults), r.CPUScope == CPUScopeProcess
	}},
	{"retained_heap_bytes", "retained heap (informer + queue)", "bytes", "lower", true, "", always(func(r *ImplResult) float64 { return float64(r.RetainedHeapBytes) })},
	{"heap_bytes_per_object", "retained heap per cached object", "bytes", "lower", false, "", always(func(r *ImplResult) float64 { return r.HeapBytesPerObject })},
	{"peak_rss_bytes", "peak RSS of its process", "bytes", "lower", false, "", func(r *ImplResult) (float64, bool) {
		return float64(r.PeakRSSBytes), r.CPUScope == CPUScopeProcess
	}},
	{"churn_gc_cycles", "GC cycles during churn and catch-up", "count", "lower", false, "", func(r *ImplResult) (float64, bool) {
		return float64(r.ChurnGCCycles), r.CPUScope == CPUScopeProcess
	}},
	{"churn_alloc_bytes", "heap allocated during churn and catch-up", "bytes", "lower", false, "", func(r *ImplResult) (float64, bool) {
		return float64(r.ChurnAllocBytes), r.CPUScope == CPUScopeProcess
	}},
	{"churn_alloc_objects", "heap objects allocated during churn and catch-up", "count", "lower", false, "", func(r *ImplResult) (float64, bool) {
		return float64(r.ChurnAllocObjects), r.CPUScope == CPUScopeProcess
	}},
	{"churn_gc_headroom_bytes", "GC goal minus heap at the churn's start", "bytes", "higher", false, "", func(r *ImplResult) (float64, bool) {
		return float64(r.ChurnStartGoal) - float64(r.ChurnStartHeap), r.CPUScope == CPUScopeProcess && r.ChurnStartGoal > 0
	}},
	{"gc_pause_seconds", "GC pause total of its process", "s", "lower", false, "", func(r *ImplResult) (float64, bool) { return r.GCPauseSeconds, r.CPUScope == CPUScopeProcess }},
}

func freshness(f func(*Latency) float64) func(*ImplResult) (float64, bool) {
	return func(r *ImplResult) (float64, bool) {
		if r.Freshness == nil {
			return 0, false
		}
		return f(r.Freshness), true
	}
}

func (d figureDef) applies(scenario string) bool {
	if scenario == ScenarioScale || scenario == ScenarioSoak {
		scenario = ScenarioController
	}
	return d.scenario == "" || d.scenario == scenario
}

// figuresAt computes every applicable figure at pods.
func figuresAt(r *Report, pods int) []Figure {
	figs := []Figure{}
	for _, d := range figureDefs {
		if !d.applies(SweptScenario(r.Scenario, r.Settings.Path)) {
			continue
		}
		f := Figure{Key: d.key, Label: d.label, Unit: d.unit, Better: d.better, Main: d.main, Pods: pods, Values: map[string]Stat{}}
		for _, impl := range r.Settings.Impls {
			var xs []float64
			for _, res := range r.Results(impl, pods) {
				if v, ok := d.get(res); ok {
					xs = append(xs, v)
				}
			}
			if len(xs) > 0 {
				st := StatOf(xs)
				st.Text = FmtStat(d.unit, st)
				f.Values[impl] = st
			}
		}
		if len(f.Values) == 0 {
			continue
		}
		for impl, text := range r.UnfitAt(pods) {
			if _, ok := f.Values[impl]; !ok {
				if f.DidNotFit == nil {
					f.DidNotFit = map[string]string{}
				}
				f.DidNotFit[impl] = text
			}
		}
		if cg, ok := f.Values[ImplClientGo]; ok {
			for _, impl := range r.Settings.Impls {
				x, ok := f.Values[impl]
				if !ok || impl == ImplClientGo {
					continue
				}
				var cmp Comparison
				if cg.Median != 0 {
					ratio := x.Median / cg.Median
					cmp.Ratio = &ratio
				}
				cmp.Verdict = ComparisonWords[Compare(d.better, x, cg)+2]
				if f.VsClientGo == nil {
					f.VsClientGo = map[string]Comparison{}
				}
				f.VsClientGo[impl] = cmp
				if impl == ImplOurs {
					f.Ratio, f.Verdict = cmp.Ratio, VerdictOf(d.better, x, cg)
				}
			}
		}
		figs = append(figs, f)
	}
	return figs
}

// factor describes a ratio in words: "2.1× lower" / "1.3× higher".
func factor(f Figure) string {
	if f.Ratio == nil || *f.Ratio == 0 {
		return "n/a"
	}
	x := *f.Ratio
	word := "higher"
	if x < 1 {
		x, word = 1/x, "lower"
	}
	if f.Unit == "s" && f.Better == "lower" && word == "lower" {
		word = "less"
	}
	return fmt.Sprintf("%.2f× %s", x, word)
}

// headline says what won, by how much, at which size.
func headline(r *Report) string {
	how := fmt.Sprintf("%d run(s) each, %s", r.Settings.Runs, modeWords(r.Settings.Mode))
	if r.Scenario == ScenarioScale && len(r.Scale) > 1 {
		return scaleHeadline(r, how)
	}
	if len(r.Figures) == 0 {
		if len(r.DidNotFit) > 0 {
			return "No results: " + unfitWords(r) + "."
		}
		return "no results"
	}
	pods := r.Figures[0].Pods
	noun := "pods"
	if r.Settings.Resource == ResourceWidgets {
		noun = "pod-sized custom resources"
	}
	var ahead, behind, even []string
	for _, f := range r.Figures {
		if !f.Main || f.Verdict == "" {
			continue
		}
		desc := fmt.Sprintf("%s %s", f.Label, factor(f))
		switch f.Verdict {
		case VerdictOursBetter, VerdictOursLikely:
			ahead = append(ahead, desc)
		case VerdictTheirsBetter, VerdictTheirsLikely:
			behind = append(behind, desc)
		default:
			even = append(even, f.Label)
		}
	}
	if len(ahead)+len(behind)+len(even) == 0 {
		return fmt.Sprintf("%s alone at %s %s (%s).", strings.Join(r.Settings.Impls, ", "), FmtCount(pods), noun, how)
	}
	winner := "no clear difference"
	switch {
	case len(ahead) > len(behind):
		winner = "shardinformer ahead"
	case len(behind) > len(ahead):
		winner = "client-go ahead"
	case len(ahead) > 0:
		winner = "no overall winner"
	}
	if sure := func(v string) bool { return v == VerdictOursBetter || v == VerdictTheirsBetter }; winner != "no clear difference" &&
		!slices.ContainsFunc(r.Figures, func(f Figure) bool { return f.Main && sure(f.Verdict) }) {
		winner += " (no verdict beyond \"likely\")"
	}
	s := fmt.Sprintf("%s at %s %s (%s, %s scenario%s): ", winner, FmtCount(pods), noun, how, r.Scenario, pathWords(r.Settings.Path))
	var parts []string
	if len(ahead) > 0 {
		parts = append(parts, "shardinformer ahead on "+strings.Join(ahead, ", "))
	}
	if len(behind) > 0 {
		parts = append(parts, "behind on "+strings.Join(behind, ", "))
	}
	if len(even) > 0 {
		parts = append(parts, "even on "+strings.Join(even, ", "))
	}
	s += strings.Join(parts, "; ") + "."
	var shares []string
	for _, d := range r.Decomposition {
		for _, f := range r.Figures {
			if f.Key == d.Key && f.Main {
				shares = append(shares, fmt.Sprintf("%s: core %s, wire %s, both %s", d.Label, FmtRatio(d.Core), FmtRatio(d.Wire), FmtRatio(d.Both)))
			}
		}
	}
	if len(shares) > 0 {
		s += " Ratios to client-go's stack of our core alone, the wire alone and both: " + strings.Join(shares, "; ") + "."
	}
	if c := r.Runs; c != nil && len(c.Runs) > 1 {
		s += fmt.Sprintf(" Run by run, shardinformer at or below client-go on the initial sync and the latency p50, p90 and p99 in %d of %d runs.",
			c.AtOrBelow, len(c.Runs))
	}
	return s
}

// scaleHeadline is a sweep's headline: how much each main figure of each
// implementation grew from the first size to the last it fitted at, and
// where it did not fit.
func scaleHeadline(r *Report, how string) string {
	first, last := r.Scale[0], r.Scale[len(r.Scale)-1]
	var parts []string
	for _, impl := range r.Settings.Impls {
		for _, g := range first.Figures {
			b, ok := g.Values[impl]
			if !g.Main || !ok || b.Median <= 0 {
				continue
			}
			for j := len(r.Scale) - 1; j > 0; j-- {
				p := r.Scale[j]
				i := slices.IndexFunc(p.Figures, func(f Figure) bool { return f.Key == g.Key })
				if i < 0 {
					continue
				}
				if s, ok := p.Figures[i].Values[impl]; ok {
					at := ""
					if p.Pods != last.Pods {
						at = " (to " + FmtCount(p.Pods) + ")"
					}
					parts = append(parts, fmt.Sprintf("%s %s ×%.1f%s", impl, g.Label, s.Median/b.Median, at))
					break
				}
			}
		}
	}
	h := fmt.Sprintf("From %s to %s pods (×%.0f objects; %s)", FmtCount(first.Pods), FmtCount(last.Pods),
		float64(last.Pods)/float64(first.Pods), how)
	if len(parts) > 0 {
		h += ": " + strings.Join(parts, "; ")
	}
	h += "."
	if len(r.DidNotFit) > 0 {
		h += " Did not fit: " + unfitWords(r) + "."
	}
	return h
}

// pathWords names a path other than the typed one for the headline.
func pathWords(path string) string {
	if path == PathTyped || path == "" {
		return ""
	}
	return ", " + path + " path"
}

// objectsWord names what the informers cached, for the summary.
func objectsWord(resource string) string {
	if resource == ResourceWidgets {
		return "pod-sized custom resources (the simulator's " + resource + ")"
	}
	return "pods"
}

func modeWords(mode string) string {
	if mode == ModeSideBySide {
		return "side by side in one process"
	}
	return "each alone in its own process"
}

// PrintSummary writes the human-readable summary.
func PrintSummary(w io.Writer, r *Report) {
	s := r.Settings
	fmt.Fprintf(w, "\nloadgen %s scenario, %s path, on %s: %s %s in %d namespaces, %s, churn %s; %s\n",
		r.Scenario, s.Path, s.Target, joinSizes(s.Sizes), objectsWord(s.Resource), s.Namespaces, s.ContentType, churnDesc(s), modeWords(s.Mode))
	if s.Workers > 0 {
		fmt.Fprintf(w, "controller: %d workers, %s of CPU per reconcile (%d iterations), status writes %v\n",
			s.Workers, FmtDuration(s.ReconcileWork), s.ReconcileIterations, s.StatusWrites)
	}
	for _, im := range r.Implementations {
		fmt.Fprintf(w, "%s: %s, decoder %s", im.Name, im.Informer, im.Decoder)
		if im.Diet != "" {
			fmt.Fprintf(w, " (diet %s, %s workers)", im.Diet, im.Options["wire_workers"])
		}
		if im.Queue != "" {
			fmt.Fprintf(w, ", queue %s", im.Queue)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s, %d cores, GOMAXPROCS %d, %s, commit %s\n\n", r.Metadata.CPUModel, r.Metadata.NumCPU,
		r.Metadata.GOMAXPROCS, r.Metadata.GoVersion, short(r.Metadata.Commit))
	fmt.Fprintln(w, r.Headline)
	fmt.Fprintln(w)
	switch {
	case r.Scenario == ScenarioScale:
		printScale(w, r)
	case r.Replicas != nil:
		printReplicas(w, r)
	default:
		printFigures(w, r)
		printDecomposition(w, r)
		printRuns(w, r.Runs)
	}
	switch {
	case r.Server.CPUSeconds > 0 && s.Target == "cluster":
		fmt.Fprintf(w, "\nchurn writer (parent process, not in the figures): %.1f CPU s while clients ran; populate %.1f s\n",
			r.Server.CPUSeconds, r.Server.PopulateSeconds)
	case r.Server.CPUSeconds > 0:
		byLabel := "" // the replicas scenario does not profile the parent
		if r.Server.ServerCPUSeconds+r.Server.ChurnCPUSeconds > 0 {
			byLabel = fmt.Sprintf(" (server %.1f s, churn %.1f s by label)", r.Server.ServerCPUSeconds, r.Server.ChurnCPUSeconds)
		}
		fmt.Fprintf(w, "\nserver and churn writer (parent process, not in the figures): %.1f CPU s while clients ran%s; populate %.1f s, pre-encode %.1f s\n",
			r.Server.CPUSeconds, byLabel, r.Server.PopulateSeconds, r.Server.PreencodeSeconds)
	}
	for _, t := range r.Trials {
		if t.Server.APIServerSyncCPUSeconds > 0 {
			fmt.Fprintf(w, "API server (--server-pids) CPU during the sync of %s (%d pods, run %d): %.2f s\n",
				strings.Join(t.Impls, " + "), t.Pods, t.Run, t.Server.APIServerSyncCPUSeconds)
		}
	}
	for _, t := range r.Trials {
		for _, res := range t.Results {
			for _, d := range res.Check.Details {
				fmt.Fprintf(w, "  %s (%d pods, run %d): %s\n", res.Impl, t.Pods, t.Run, d)
			}
		}
	}
	printDidNotFit(w, r)
	for _, t := range r.Trials {
		for _, res := range t.Results {
			what := "handler(s)"
			if res.Queue != "" {
				what = "reconciler"
			}
			if res.Check.Pass {
				fmt.Fprintf(w, "PASS %s (%d pods, run %d): cache and %s match the server (%d keys and resourceVersions)\n",
					res.Impl, t.Pods, t.Run, what, res.Check.ServerObjects)
			} else {
				fmt.Fprintf(w, "FAIL %s (%d pods, run %d): %d cache and %d %s mismatches against the server's %d keys\n",
					res.Impl, t.Pods, t.Run, res.Check.CacheMismatches, res.Check.HandlerMismatches, what, res.Check.ServerObjects)
			}
		}
	}
}

func printFigures(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "figure"
	for _, impl := range r.Settings.Impls {
		head += "\t" + impl
	}
	// Ratio columns: shardinformer's with its verdict, then every other
	// implementation's, each against client-go's stack.
	var others []string
	both := slices.Contains(r.Settings.Impls, ImplOurs) && slices.Contains(r.Settings.Impls, ImplClientGo)
	if both {
		head += "\tours/client-go\tverdict"
	}
	if slices.Contains(r.Settings.Impls, ImplClientGo) {
		for _, impl := range r.Settings.Impls {
			if impl != ImplOurs && impl != ImplClientGo {
				others = append(others, impl)
				head += "\t" + impl + "/client-go"
			}
		}
	}
	fmt.Fprintln(tw, head)
	ratio := func(x *float64) string {
		if x == nil {
			return "-"
		}
		return FmtRatio(*x)
	}
	for _, f := range r.Figures {
		line := f.Label
		for _, impl := range r.Settings.Impls {
			line += "\t" + f.Values[impl].Text
		}
		if both {
			line += "\t" + ratio(f.Ratio) + "\t" + f.Verdict
		}
		for _, impl := range others {
			line += "\t" + ratio(f.VsClientGo[impl].Ratio)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// printDecomposition prints the 2×2 of cores and decoders, if it ran.
func printDecomposition(w io.Writer, r *Report) {
	if len(r.Decomposition) == 0 {
		return
	}
	fmt.Fprintf(w, "\nWhere the difference comes from (ratios of medians; core = %s / %s, wire = %s / %s, both = %s / %s):\n",
		ImplOursClientGoDecode, ImplClientGo, ImplClientGoWire, ImplClientGo, ImplOurs, ImplClientGo)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tcore alone\twire alone\tboth\twire on our core\tour core on the wire")
	for _, d := range r.Decomposition {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Label, FmtRatio(d.Core), FmtRatio(d.Wire), FmtRatio(d.Both), FmtRatio(d.WireOnOurs), FmtRatio(d.CoreOnWire))
	}
	tw.Flush()
}

// printScale prints, per implementation, each figure at every size (or
// why it has none there: "did not fit in N GiB") and its growth from the
// first size to the last it has a value at.
func printScale(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, impl := range r.Settings.Impls {
		head := impl
		for _, p := range r.Scale {
			head += "\t" + FmtCount(p.Pods)
		}
		fmt.Fprintln(tw, head+"\tgrowth (last/first)")
		for _, key := range scaleKeys(r.Scale) {
			line := figureDefs[slices.IndexFunc(figureDefs, func(d figureDef) bool { return d.key == key })].label
			var first, last float64
			n := 0 // sizes with a value
			for _, p := range r.Scale {
				i := slices.IndexFunc(p.Figures, func(f Figure) bool { return f.Key == key })
				var v Stat
				ok := i >= 0
				if ok {
					v, ok = p.Figures[i].Values[impl]
				}
				switch {
				case ok:
					line += "\t" + v.Text
					if n == 0 {
						first = v.Median
					}
					last = v.Median
					n++
				case p.DidNotFit[impl] != "":
					line += "\t" + p.DidNotFit[impl]
				default:
					line += "\t-"
				}
			}
			if first > 0 && n > 1 {
				line += fmt.Sprintf("\t×%.1f", last/first)
			}
			fmt.Fprintln(tw, line)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// scaleKeys are the keys of the figures of any size of a sweep, in
// figureDefs' order.
func scaleKeys(points []ScalePoint) []string {
	var keys []string
	for _, d := range figureDefs {
		if slices.ContainsFunc(points, func(p ScalePoint) bool {
			return slices.ContainsFunc(p.Figures, func(f Figure) bool { return f.Key == d.key })
		}) {
			keys = append(keys, d.key)
		}
	}
	return keys
}

func joinSizes(sizes []int) string {
	var s []string
	for _, n := range sizes {
		s = append(s, FmtCount(n))
	}
	return strings.Join(s, ", ")
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	if commit == "" {
		return "unknown"
	}
	return commit
}

func churnDesc(s Settings) string {
	if s.ChurnDuration <= 0 && s.ChurnEvents <= 0 {
		return "none"
	}
	var parts []string
	if s.ChurnRate > 0 {
		parts = append(parts, fmt.Sprintf("%.0f/s", s.ChurnRate))
	} else {
		parts = append(parts, "as fast as possible")
	}
	if s.ChurnDuration > 0 {
		parts = append(parts, "for "+FmtDuration(s.ChurnDuration))
	}
	if s.ChurnEvents > 0 {
		parts = append(parts, fmt.Sprintf("up to %d events", s.ChurnEvents))
	}
	return strings.Join(parts, " ") + " mix " + s.Mix
}

// printDidNotFit prints the trials that did not fit, beside the checks.
func printDidNotFit(w io.Writer, r *Report) {
	for _, d := range r.DidNotFit {
		if d.NotRun {
			fmt.Fprintf(w, "DID NOT FIT %s (%d pods, run %d): %s; %s\n", d.Impl, d.Pods, d.Run, d.Text, d.Reason)
			continue
		}
		fmt.Fprintf(w, "DID NOT FIT %s (%d pods, run %d): %s: %s, during %s after %.1f s; not checked\n",
			d.Impl, d.Pods, d.Run, d.Text, d.Reason, d.Phase, d.Seconds)
	}
}

// unfitWords names, per implementation, the first size it did not fit at:
// "client-go did not fit in 20 GiB at 1M pods".
func unfitWords(r *Report) string {
	var parts []string
	seen := map[string]bool{}
	for _, d := range r.DidNotFit {
		if !seen[d.Impl] {
			seen[d.Impl] = true
			parts = append(parts, fmt.Sprintf("%s %s at %s pods", d.Impl, d.Text, FmtCount(d.Pods)))
		}
	}
	return strings.Join(parts, "; ")
}
