package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
)

func TestVerdict(t *testing.T) {
	st := func(xs ...float64) Stat { return StatOf(xs) }
	for _, tc := range []struct {
		better       string
		ours, theirs Stat
		want         string
	}{
		{"lower", st(1, 1.1, 1.2), st(2, 2.1, 2.2), VerdictOursBetter},
		{"higher", st(1, 1.1, 1.2), st(2, 2.1, 2.2), VerdictTheirsBetter},
		{"lower", st(1, 1.5, 3), st(2, 2.1, 2.2), VerdictOursLikely},   // 29% apart, ranges overlap
		{"lower", st(1), st(2), VerdictOursLikely},                     // one run each: never "better"
		{"lower", st(1, 1.02, 1.04), st(1.03, 1.05, 1.06), VerdictTie}, // 3% apart
		{"lower", st(0, 0, 0), st(0, 0, 0), VerdictTie},
	} {
		if got := VerdictOf(tc.better, tc.ours, tc.theirs); got != tc.want {
			t.Errorf("VerdictOf(%s, %v, %v) = %q, want %q", tc.better, tc.ours.Samples, tc.theirs.Samples, got, tc.want)
		}
	}
	// The words of vs_client_go, from the compared implementation's side.
	if w := ComparisonWords[Compare("lower", st(2, 2.1, 2.2), st(1, 1.1, 1.2))+2]; w != "worse" {
		t.Errorf("slower and separate: %q, want worse", w)
	}
	if w := ComparisonWords[Compare("higher", st(2), st(1))+2]; w != "likely better" {
		t.Errorf("higher by 2x, one run: %q, want likely better", w)
	}
	if s := st(3, 1, 2, 10); s.Median != 2.5 || s.Min != 1 || s.Max != 10 {
		t.Errorf("StatOf = %+v", s)
	}
}

// TestAxesAreRound checks the tick generator on awkward ranges, including
// the one the old report drew "0, 0, 1, 1, 1, 2" on.
func TestAxesAreRound(t *testing.T) {
	for _, tc := range []struct {
		unit   string
		lo, hi float64
	}{{"s", 0, 1.7}, {"s", 0, 0.0123}, {"count", 0, 100000}, {"count", 0, 2017}, {"bytes", 0, 2.3 * (1 << 30)},
		{"bytes", 0, 44 << 20}, {"per_s", 0, 2608}, {"s", 3.2, 97.5}} {
		a := plot.LinearAxis(plot.Axis{Unit: tc.unit, Label: tc.unit}, tc.lo, tc.hi)
		a.Labels = nil
		for _, v := range a.Ticks {
			a.Labels = append(a.Labels, TickLabel(tc.unit, v))
		}
		if err := CheckAxis(a); err != nil {
			t.Errorf("%v: %v", tc, err)
		}
		if n := len(a.Ticks); n < 3 || n > 12 || a.Min > tc.lo || a.Max < tc.hi {
			t.Errorf("%v: %d ticks %v over [%v, %v]", tc, n, a.Labels, a.Min, a.Max)
		}
	}
	l := plot.LogAxis(plot.Axis{Unit: "s"}, 0.03, 0.9)
	if !slices.Equal(l.Ticks, []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}) || l.Max != 1 {
		t.Errorf("log axis ticks %v max %v", l.Ticks, l.Max)
	}
}

// TestFmt checks the units' spelling that the summary, the headline and
// the ticks share.
func TestFmt(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{FmtDuration(0), "0"}, {FmtDuration(4e-6), "4.0µs"}, {FmtDuration(0.25), "250.0ms"}, {FmtDuration(2), "2.00s"},
		{FmtBytes(512), "512 B"}, {FmtBytes(3 << 20), "3.0 MiB"}, {FmtBytes(1.5 * (1 << 30)), "1.50 GiB"},
		{FmtRate(2000), "2000/s"}, {FmtRate(25000), "25.0k/s"}, {FmtCount(30000), "30k"}, {FmtCount(1000000), "1M"},
		{FmtCount(1500), "1500"}, {FmtRatio(0.042), "0.042"}, {FmtRatio(1.234), "1.23"},
		{FmtStat("s", StatOf([]float64{1})), "1.00s"}, {FmtStat("per_s", StatOf([]float64{30, 10, 20})), "20/s [10/s–30/s]"},
		{TickLabel("bytes", 512<<20), "512 MiB"}, {TickLabel("s", 0.002), "2ms"}, {TickLabel("per_s", 2500), "2.5k/s"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}

// TestHTML checks the page: the report's JSON in place of the page's
// "{{.}}", HTML-escaped so that no value ends the script that holds it,
// and WriteJSON's file decodes to the same report.
func TestHTML(t *testing.T) {
	r := &Report{SchemaVersion: SchemaVersion, Scenario: "informer", Headline: "</script><b>&", Figures: []Figure{}, Trials: []Trial{}}
	h, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	page := string(h)
	if strings.Contains(page, "{{.}}") || strings.Contains(page, "</script><b>") || !strings.Contains(page, `\u003c/script\u003e\u003cb\u003e\u0026`) {
		t.Errorf("the report's JSON is not on the page, or not escaped")
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Headline != r.Headline || back.SchemaVersion != SchemaVersion {
		t.Errorf("report.json: %v, headline %q version %d", err, back.Headline, back.SchemaVersion)
	}
}

// TestRatesKeepWholeWindows checks that the throughput series ends with its
// last whole window instead of falling to zero in a partial one.
func TestRatesKeepWholeWindows(t *testing.T) {
	var pts [][2]float64
	for i := 0; i <= 52; i++ { // 100 events/s for 5.2 s, sampled every 100ms
		pts = append(pts, [2]float64{float64(i) / 10, float64(i) * 10})
	}
	r := Rates(pts, 0, math.Inf(1), 1)
	if len(r) != 5 {
		t.Fatalf("%d windows, want 5 whole ones: %v", len(r), r)
	}
	for _, p := range r {
		if math.Abs(p[1]-100) > 1e-6 {
			t.Errorf("rate %v at %v, want 100", p[1], p[0])
		}
	}
}
