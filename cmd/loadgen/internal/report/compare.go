package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// runFigures are the figures compared run by run, per scenario; all are
// lower-is-better.
var runFigures = map[string][]string{
	ScenarioInformer:   {"initial_sync_seconds", "delivery_p50", "delivery_p90", "delivery_p99"},
	ScenarioController: {"initial_sync_seconds", "latency_p50", "latency_p90", "latency_p99"},
}

// compareRuns returns the run-by-run comparison at pods, or nil unless both
// shardinformer and client-go ran in a scenario that has one.
func compareRuns(r *Report, pods int) *RunComparison {
	keys := runFigures[r.Scenario]
	if keys == nil || !slices.Contains(r.Settings.Impls, ImplOurs) || !slices.Contains(r.Settings.Impls, ImplClientGo) {
		return nil
	}
	defs := make([]figureDef, len(keys))
	for i, k := range keys {
		j := slices.IndexFunc(figureDefs, func(d figureDef) bool { return d.key == k })
		defs[i] = figureDefs[j]
	}
	// A run's two results are in one trial (side by side) or two (each
	// alone, the default).
	byRun := map[int]map[string]*ImplResult{}
	var runs []int
	for i := range r.Trials {
		t := &r.Trials[i]
		if t.Pods != pods {
			continue
		}
		if byRun[t.Run] == nil {
			byRun[t.Run] = map[string]*ImplResult{}
			runs = append(runs, t.Run)
		}
		for j := range t.Results {
			byRun[t.Run][t.Results[j].Impl] = &t.Results[j]
		}
	}
	slices.Sort(runs)
	c := &RunComparison{Pods: pods, Figures: keys}
	for _, d := range defs {
		c.Labels = append(c.Labels, d.label)
	}
	for _, run := range runs {
		ours, theirs := byRun[run][ImplOurs], byRun[run][ImplClientGo]
		if ours == nil || theirs == nil {
			continue
		}
		p := RunPair{Run: run, OursChurnGC: ours.ChurnGCCycles, ClientGoChurnGC: theirs.ChurnGCCycles, AtOrBelow: true}
		for _, d := range defs {
			a, _ := d.get(ours)
			b, _ := d.get(theirs)
			p.Ours, p.ClientGo = append(p.Ours, a), append(p.ClientGo, b)
			p.Text = append(p.Text, FmtValue(d.unit, a)+" / "+FmtValue(d.unit, b))
			p.AtOrBelow = p.AtOrBelow && a <= b
		}
		if p.AtOrBelow {
			c.AtOrBelow++
		}
		c.Runs = append(c.Runs, p)
	}
	if len(c.Runs) == 0 {
		return nil
	}
	return c
}

// printRuns prints the run-by-run comparison, if there is one.
func printRuns(w io.Writer, c *RunComparison) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\nRun by run at %s pods, %s / %s: at or below on every one of these figures in %d of %d runs\n",
		FmtCount(c.Pods), ImplOurs, ImplClientGo, c.AtOrBelow, len(c.Runs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s\tGC cycles during churn\tat or below on all\n", strings.Join(c.Labels, "\t"))
	for _, p := range c.Runs {
		fmt.Fprintf(tw, "%d\t%s\t%d / %d\t%s\n", p.Run, strings.Join(p.Text, "\t"), p.OursChurnGC, p.ClientGoChurnGC, yesNo(p.AtOrBelow))
	}
	tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
