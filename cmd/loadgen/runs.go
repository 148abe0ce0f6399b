package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// runComparison sets shardinformer against client-go run by run on the
// figures a user compares first: the initial sync and the scenario's latency
// quantiles. Medians can tie while single runs split, and a target stated as
// "at or below in k of n runs" is read off the runs, not the medians. The
// collections each process ran during the churn are shown beside them: on
// two cores one cycle decides a run's p90 and p99.
type runComparison struct {
	Pods    int       `json:"pods"`
	Figures []string  `json:"figures"` // figure keys, the order of each run's values
	Labels  []string  `json:"labels"`  // their labels
	Runs    []runPair `json:"runs"`
	// AtOrBelow counts the runs where shardinformer is at or below
	// client-go on every figure.
	AtOrBelow int `json:"at_or_below"`
}

// runPair is one run of both implementations at the same size.
type runPair struct {
	Run      int       `json:"run"`
	Ours     []float64 `json:"ours"`
	ClientGo []float64 `json:"client_go"`
	Text     []string  `json:"text"` // "ours / client-go" per figure, formatted in its unit
	// Churn GC cycles of each process (trials in a process of their own).
	OursChurnGC     uint64 `json:"ours_churn_gc_cycles"`
	ClientGoChurnGC uint64 `json:"client_go_churn_gc_cycles"`
	AtOrBelow       bool   `json:"at_or_below"`
}

// runFigures are the figures compared run by run, per scenario; all are
// lower-is-better.
var runFigures = map[string][]string{
	scenarioInformer:   {"initial_sync_seconds", "delivery_p50", "delivery_p90", "delivery_p99"},
	scenarioController: {"initial_sync_seconds", "latency_p50", "latency_p90", "latency_p99"},
}

// compareRuns returns the run-by-run comparison at pods, or nil unless both
// shardinformer and client-go ran in a scenario that has one.
func (r *report) compareRuns(pods int) *runComparison {
	keys := runFigures[r.Scenario]
	if keys == nil || !slices.Contains(r.Settings.Impls, implOurs) || !slices.Contains(r.Settings.Impls, implClientGo) {
		return nil
	}
	defs := make([]figureDef, len(keys))
	for i, k := range keys {
		j := slices.IndexFunc(figureDefs, func(d figureDef) bool { return d.key == k })
		defs[i] = figureDefs[j]
	}
	// A run's two results are in one trial (side by side) or two (each
	// alone, the default).
	byRun := map[int]map[string]*implResult{}
	var runs []int
	for i := range r.Trials {
		t := &r.Trials[i]
		if t.Pods != pods {
			continue
		}
		if byRun[t.Run] == nil {
			byRun[t.Run] = map[string]*implResult{}
			runs = append(runs, t.Run)
		}
		for j := range t.Results {
			byRun[t.Run][t.Results[j].Impl] = &t.Results[j]
		}
	}
	slices.Sort(runs)
	c := &runComparison{Pods: pods, Figures: keys}
	for _, d := range defs {
		c.Labels = append(c.Labels, d.label)
	}
	for _, run := range runs {
		ours, theirs := byRun[run][implOurs], byRun[run][implClientGo]
		if ours == nil || theirs == nil {
			continue
		}
		p := runPair{Run: run, OursChurnGC: ours.ChurnGCCycles, ClientGoChurnGC: theirs.ChurnGCCycles, AtOrBelow: true}
		for _, d := range defs {
			a, _ := d.get(ours)
			b, _ := d.get(theirs)
			p.Ours, p.ClientGo = append(p.Ours, a), append(p.ClientGo, b)
			p.Text = append(p.Text, fmtValue(d.unit, a)+" / "+fmtValue(d.unit, b))
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
func printRuns(w io.Writer, c *runComparison) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\nRun by run at %s pods, %s / %s: at or below on every one of these figures in %d of %d runs\n",
		fmtCount(c.Pods), implOurs, implClientGo, c.AtOrBelow, len(c.Runs))
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
