package report

import (
	"strings"
	"testing"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
)

// TestScaleChartsEndWhereItDidNotFit: on the scale charts an
// implementation's line ends at the last size it fitted at, the chart says
// why, and the figures compared are the largest size with a result.
func TestScaleChartsEndWhereItDidNotFit(t *testing.T) {
	fig := func(pods int, vals map[string]float64) Figure {
		f := Figure{Key: "heap_bytes_per_object", Label: "retained heap per cached object", Unit: "bytes_per_object", Better: "lower", Pods: pods, Values: map[string]Stat{}}
		for impl, v := range vals {
			f.Values[impl] = StatOf([]float64{v})
		}
		return f
	}
	r := &Report{Scenario: ScenarioScale, Settings: Settings{Path: PathTyped, Impls: []string{ImplOurs, ImplClientGo}, Sizes: []int{1000, 10000, 100000}},
		DidNotFit: []DidNotFit{{Impl: ImplClientGo, Pods: 100000, Run: 1, Text: "did not fit in 1 GiB"}}}
	r.Scale = []ScalePoint{
		{Pods: 1000, Figures: []Figure{fig(1000, map[string]float64{ImplOurs: 13000, ImplClientGo: 22000})}},
		{Pods: 10000, Figures: []Figure{fig(10000, map[string]float64{ImplOurs: 12900, ImplClientGo: 22100})}},
		{Pods: 100000, Figures: []Figure{fig(100000, map[string]float64{ImplOurs: 12800})}, DidNotFit: r.UnfitAt(100000)},
	}
	r.Figures = r.Scale[2].Figures
	var c *plot.Chart
	charts := reportCharts(r)
	for i := range charts {
		if charts[i].ID == "scale_heap_bytes_per_object" {
			c = &charts[i]
		}
	}
	if c == nil {
		t.Fatalf("no scale chart of the heap per object among %d charts", len(charts))
	}
	n := map[string]int{}
	for _, s := range c.Series {
		n[s.Impl] = len(s.Points)
	}
	if n[ImplOurs] != 3 || n[ImplClientGo] != 2 || !strings.Contains(c.Note, "client-go did not fit in 1 GiB at 100k pods") || !c.X.Log || !c.Y.Log {
		t.Errorf("chart: points %v, note %q, log %v/%v", n, c.Note, c.X.Log, c.Y.Log)
	}
	var out strings.Builder
	printScale(&out, r)
	if !strings.Contains(out.String(), "did not fit in 1 GiB") || strings.Count(out.String(), "×1.0") != 2 {
		t.Errorf("scale table:\n%s", out.String())
	}
}
