package main

import (
	"bytes"
	"encoding/json"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseFlagsReplicas(t *testing.T) {
	c := mustParse(t, "--scenario", "replicas")
	if !slices.Equal(c.impls, []string{report.ImplOurs}) || c.pods != defaultReplicaPods || !slices.Equal(c.replicaCounts, []int{1, 2, 3}) ||
		!slices.Equal(c.serverFilters(), []bool{true}) {
		t.Errorf("replicas defaults: impls %v pods %d counts %v filters %v", c.impls, c.pods, c.replicaCounts, c.serverFilters())
	}
	if c := mustParse(t, "--scenario", "replicas", "--pods", "500", "--shard-selector", "both"); c.pods != 500 ||
		!slices.Equal(c.serverFilters(), []bool{true, false}) {
		t.Errorf("--pods 500 --shard-selector both: pods %d filters %v", c.pods, c.serverFilters())
	}
	if c := mustParse(t, "--replicas", "1,2"); c.pods != 100000 {
		t.Errorf("controller scenario's --pods default changed: %d", c.pods)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replicas", "2,1"}, "counts must increase"},
		{[]string{"--replicas", "0"}, `"0" is not a positive count`},
		{[]string{"--replicas", "1,x"}, `"x" is not a positive count`},
		{[]string{"--replicas", "1,17"}, "at most 16 replicas"},
		{[]string{"--scenario", "replicas", "--shard-selector", "maybe"}, `--shard-selector "maybe"`},
		{[]string{"--scenario", "replicas", "--impl", "both"}, "one implementation per run"},
		{[]string{"--scenario", "replicas", "--side-by-side"}, "process of its own"},
		{[]string{"--scenario", "replicas", "--kubeconfig", kubeconfig}, "simulated API server only"},
		{[]string{"--scenario", "replicas", "--metrics-addr", "127.0.0.1:0"}, "does not serve metrics"},
	} {
		if _, err := parseFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestReplicasScenario runs the replicas scenario at a tiny size, 1 and 2
// replica processes, with shardSelector applied by the server and ignored
// (the fallback): every group check passes (views and reconciled
// versions equal the server's, no key in two replicas' views at once);
// each replica holds ⌊slots/N⌋ or ⌈slots/N⌉ slots;
// with server-side filtering the replicas together decode each churn
// event once and, at 2, each less than the whole stream; with the
// fallback each slot informer decodes the whole stream; the report
// validates against the schema and the HTML has the replicas charts.
func TestReplicasScenario(t *testing.T) {
	dir := t.TempDir()
	c := mustParse(t, "--scenario", "replicas", "--pods", "300", "--namespaces", "3", "--replicas", "1,2", "--runs", "1",
		"--shard-selector", "both", "--churn-rate", "300", "--churn-events", "300", "--churn-duration", "0",
		"--reconcile-work", "5us", "--out-dir", dir, "--progress", "0")
	rep, stdout := runLoadgen(t, c)
	rr := rep.Replicas
	if !rep.Pass || rr == nil || len(rr.Trials) != 4 || len(rr.Rows) != 4 {
		t.Fatalf("pass %v, replicas section %+v", rep.Pass, rr)
	}
	for _, tr := range rr.Trials {
		chk := tr.Check
		if !chk.Pass || chk.Overlaps != 0 || chk.KeysInTwoViews != 0 || chk.ServerObjects != tr.ServerObjects || chk.Stays < tr.ServerObjects {
			t.Errorf("%d replicas, server filters %v: check %+v", tr.Replicas, tr.ServerFilters, chk)
		}
		if len(tr.Results) != tr.Replicas || tr.ConvergeSeconds <= 0 || tr.SyncReconcilesPerSecond <= 0 {
			t.Errorf("%d replicas: %d results, converge %v s, %v reconciles/s", tr.Replicas, len(tr.Results), tr.ConvergeSeconds, tr.SyncReconcilesPerSecond)
		}
		emitted := tr.Churn.Emitted
		var decoded uint64
		cached, slots := 0, 0
		for _, r := range tr.Results {
			decoded += r.ChurnDecodedObjects
			cached += r.ViewKeys
			slots += r.TargetSlots
			if len(r.ActiveSlots) != r.TargetSlots {
				t.Errorf("%s: active slots %v, target %d", r.Identity, r.ActiveSlots, r.TargetSlots)
			}
			// Exact balance: ⌊slots/N⌋ or ⌈slots/N⌉ slots each.
			if lo := rr.Group.Slots / tr.Replicas; r.TargetSlots != lo && (r.TargetSlots != lo+1 || rr.Group.Slots%tr.Replicas == 0) {
				t.Errorf("%s of %d: %d of %d slots", r.Identity, tr.Replicas, r.TargetSlots, rr.Group.Slots)
			}
			switch {
			case tr.ServerFilters && r.Fallbacks+r.DroppedObjects != 0:
				t.Errorf("%s: server filters, yet %d fallbacks, %d objects dropped", r.Identity, r.Fallbacks, r.DroppedObjects)
			case tr.ServerFilters && tr.Replicas > 1 && r.ChurnDecodedObjects >= emitted:
				t.Errorf("%s of %d decoded %d churn events, the whole stream is %d", r.Identity, tr.Replicas, r.ChurnDecodedObjects, emitted)
			case !tr.ServerFilters && r.ChurnDecodedObjects < uint64(r.TargetSlots)*emitted:
				t.Errorf("%s holds %d slots without server-side filtering but decoded %d churn events, want ≥ %d×%d",
					r.Identity, r.TargetSlots, r.ChurnDecodedObjects, r.TargetSlots, emitted)
			}
		}
		if cached != tr.ServerObjects || slots != rr.Group.Slots {
			t.Errorf("%d replicas: views hold %d keys (server %d), slots owned %d", tr.Replicas, cached, tr.ServerObjects, slots)
		}
		// Each churn event is in one slot: with server-side filtering the
		// group decodes it once (a relist would add some).
		if tr.ServerFilters && (decoded < emitted || decoded > emitted+emitted/10) {
			t.Errorf("%d replicas decoded %d churn events together, %d were written", tr.Replicas, decoded, emitted)
		}
	}
	if !strings.Contains(stdout, "aggregate reconciles/s cannot grow linearly") || !strings.Contains(stdout, "PASS 2 replica(s), shardSelector off") {
		t.Errorf("summary lacks the note or the checks:\n%s", stdout)
	}
	sch := compileSchema(t)
	if err := sch.Validate(readJSON(t, filepath.Join(rep.Directory, "report.json"))); err != nil {
		t.Fatalf("report.json does not match report.schema.json: %v", err)
	}
	ids := map[string]bool{}
	for _, ch := range rep.Charts {
		ids[ch.ID] = true
		checkRoundTicks(t, ch.ID, ch.X)
		checkRoundTicks(t, ch.ID, ch.Y)
		if len(ch.Series) == 0 {
			t.Errorf("chart %s is empty", ch.ID)
		}
	}
	for _, id := range []string{"replicas_reconciles", "replicas_memory", "replicas_decoded"} {
		if !ids[id] {
			t.Errorf("no %s chart", id)
		}
	}
	h, err := os.ReadFile(filepath.Join(rep.Directory, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(h, []byte(`<script type="application/json" id="report-data">`))
	j := bytes.Index(h[i:], []byte("</script>"))
	var embedded report.Report
	if i < 0 || j < 0 || json.Unmarshal(h[i+len(`<script type="application/json" id="report-data">`):i+j], &embedded) != nil ||
		embedded.Replicas == nil || len(embedded.Replicas.Rows) != 4 {
		t.Error("the HTML does not embed the replicas section")
	}
}

// TestReplicaCheck: the group check finds a key in two views at once (by
// the stays' times), a key in two views at the end, a key missing from
// every view and a stale reconciled version, and passes a hand-over
// whose stays follow each other.
func TestReplicaCheck(t *testing.T) {
	want := map[string]string{"ns/a": "5", "ns/b": "7"}
	side := func(name string, view, rec map[string]string, spans ...protocol.KeySpan) *replicaSide {
		return &replicaSide{name: name, state: &protocol.ReplicaState{View: view, Reconciled: rec, Spans: spans}}
	}
	good := func() *replicaTrial {
		return &replicaTrial{sides: []*replicaSide{
			side("r0", map[string]string{"ns/a": "5"}, map[string]string{"ns/a": "5"},
				protocol.KeySpan{Key: "ns/a", From: 10}, protocol.KeySpan{Key: "ns/b", From: 10, To: 20}),
			side("r1", map[string]string{"ns/b": "7"}, map[string]string{"ns/b": "7"}, protocol.KeySpan{Key: "ns/b", From: 21}),
		}}
	}
	if chk := good().check(want); !chk.Pass || chk.Stays != 3 {
		t.Errorf("a clean hand-over: %+v", chk)
	}
	tr := good()
	tr.sides[1].state.Spans[0].From = 15 // r1 took ns/b while r0 still had it
	if chk := tr.check(want); chk.Pass || chk.Overlaps != 1 {
		t.Errorf("overlapping stays: %+v", chk)
	}
	tr = good()
	tr.sides[1].state.Spans = append(tr.sides[1].state.Spans, protocol.KeySpan{Key: "ns/a", From: 30}) // both hold ns/a at the end
	tr.sides[1].state.View["ns/a"] = "5"
	if chk := tr.check(want); chk.Pass || chk.Overlaps != 1 || chk.KeysInTwoViews != 1 {
		t.Errorf("a key in two views: %+v", chk)
	}
	tr = good()
	delete(tr.sides[1].state.View, "ns/b")
	tr.sides[0].state.Reconciled["ns/a"] = "4"
	if chk := tr.check(want); chk.Pass || chk.ViewMismatches != 1 || chk.ReconciledMismatches != 1 || len(chk.Details) != 2 {
		t.Errorf("a missing key and a stale version: %+v", chk)
	}
}
