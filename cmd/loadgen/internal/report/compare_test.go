package report

import (
	"strings"
	"testing"
)

// TestCompareRuns: a run counts when ours is at or below client-go on every
// figure (a tie counts, one figure above does not); a run with one
// implementation only, another size and other scenarios are left out.
func TestCompareRuns(t *testing.T) {
	res := func(impl string, sync, p50, p90, p99 float64, gc uint64) ImplResult {
		return ImplResult{Impl: impl, InitialSyncSeconds: sync, Latency: Latency{P50: p50, P90: p90, P99: p99}, ChurnGCCycles: gc}
	}
	r := &Report{Scenario: ScenarioInformer, Settings: Settings{Impls: []string{ImplOurs, ImplClientGo}}}
	for _, tr := range []struct {
		pods, run int
		res       ImplResult
	}{
		{100, 1, res(ImplOurs, 1, .001, .002, .003, 0)},
		{100, 1, res(ImplClientGo, 2, .001, .002, .004, 1)}, // a tie at p50 and p90: at or below
		{100, 2, res(ImplClientGo, 2, .001, .002, .004, 0)},
		{100, 2, res(ImplOurs, 1, .001, .002, .0041, 1)}, // p99 above: not
		{100, 3, res(ImplOurs, 1, .001, .002, .003, 0)},  // client-go's run 3 missing: left out
		{50, 1, res(ImplOurs, 9, 9, 9, 9, 0)},
		{50, 1, res(ImplClientGo, 1, 1, 1, 1, 0)},
	} {
		r.Trials = append(r.Trials, Trial{Pods: tr.pods, Run: tr.run, Results: []ImplResult{tr.res}})
	}
	c := compareRuns(r, 100)
	if c == nil || len(c.Runs) != 2 || c.AtOrBelow != 1 || !c.Runs[0].AtOrBelow || c.Runs[1].AtOrBelow ||
		c.Runs[0].ClientGoChurnGC != 1 || c.Runs[1].OursChurnGC != 1 || c.Runs[1].Ours[3] != .0041 {
		t.Fatalf("compareRuns = %+v", c)
	}
	if c.Runs[0].Text[0] != FmtDuration(1)+" / "+FmtDuration(2) || len(c.Labels) != 4 {
		t.Errorf("text %q labels %q", c.Runs[0].Text, c.Labels)
	}
	var out strings.Builder
	printRuns(&out, c)
	if !strings.Contains(out.String(), "in 1 of 2 runs") || strings.Count(out.String(), "\n") != 5 {
		t.Errorf("printed:\n%s", out.String())
	}
	r.Settings.Impls = []string{ImplOurs}
	if c := compareRuns(r, 100); c != nil {
		t.Errorf("one implementation: %+v", c)
	}
	r.Settings.Impls, r.Scenario = []string{ImplOurs, ImplClientGo}, ScenarioScale
	if c := compareRuns(r, 100); c != nil {
		t.Errorf("scale scenario: %+v", c)
	}
}
