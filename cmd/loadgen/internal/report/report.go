package report

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"iter"
	"os"
	"slices"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
)

// SchemaVersion is the version of report.json's layout; the layout is
// described by cmd/loadgen/report.schema.json, and any change to it bumps
// this number.
// 5: --faults (settings.faults, trial faults, converge_after_faults_seconds)
// and every result's list_watch_requests; fields of 4 are unchanged.
const SchemaVersion = 5

// Report is the machine-readable result (report.json); the HTML report is
// rendered from it. Durations are seconds (float), sizes bytes.
type Report struct {
	SchemaVersion int       `json:"schema_version"`
	Scenario      string    `json:"scenario"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at"`
	Pass          bool      `json:"pass"` // every check of every trial passed
	// Headline says what won, by how much, at which size.
	Headline  string   `json:"headline"`
	Directory string   `json:"directory,omitempty"` // where this run's files are
	Metadata  Metadata `json:"metadata"`
	Settings  Settings `json:"settings"`
	// Implementations describes each stack: informer, decoder, queue and
	// their settings.
	Implementations []ImplInfo `json:"implementations"`
	// Figures compare the implementations at the largest size; Scale has
	// the same for every size of a scale sweep.
	Figures []Figure     `json:"figures"`
	Scale   []ScalePoint `json:"scale,omitempty"`
	// Decomposition splits the figures of a run of the whole 2×2 of cores
	// and decoders (--impl all) into the core's and the decoder's shares.
	Decomposition []DecompositionRow `json:"decomposition,omitempty"`
	// Runs compares shardinformer with client-go run by run at the largest
	// size (compare.go).
	Runs   *RunComparison `json:"runs,omitempty"`
	Server ServerCost     `json:"server"`
	Charts []plot.Chart   `json:"charts"`
	Trials []Trial        `json:"trials"`
	// Replicas is the replicas scenario's section (its only results).
	Replicas *Replicas `json:"replicas,omitempty"`
	// Soak is the soak scenario's section: its verdicts (soak.go).
	Soak *Soak `json:"soak,omitempty"`
	// DidNotFit lists the trials whose implementation did not fit
	// (--child-mem-limit or the machine; cmd/loadgen/fit.go), and those not run
	// because it had not fit before; they have no entry in Trials.
	DidNotFit []DidNotFit `json:"did_not_fit,omitempty"`
}

// New starts the report of a run of scenario, started now: the workload's
// settings, the stacks under test and the machine's metadata; the trials and
// what derives from them are added as they run.
func New(scenario string, set Settings, impls []ImplInfo, md Metadata) *Report {
	return &Report{SchemaVersion: SchemaVersion, Scenario: scenario, StartedAt: time.Now(), Metadata: md,
		Settings: set, Implementations: impls, Figures: []Figure{}, Charts: []plot.Chart{}, Trials: []Trial{}}
}

// Results returns every result of impl at pods, in run order.
func (r *Report) Results(impl string, pods int) []*ImplResult {
	var out []*ImplResult
	for res := range r.runs(impl, pods) {
		out = append(out, res)
	}
	return out
}

// MedianRun returns impl's result at pods whose key figure is the median of
// its runs, and the trial it belongs to.
func (r *Report) MedianRun(impl string, pods int) (*ImplResult, *Trial) {
	type run struct {
		res *ImplResult
		t   *Trial
	}
	var runs []run
	for res, t := range r.runs(impl, pods) {
		runs = append(runs, run{res, t})
	}
	if len(runs) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(runs, func(a, b run) int { return cmp.Compare(a.res.ReadySeconds, b.res.ReadySeconds) })
	m := runs[(len(runs)-1)/2]
	return m.res, m.t
}

// runs yields every result of impl at pods with its trial, in run order.
func (r *Report) runs(impl string, pods int) iter.Seq2[*ImplResult, *Trial] {
	return func(yield func(*ImplResult, *Trial) bool) {
		for i := range r.Trials {
			t := &r.Trials[i]
			if t.Pods != pods {
				continue
			}
			for j := range t.Results {
				if t.Results[j].Impl == impl && !yield(&t.Results[j], t) {
					return
				}
			}
		}
	}
}

// UnfitAt returns implementation → "did not fit in N GiB" at pods (nil if
// every implementation fitted).
func (r *Report) UnfitAt(pods int) map[string]string {
	var m map[string]string
	for _, d := range r.DidNotFit {
		if d.Pods == pods {
			if m == nil {
				m = map[string]string{}
			}
			if _, ok := m[d.Impl]; !ok {
				m[d.Impl] = d.Text
			}
		}
	}
	return m
}

// page is the HTML report: a page whose embedded script renders the
// report's JSON, placed at the page's one "{{.}}". Self-contained: no
// network, no external script or style.
//
//go:embed report.html
var page []byte

// HTML returns the HTML report of r. The JSON is marshalled with HTML
// escaping (<, > and & as \u003c, \u003e, \u0026), so no byte of it can end
// the script element that holds it.
func HTML(r *Report) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return bytes.Replace(page, []byte("{{.}}"), data, 1), nil
}

// WriteHTML writes r's HTML report to path.
func WriteHTML(path string, r *Report) error {
	b, err := HTML(r)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// WriteJSON writes r to path as indented JSON (report.json).
func WriteJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
