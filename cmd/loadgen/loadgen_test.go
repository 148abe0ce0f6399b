package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pprofile "github.com/google/pprof/profile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/latency"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/plot"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/protocol"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
)

// TestMain lets the test binary stand in for loadgen's child processes: the
// parent re-executes os.Executable(), which under `go test` is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == protocol.ChildFlag {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

func TestParseFlagsDefaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.scenario != report.ScenarioController || !slices.Equal(c.impls, []string{report.ImplOurs, report.ImplClientGo}) || c.pods != 100000 ||
		c.sideBySide || c.runs != 3 || c.policy.String() != "buffer" || c.mix != (target.Mix{Create: 1, Update: 8, Delete: 1}) || c.workers < 1 ||
		c.reconcileWork <= 0 || c.outDir == "" {
		t.Errorf("defaults = %+v", c)
	}
	// A rate and a duration fix the event count, so that every trial
	// writes the same events.
	if c.churnEvents != int(c.churnRate*10) || c.churnDuration != 0 {
		t.Errorf("churn bound: events %d duration %v, want rate × 10s events", c.churnEvents, c.churnDuration)
	}
	// Ours on the wire (with the recommended diet) and ratelimit's queue;
	// client-go's stack as it ships.
	if v := c.variants[report.ImplOurs]; v.core != report.ImplOurs || v.decoder != decoderWire || v.diet != defaultDiet || c.wireWorkers != 0 {
		t.Errorf("shardinformer: %+v, wire workers %d", v, c.wireWorkers)
	}
	if v := c.variants[report.ImplClientGo]; v.core != report.ImplClientGo || v.decoder != decoderClientGo || v.diet {
		t.Errorf("client-go: %+v", v)
	}
	if q, name, err := newQueue(report.ImplOurs); err != nil || name != queueOurs || q == nil {
		t.Errorf("our queue: %v %q", err, name)
	} else {
		q.ShutDown()
	}
	s, err := parseFlags([]string{"--scenario", "scale"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.impls, []string{report.ImplOurs}) || !slices.Equal(s.sizes(), []int{10000, 30000, 100000}) {
		t.Errorf("scale defaults: impls %v sizes %v", s.impls, s.sizes())
	}
}

func TestParseFlagsRejects(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pods", "-1"}, "--pods -1: must not be negative"},
		{[]string{"--churn-events", "-5"}, "--churn-events -5"},
		{[]string{"--handlers", "-2"}, "--handlers -2"},
		{[]string{"--readers", "-1"}, "--readers -1"},
		{[]string{"--namespaces", "0"}, "--namespaces 0"},
		{[]string{"--workers", "0"}, "--workers 0"},
		{[]string{"--handler-workers", "0"}, "--handler-workers 0"},
		{[]string{"--runs", "0"}, "--runs 0"},
		{[]string{"--ring-size", "0"}, "--ring-size 0"},
		{[]string{"--churn-rate", "-3"}, "--churn-rate -3"},
		{[]string{"--churn-duration", "-1s"}, "must not be negative"},
		{[]string{"--reconcile-work", "-1us"}, "must not be negative"},
		{[]string{"--scenario", "bench"}, `--scenario "bench"`},
		{[]string{"--scale-pods", "10k,x"}, `"x" is not a positive count`},
		{[]string{"--scale-pods", "100k,10k"}, "increasing order"},
		{[]string{"--impl", "informer2"}, `--impl: "informer2" does not start with shardinformer or client-go`},
		{[]string{"--impl", "client-go+diet"}, "the diet is the wire decoder's"},
		{[]string{"--impl", "shardinformer+client-go-decoder+no-diet"}, "the diet is the wire decoder's"},
		{[]string{"--impl", "client-go+wire+fast"}, `unknown suffix "+fast"`},
		{[]string{"--impl", "shardinformers"}, "does not start with"},
		{[]string{"--impl", "shardinformer,shardinformer+wire"}, "shardinformer twice"},
		{[]string{"--wire-workers", "-1"}, "--wire-workers -1"},
		{[]string{"--policy", "drop"}, `unknown full-ring policy "drop"`},
		{[]string{"--mix", "1:2"}, "want create:update:delete"},
		{[]string{"--mix", "1:x:1"}, `weight "x"`},
		{[]string{"--mix", "0:0:0"}, "all weights are zero"},
		{[]string{"--content-type", "yaml"}, `--content-type "yaml"`},
		{[]string{"--watchlist", "maybe"}, `--watchlist "maybe"`},
		{[]string{"--profile", "mem"}, `--profile "mem"`},
		{[]string{"--profile", "cpu", "--out-dir", ""}, "--profile needs --out-dir"},
		{[]string{"--metrics-addr", "0.0.0.0:9090"}, "only loopback"},
		{[]string{"--metrics-addr", "nonsense"}, "--metrics-addr"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig"},
		{[]string{"--out", os.TempDir()}, "--out: " + os.TempDir() + " is a directory"},
		{[]string{"--html", "/nonexistent/dir/report.html"}, "--html: stat /nonexistent/dir"},
		{[]string{"--pods", "ten"}, "invalid value"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	// A report file in an existing directory is fine, whether or not it exists yet.
	out := filepath.Join(t.TempDir(), "report.json")
	for range 2 {
		if _, err := parseFlags([]string{"--out", out, "--html", out + ".html"}, io.Discard); err != nil {
			t.Errorf("--out %s: %v", out, err)
		}
		if err := os.WriteFile(out, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Several problems are reported together.
	_, err := parseFlags([]string{"--pods", "-1", "--impl", "x"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--pods") || !strings.Contains(err.Error(), "--impl") {
		t.Errorf("two bad flags: %v, want both reported", err)
	}
	if sizes, err := parseSizes("10k, 2M,3000000"); err != nil || !slices.Equal(sizes, []int{10000, 2000000, 3000000}) {
		t.Errorf("parseSizes = %v, %v", sizes, err)
	}
}

func TestHelpDocumentsEveryFlagAndScenario(t *testing.T) {
	var out bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"scenario", "impl", "side-by-side", "runs", "pods", "scale-pods", "namespaces", "churn-rate",
		"churn-duration", "churn-events", "mix", "workers", "reconcile-work", "handlers", "handler-work", "handler-workers",
		"readers", "shards", "ring-size", "policy", "content-type", "watchlist", "managed-fields", "kubeconfig", "out-dir",
		"out", "html", "metrics-addr", "profile", "seed", "quiesce-timeout", "progress", "churn-workers", "diet", "wire-workers", "path"} {
		if !strings.Contains(out.String(), "  -"+f+" ") && !strings.Contains(out.String(), "  -"+f+"\n") {
			t.Errorf("--help does not document -%s", f)
		}
	}
	for _, s := range []string{"controller", "informer", "scale", "--runs", "own process", "Paths (--path)", "typed", "dynamic",
		"metadata", "controller-runtime", "crcache", "informer scenario only", "pod-sized"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("--help does not explain %q", s)
		}
	}
	if strings.Contains(out.String(), protocol.ChildFlag) {
		t.Errorf("--help shows the internal %s flag", protocol.ChildFlag)
	}
}

func TestUnreachableKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseFlags([]string{"--kubeconfig", path, "--pods", "10", "--progress", "0", "--out-dir", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = run(ctx, c, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("run against a closed port: %v, want an 'unreachable' error", err)
	}
}

// runLoadgen runs loadgen with args (plus --out-dir dir, no progress) and
// returns the report, stdout and the run directory.
func runLoadgen(t *testing.T, c config) (*report.Report, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	rep, err := run(ctx, c, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Log("\n" + stdout.String())
	return rep, stdout.String()
}

func mustParse(t *testing.T, args ...string) config {
	t.Helper()
	c, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// controllerRun is one small controller run in child processes, shared by
// the tests that read its report: 2 runs of each implementation, CPU
// profiles on.
var controllerRun struct {
	once   sync.Once
	dir    string
	rep    *report.Report
	stdout string
}

func controllerReport(t *testing.T) (*report.Report, string, string) {
	t.Helper()
	controllerRun.once.Do(func() {
		dir, err := os.MkdirTemp("", "loadgen-test")
		if err != nil {
			t.Fatal(err)
		}
		c := mustParse(t, "--pods", "1500", "--namespaces", "6", "--churn-rate", "600", "--churn-events", "900",
			"--churn-duration", "0", "--runs", "2", "--workers", "3", "--reconcile-work", "5us", "--profile", "cpu",
			"--out-dir", dir, "--progress", "0")
		controllerRun.rep, controllerRun.stdout = runLoadgen(t, c)
		controllerRun.dir = controllerRun.rep.Directory
	})
	if controllerRun.rep == nil {
		t.Fatal("the shared controller run failed")
	}
	return controllerRun.rep, controllerRun.stdout, controllerRun.dir
}

// TestControllerScenario checks a real controller run in child processes:
// trials alternate the implementations (A B, then B A), every key is
// reconciled at its final state on both stacks (the check), every churn
// change reaches a reconcile, and every figure has both values, a ratio and
// a verdict.
func TestControllerScenario(t *testing.T) {
	rep, stdout, _ := controllerReport(t)
	if !rep.Pass || rep.Scenario != report.ScenarioController || rep.Settings.Mode != report.ModeProcess {
		t.Fatalf("pass %v scenario %s mode %s", rep.Pass, rep.Scenario, rep.Settings.Mode)
	}
	var order []string
	for _, tr := range rep.Trials {
		order = append(order, tr.Impls...)
		if tr.Churn.Emitted != 900 || tr.Churn.Failed != 0 {
			t.Errorf("trial %v run %d churn %+v, want 900 events", tr.Impls, tr.Run, tr.Churn)
		}
		if want := 1500 + int(tr.Churn.Creates) - int(tr.Churn.Deletes); tr.ServerObjects != want {
			t.Errorf("server objects %d, want %d", tr.ServerObjects, want)
		}
		if len(tr.Emitted) < 2 || tr.CPUByLabel["churn"] < 0 {
			t.Errorf("trial %v: %d emitted points", tr.Impls, len(tr.Emitted))
		}
		r := tr.Results[0]
		if !r.Check.Pass || r.Check.ServerObjects != tr.ServerObjects || r.Objects != tr.ServerObjects {
			t.Errorf("%s check %+v objects %d, want a pass at %d", r.Impl, r.Check, r.Objects, tr.ServerObjects)
		}
		// Every churn change was notified; the reconciles that took one
		// are at most as many (changes of a key waiting together make one)
		// and every reconcile that took one was timed.
		if r.EventsObserved != tr.Churn.Emitted || r.ChurnReconciles == 0 || r.ChurnReconciles > r.EventsObserved ||
			r.Latency.Count != r.ChurnReconciles || r.Freshness == nil || r.Freshness.Count != r.EventsObserved {
			t.Errorf("%s: observed %d of %d, churn reconciles %d, latency count %d, freshness %+v", r.Impl, r.EventsObserved,
				tr.Churn.Emitted, r.ChurnReconciles, r.Latency.Count, r.Freshness)
		}
		// Ours: the wire with the default diet and ratelimit's queue;
		// client-go: its own decoder and queue.
		wantDecoder, wantDiet, wantQueue := decoderClientGo, "", queueClientGo
		if r.Impl == report.ImplOurs {
			wantDecoder, wantDiet, wantQueue = decoderWire, dietFull, queueOurs
		}
		if r.Reconciles < 1500 || r.Decoder != wantDecoder || r.Diet != wantDiet || r.Queue != wantQueue || r.CPUScope != report.CPUScopeProcess {
			t.Errorf("%s: reconciles %d decoder %q diet %q queue %q cpu scope %q", r.Impl, r.Reconciles, r.Decoder, r.Diet, r.Queue, r.CPUScope)
		}
		if r.ReadySeconds < r.InitialSyncSeconds || r.CPUSeconds <= 0 || r.RetainedHeapBytes == 0 || r.PeakRSSBytes == 0 ||
			r.Latency.P50 <= 0 || r.Latency.P50 > r.Latency.P99 || r.Latency.P99 > r.Latency.Max || len(r.Timeline) < 3 {
			t.Errorf("%s: measurements missing or inconsistent: %+v", r.Impl, r)
		}
		// The sync's CPU split: its parts are within it, and decoding 1500
		// pods into a new process's heap faults pages in. The GC's part is
		// the runtime's estimate, which is P-time and can exceed the CPU on
		// a loaded machine (sync_gc_cpu_estimate_seconds), clamped to the
		// CPU (selfstat.CPUSplit.GCCPU, its TestGCCPUClampedToCPU): never above the
		// estimate or the CPU, and not 0: a new process's heap grows past
		// its first GC goals while it decodes 1500 pods.
		if r.SyncPageFaults <= 0 || r.SyncGCCPUSeconds <= 0 || r.SyncSysCPUSeconds < 0 ||
			r.SyncGCCPUSeconds > r.SyncCPUSeconds || r.SyncSysCPUSeconds > r.SyncCPUSeconds ||
			r.SyncGCCPUSeconds > r.SyncGCEstimateSeconds {
			t.Errorf("%s: sync CPU %.3fs, GC %.3fs (estimate %.3fs), kernel %.3fs, %d page faults", r.Impl, r.SyncCPUSeconds,
				r.SyncGCCPUSeconds, r.SyncGCEstimateSeconds, r.SyncSysCPUSeconds, r.SyncPageFaults)
		}
		if (r.Impl == report.ImplOurs) != (r.Coalesced != nil) {
			t.Errorf("%s: pipeline counters present = %v", r.Impl, r.Coalesced != nil)
		}
	}
	if want := []string{report.ImplOurs, report.ImplClientGo, report.ImplClientGo, report.ImplOurs}; !slices.Equal(order, want) {
		t.Errorf("trial order %v, want %v (alternating, reversed every other run)", order, want)
	}
	keys := map[string]bool{}
	for _, f := range rep.Figures {
		keys[f.Key] = true
		if len(f.Values) != 2 || f.Verdict == "" {
			t.Errorf("figure %s: values %v verdict %q", f.Key, f.Values, f.Verdict)
		}
		for impl, s := range f.Values {
			if len(s.Samples) != 2 || s.Min > s.Median || s.Median > s.Max || s.Text == "" {
				t.Errorf("figure %s %s: %+v, want 2 runs", f.Key, impl, s)
			}
		}
	}
	for _, k := range []string{"ready_seconds", "initial_sync_seconds", "reconciles_per_second", "latency_p50", "latency_p90",
		"latency_p99", "freshness_p99", "cpu_seconds", "sync_gc_cpu_seconds", "sync_sys_cpu_seconds", "sync_page_faults",
		"retained_heap_bytes"} {
		if !keys[k] {
			t.Errorf("no figure %s", k)
		}
	}
	if !strings.Contains(rep.Headline, "1500 pods") && !strings.Contains(rep.Headline, "1.5k") {
		if !strings.Contains(rep.Headline, report.FmtCount(1500)) {
			t.Errorf("headline %q does not name the size", rep.Headline)
		}
	}
	// Run by run: both runs, each with the trials' own figures.
	if c := rep.Runs; c == nil || len(c.Runs) != 2 || !slices.Equal(c.Figures, []string{"initial_sync_seconds", "latency_p50", "latency_p90", "latency_p99"}) {
		t.Errorf("run-by-run comparison %+v, want 2 runs of the sync and the three latencies", c)
	} else {
		for _, p := range c.Runs {
			for _, tr := range rep.Trials {
				if tr.Run == p.Run && tr.Results[0].Impl == report.ImplOurs && (p.Ours[0] != tr.Results[0].InitialSyncSeconds || p.Ours[3] != tr.Results[0].Latency.P99) {
					t.Errorf("run %d: ours %v, trial's sync %v p99 %v", p.Run, p.Ours, tr.Results[0].InitialSyncSeconds, tr.Results[0].Latency.P99)
				}
			}
		}
		if !strings.Contains(stdout, fmt.Sprintf("Run by run at 1500 pods, shardinformer / client-go: at or below on every one of these figures in %d of 2 runs", c.AtOrBelow)) {
			t.Error("summary lacks the run-by-run line")
		}
		if !strings.HasSuffix(rep.Headline, fmt.Sprintf("in %d of 2 runs.", c.AtOrBelow)) {
			t.Errorf("headline %q does not end with the run-by-run count", rep.Headline)
		}
	}
	for _, want := range []string{"ours/client-go", "verdict", "PASS shardinformer (1500 pods, run 2)", "PASS client-go (1500 pods, run 1)",
		"controller scenario, typed path, on apisim",
		"client-go: client-go informers.NewSharedInformerFactoryWithOptions(clientset, 0, WithTweakListOptions).Core().V1().Pods().Informer(): cache.SharedIndexInformer, decoder client-go, queue client-go workqueue",
		"shardinformer: shardinformer informers.NewSharedInformerFactoryWithOptions(clientset, 0, WithTweakListOptions, WithPipelineOptions, WithWireOptions).Core().V1().Pods().Informer(): pipeline.Informer, decoder wire (diet full, GOMAXPROCS",
		"server and churn writer"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

// TestReportValidatesAgainstSchema validates the JSON report of a real run
// against report.schema.json with a full JSON Schema 2020-12 validator
// (github.com/santhosh-tekuri/jsonschema), and checks the schema rejects a
// report with a missing or mistyped field, so the check can fail.
func TestReportValidatesAgainstSchema(t *testing.T) {
	_, _, dir := controllerReport(t)
	sch := compileSchema(t)
	data := readJSON(t, filepath.Join(dir, "report.json"))
	if err := sch.Validate(data); err != nil {
		t.Fatalf("report.json does not match report.schema.json: %v", err)
	}
	bad := readJSON(t, filepath.Join(dir, "report.json")).(map[string]any)
	delete(bad, "headline")
	if sch.Validate(bad) == nil {
		t.Error("a report without a headline validates")
	}
	bad = readJSON(t, filepath.Join(dir, "report.json")).(map[string]any)
	bad["trials"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any)["decoder"] = "magic"
	if sch.Validate(bad) == nil {
		t.Error("a report with an unknown decoder validates")
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile("report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHTMLReport checks the HTML of a real run: self-contained, the JSON
// embedded whole, a chart for every figure with no empty series and round
// ticks, and the run metadata.
func TestHTMLReport(t *testing.T) {
	rep, _, dir := controllerReport(t)
	h, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(h, []byte("http://")) || bytes.Contains(h, []byte("https://")) {
		if n := bytes.Count(h, []byte("http")); n != bytes.Count(h, []byte(`"http://www.w3.org/2000/svg"`)) {
			t.Errorf("HTML report refers to %d URLs; it must work offline", n)
		}
	}
	if bytes.Contains(h, []byte("<script src")) || bytes.Contains(h, []byte("<link")) {
		t.Error("HTML report loads an external script or style")
	}
	// The embedded JSON is the report.
	i := bytes.Index(h, []byte(`<script type="application/json" id="report-data">`))
	j := bytes.Index(h[i:], []byte("</script>"))
	var embedded report.Report
	if i < 0 || j < 0 || json.Unmarshal(h[i+len(`<script type="application/json" id="report-data">`):i+j], &embedded) != nil {
		t.Fatal("no report JSON embedded in the HTML")
	}
	if embedded.Headline != rep.Headline || len(embedded.Charts) != len(rep.Charts) {
		t.Errorf("embedded report differs: headline %q charts %d", embedded.Headline, len(embedded.Charts))
	}
	ids := map[string]bool{}
	for _, c := range rep.Charts {
		ids[c.ID] = true
		if len(c.Series)+len(c.Bars) == 0 {
			t.Errorf("chart %s has no data", c.ID)
		}
		for _, s := range c.Series {
			if len(s.Points) == 0 {
				t.Errorf("chart %s: series %s is empty", c.ID, s.Name)
			}
		}
		if c.Kind == "line" {
			checkRoundTicks(t, c.ID, c.X)
		}
		checkRoundTicks(t, c.ID, c.Y)
	}
	for _, id := range []string{"sync", "throughput", "latency", "freshness", "retained_heap_bytes", "cpu_seconds", "heap_timeline", "latency_timeline"} {
		if !ids[id] {
			t.Errorf("no %s chart", id)
		}
	}
	for _, c := range rep.Charts {
		if c.ID == "sync" || c.ID == "throughput" || c.ID == "latency" || c.ID == "latency_timeline" {
			impls := map[string]bool{}
			for _, s := range c.Series {
				impls[s.Impl] = true
				if c.ID == "sync" && len(s.Points) < 3 {
					t.Errorf("sync chart: series %s has %d points", s.Name, len(s.Points))
				}
			}
			if !impls[report.ImplOurs] || !impls[report.ImplClientGo] {
				t.Errorf("chart %s lacks an implementation: %v", c.ID, impls)
			}
		}
	}
	md := rep.Metadata
	if len(md.CommandLine) == 0 || md.GoVersion == "" || md.NumCPU < 1 || md.GOMAXPROCS < 1 || len(md.Modules) == 0 ||
		md.BurnIterationsPerSecond <= 0 {
		t.Errorf("metadata incomplete: %+v", md)
	}
	if md.CPUModel == "" && fileExists("/proc/cpuinfo") {
		t.Error("no CPU model although /proc/cpuinfo exists")
	}
	if !slices.ContainsFunc(md.Modules, func(m report.Module) bool { return m.Path == "k8s.io/client-go" }) {
		t.Error("modules lack k8s.io/client-go")
	}
	if len(rep.Implementations) != 2 || rep.Implementations[0].Options["full_ring_policy"] == "" || rep.Implementations[0].Decoder == "" {
		t.Errorf("implementation settings: %+v", rep.Implementations)
	}
}

// TestHTMLInBrowser renders the HTML report of a real run in headless
// Chromium, in a narrow and a wide window, and fails on any console message
// (a script error), a chart or series not drawn, or a page wider than a
// narrow window. Skipped when no Chromium is installed.
func TestHTMLInBrowser(t *testing.T) {
	var browser string
	for _, b := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if fileExists(b) {
			browser = b
			break
		}
	}
	if browser == "" {
		t.Skip("no headless Chromium (/usr/bin/chromium, chromium-browser or google-chrome): the HTML report is checked without a browser only (TestHTMLReport); Debian's chromium package enables this test")
	}
	rep, _, dir := controllerReport(t)
	series := 0
	for _, c := range rep.Charts {
		series += len(c.Series) + len(c.Bars)
	}
	for _, width := range []int{400, 1400} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(),
			"--enable-logging=stderr", "--v=0", fmt.Sprintf("--window-size=%d,3000", width), "--dump-dom",
			"file://"+filepath.Join(dir, "report.html"))
		var dom, logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &dom, &logs
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", browser, err, logs.String())
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "CONSOLE") {
				t.Errorf("width %d: console message: %s", width, line)
			}
		}
		d := dom.String()
		for _, want := range []string{
			fmt.Sprintf(`data-charts="%d"`, len(rep.Charts)), `data-overflow="false"`, "command line", "GOMAXPROCS", "ours / client-go",
			strings.ReplaceAll(rep.Metadata.CPUModel, "&", "&amp;"), rep.Metadata.GoVersion} {
			if !strings.Contains(d, want) {
				t.Errorf("width %d: rendered page lacks %q", width, want)
			}
		}
		if n := strings.Count(d, "data-chart="); n != len(rep.Charts) {
			t.Errorf("width %d: %d charts drawn, want %d", width, n, len(rep.Charts))
		}
		if n := strings.Count(d, "data-series="); n != series {
			t.Errorf("width %d: %d series drawn, want %d", width, n, series)
		}
		if i, j := strings.Index(d, "<main"), strings.Index(d, "</main>"); i < 0 || j < i {
			t.Errorf("width %d: no <main> rendered", width)
		} else if shown := d[i:j]; strings.Contains(shown, "NaN") || strings.Contains(shown, "undefined") {
			t.Errorf("width %d: the page shows NaN or undefined", width)
		}
	}
}

// checkRoundTicks checks a chart's finished axis (report.CheckAxis).
func checkRoundTicks(t *testing.T, id string, a plot.Axis) {
	t.Helper()
	if err := report.CheckAxis(a); err != nil {
		t.Errorf("chart %s: %v", id, err)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestProfilesPerImplementation checks --profile cpu: one profile per
// implementation process in the run's directory, its goroutines labelled
// with the implementation.
func TestProfilesPerImplementation(t *testing.T) {
	rep, _, dir := controllerReport(t)
	for _, tr := range rep.Trials {
		r := tr.Results[0]
		want := filepath.Join(dir, "profiles", fmt.Sprintf("%d-run%d-%s", tr.Pods, tr.Run, r.Impl))
		if r.ProfileDir != want {
			t.Errorf("%s run %d: profile dir %q, want %q", r.Impl, tr.Run, r.ProfileDir, want)
			continue
		}
		p := readProfile(t, filepath.Join(want, "cpu.pprof"))
		labelled := 0
		for _, s := range p.Sample {
			if impl := s.Label["impl"]; len(impl) > 0 {
				if impl[0] != r.Impl {
					t.Errorf("%s's profile has a sample labelled impl=%s", r.Impl, impl[0])
				}
				labelled++
			}
		}
		if labelled == 0 {
			t.Errorf("%s's profile has no sample labelled impl=%s", r.Impl, r.Impl)
		}
	}
}

// TestRunDirectoriesAreNew checks that no run reuses another's directory,
// so profiles and reports are never overwritten.
func TestRunDirectoriesAreNew(t *testing.T) {
	base := t.TempDir()
	now := time.Now()
	a, err := makeRunDir(base, "controller", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := makeRunDir(base, "controller", now)
	if err != nil || a == b {
		t.Fatalf("second directory %q (%v), first %q", b, err, a)
	}
	if _, err := startProfile("cpu", a); err == nil {
		t.Error("startProfile into an existing directory succeeded")
	}
}

// TestSideBySideInformer runs the 2×2 of cores and decoders side by side
// in this process (the informer scenario, JSON), with the metrics endpoint
// on, and checks that every churn event reached every handler of each, the
// CPU split by label, the metrics, and the decomposition.
func TestSideBySideInformer(t *testing.T) {
	dir := t.TempDir()
	c := mustParse(t, "--scenario", "informer", "--side-by-side", "--runs", "1", "--impl", "all", "--wire-workers", "3", "--pods", "2000", "--namespaces", "8",
		"--churn-rate", "0", "--churn-events", "1200", "--churn-duration", "0", "--handlers", "2", "--readers", "1",
		"--handler-workers", "2", "--shards", "3", "--ring-size", "64", "--policy", "grow", "--content-type", "json",
		"--out-dir", dir, "--out", filepath.Join(dir, "extra.json"), "--metrics-addr", "127.0.0.1:0", "--progress", "0")
	var metricsURL, scraped string
	c.onMetrics = func(u string) { metricsURL = u }
	c.afterCheck = func() {
		resp, err := http.Get(metricsURL)
		if err != nil {
			t.Errorf("scrape: %v", err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		scraped = string(b)
	}
	rep, stdout := runLoadgen(t, c)
	for _, want := range []string{
		`shardinformer_shard_queue_depth{impl="shardinformer",informer="loadgen pods",shard="2"}`,
		`shardinformer_events_total{impl="shardinformer",informer="loadgen pods",shard="1",type="update"}`,
		`shardinformer_listener_workers{impl="shardinformer",informer="loadgen pods",listener="*main.handler#2"} 2`,
		`shardinformer_events_total{impl="shardinformer+client-go-decoder",informer="loadgen pods",shard="1",type="update"}`,
		`loadgen_handler_calls_total{impl="client-go"}`,
		`loadgen_handler_calls_total{impl="client-go+wire"}`,
		`loadgen_churn_events_total 1200`,
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !strings.Contains(scraped, want) {
			t.Errorf("metrics endpoint lacks %q", want)
		}
	}
	if !fileExists(filepath.Join(dir, "extra.json")) {
		t.Error("--out file not written")
	}
	if len(rep.Trials) != 1 || len(rep.Trials[0].Results) != 4 || rep.Trials[0].Mode != report.ModeSideBySide {
		t.Fatalf("trials: %+v", rep.Trials)
	}
	tr := rep.Trials[0]
	for _, r := range tr.Results {
		if v := c.variants[r.Impl]; r.Decoder != v.decoder || r.Diet != v.dietName() {
			t.Errorf("%s: decoder %q diet %q, want %+v", r.Impl, r.Decoder, r.Diet, v)
		}
		if i := slices.IndexFunc(rep.Implementations, func(im report.ImplInfo) bool { return im.Name == r.Impl }); i < 0 ||
			rep.Implementations[i].Decoder != r.Decoder || rep.Implementations[i].Diet != r.Diet ||
			(r.Decoder == decoderWire) != (rep.Implementations[i].Options["wire_workers"] == "3") {
			t.Errorf("%s: implementation info %+v", r.Impl, rep.Implementations)
		}
		// Policy grow, no relist: every handler saw every event.
		if !r.Check.Pass || r.EventsObserved != tr.Churn.Emitted || !slices.Equal(r.EventsObservedByHandler, []uint64{1200, 1200}) {
			t.Errorf("%s: check %v, saw %d (per handler %v) of %d", r.Impl, r.Check.Pass, r.EventsObserved, r.EventsObservedByHandler, tr.Churn.Emitted)
		}
		if r.Deliveries != 2400 || r.Latency.Count != 2400 || r.Reads == 0 {
			t.Errorf("%s: deliveries %d latency count %d reads %d", r.Impl, r.Deliveries, r.Latency.Count, r.Reads)
		}
		if r.CPUScope != report.CPUScopeLabel || r.CPUSeconds <= 0 {
			t.Errorf("%s: CPU %v scope %s, want attributed by label", r.Impl, r.CPUSeconds, r.CPUScope)
		}
	}
	// Every figure compares the three others with client-go's stack, and
	// the decomposition is those ratios rearranged.
	for _, f := range rep.Figures {
		if len(f.VsClientGo) != 3 || f.VsClientGo[report.ImplOurs].Ratio != f.Ratio {
			t.Errorf("figure %s: vs client-go %+v, ratio %v", f.Key, f.VsClientGo, f.Ratio)
		}
	}
	row := slices.IndexFunc(rep.Decomposition, func(d report.DecompositionRow) bool { return d.Key == "initial_sync_seconds" })
	if row < 0 {
		t.Fatalf("no decomposition of the initial sync: %+v", rep.Decomposition)
	}
	d := rep.Decomposition[row]
	f := rep.Figures[slices.IndexFunc(rep.Figures, func(f report.Figure) bool { return f.Key == d.Key })]
	if *f.VsClientGo[report.ImplOursClientGoDecode].Ratio != d.Core || *f.VsClientGo[report.ImplClientGoWire].Ratio != d.Wire ||
		*f.Ratio != d.Both || math.Abs(d.WireOnOurs*d.Core-d.Both) > 1e-9 || math.Abs(d.CoreOnWire*d.Wire-d.Both) > 1e-9 {
		t.Errorf("decomposition %+v does not match the figure's ratios %+v", d, f.VsClientGo)
	}
	if !strings.Contains(stdout, "Where the difference comes from") || !strings.Contains(rep.Headline, "our core alone, the wire alone and both") {
		t.Errorf("no decomposition in the summary or headline:\n%s", stdout)
	}
	sch := compileSchema(t)
	if err := sch.Validate(readJSON(t, filepath.Join(rep.Directory, "report.json"))); err != nil {
		t.Errorf("side-by-side report does not match the schema: %v", err)
	}
}

// TestParseVariant checks implementation names: defaults, suffixes, the
// canonical name (only what differs from the defaults) and errors.
func TestParseVariant(t *testing.T) {
	for _, tc := range []struct {
		in       string
		diet     bool // --diet
		want     variant
		wantDiet string
	}{
		{"shardinformer", true, variant{report.ImplOurs, report.ImplOurs, decoderWire, true, false}, dietFull},
		{"shardinformer", false, variant{report.ImplOurs, report.ImplOurs, decoderWire, false, false}, dietNone},
		{"shardinformer+wire", true, variant{report.ImplOurs, report.ImplOurs, decoderWire, true, false}, dietFull},
		{"shardinformer+no-diet", true, variant{"shardinformer+no-diet", report.ImplOurs, decoderWire, false, false}, dietNone},
		{"shardinformer+diet", true, variant{report.ImplOurs, report.ImplOurs, decoderWire, true, false}, dietFull},
		{"shardinformer+wire+diet", false, variant{"shardinformer+diet", report.ImplOurs, decoderWire, true, false}, dietFull},
		{"shardinformer+client-go-decoder", true, variant{report.ImplOursClientGoDecode, report.ImplOurs, decoderClientGo, false, false}, ""},
		{"client-go", true, variant{report.ImplClientGo, report.ImplClientGo, decoderClientGo, false, false}, ""},
		{"client-go+client-go-decoder", true, variant{report.ImplClientGo, report.ImplClientGo, decoderClientGo, false, false}, ""},
		{"client-go+wire", true, variant{report.ImplClientGoWire, report.ImplClientGo, decoderWire, true, false}, dietFull},
		{"client-go+wire+no-diet", true, variant{"client-go+wire+no-diet", report.ImplClientGo, decoderWire, false, false}, dietNone},
		{"shardinformer+compact", true, variant{"shardinformer+compact", report.ImplOurs, decoderWire, true, true}, dietFull},
		{"shardinformer+no-diet+compact", true, variant{"shardinformer+no-diet+compact", report.ImplOurs, decoderWire, false, true}, dietNone},
	} {
		v, err := parseVariant(tc.in, tc.diet)
		if err != nil || v != tc.want || v.dietName() != tc.wantDiet {
			t.Errorf("parseVariant(%q, diet %v) = %+v (diet %q), %v; want %+v (diet %q)", tc.in, tc.diet, v, v.dietName(), err, tc.want, tc.wantDiet)
		}
		// The canonical name reads back as itself.
		if again, err := parseVariant(v.name, tc.diet); err != nil || again != v {
			t.Errorf("parseVariant(%q) = %+v, %v; want %+v", v.name, again, err, v)
		}
	}
	impls, vs, err := parseImpls("all", report.ScenarioController, true)
	if err != nil || !slices.Equal(impls, report.Decomposition) || len(vs) != 4 || !report.HasDecomposition(impls) {
		t.Errorf("--impl all = %v, %v", impls, err)
	}
	if report.HasDecomposition([]string{report.ImplOurs, report.ImplClientGo}) {
		t.Error("two implementations make a 2×2")
	}
	for _, bad := range []string{"client-go+compact", "shardinformer+compact+diet"} {
		if v, err := parseVariant(bad, true); err == nil {
			t.Errorf("parseVariant(%q) = %+v, want an error", bad, v)
		}
	}
}

// TestScaleScenario sweeps two sizes and checks the scale points, the log
// axes of the scale charts and that the figures grow with the size.
func TestScaleScenario(t *testing.T) {
	c := mustParse(t, "--scenario", "scale", "--scale-pods", "400,2000", "--runs", "1", "--namespaces", "4",
		"--churn-rate", "0", "--churn-events", "300", "--churn-duration", "0", "--out-dir", t.TempDir(), "--progress", "0")
	rep, stdout := runLoadgen(t, c)
	if len(rep.Scale) != 2 || rep.Scale[0].Pods != 400 || rep.Scale[1].Pods != 2000 || len(rep.Trials) != 2 {
		t.Fatalf("scale points %+v", rep.Scale)
	}
	var heap [2]float64
	for i, p := range rep.Scale {
		for _, f := range p.Figures {
			if f.Key == "retained_heap_bytes" {
				heap[i] = f.Values[report.ImplOurs].Median
			}
		}
	}
	if heap[1] < 2*heap[0] {
		t.Errorf("retained heap %v at 400 and 2000 pods: does not grow with the objects", heap)
	}
	n := 0
	for _, c := range rep.Charts {
		if strings.HasPrefix(c.ID, "scale_") {
			n++
			if !c.X.Log || !c.Y.Log || len(c.Series) != 1 || len(c.Series[0].Points) != 2 {
				t.Errorf("scale chart %s: log %v/%v series %+v", c.ID, c.X.Log, c.Y.Log, c.Series)
			}
		}
	}
	if n < 5 || !strings.Contains(stdout, "growth") {
		t.Errorf("%d scale charts; summary:\n%s", n, stdout)
	}
}

func TestCheckDetectsMismatch(t *testing.T) {
	want := map[string]string{"a/1": "10", "a/2": "11", "b/1": "12"}
	var notes []string
	n := diff(want, map[string]string{"a/1": "10", "a/2": "9", "c/9": "3"}, func(s string) { notes = append(notes, s) })
	if n != 3 || len(notes) != 3 {
		t.Fatalf("diff = %d %q, want 3 mismatches (stale a/2, missing b/1, extra c/9)", n, notes)
	}
	if n := diff(want, map[string]string{"a/1": "10", "a/2": "11", "b/1": "12"}, func(string) {}); n != 0 {
		t.Errorf("equal maps: %d mismatches", n)
	}
}

func stampedPod(rv string, stamp int64, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv,
		Annotations: map[string]string{target.AnnEmitted: fmt.Sprint(stamp)}}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return p
}

// TestHandlerSkipsMarkForDeletion checks that the update a real API server
// sends when it marks a pod for deletion (before the delete event) is not
// counted as a churn event nor timed with the previous update's stamp, while
// other updates are, and that a delete is timed once its stamp is joined.
func TestHandlerSkipsMarkForDeletion(t *testing.T) {
	h := newHandler(0)
	now := time.Now().UnixNano()
	h.OnUpdate(stampedPod("1", now, false), stampedPod("2", now, false))
	h.OnUpdate(stampedPod("2", now, false), stampedPod("3", now, true)) // marked for deletion
	h.OnUpdate(stampedPod("3", now, true), stampedPod("4", now, true))  // a later write while terminating
	h.OnDelete(stampedPod("4", now, true))
	if got := h.observed.Load(); got != 3 {
		t.Errorf("observed %d churn events, want 3 (update, update while terminating, delete)", got)
	}
	if got := latency.Merge(&h.lat).N; got != 2 {
		t.Errorf("timed %d events before the join, want 2 (the updates other than the marking)", got)
	}
	h.deletes.join(map[string]int64{"ns/p": now}, &h.lat)
	if got := latency.Merge(&h.lat).N; got != 3 {
		t.Errorf("timed %d events after the join, want 3", got)
	}
}

// TestChurnAllocsProfiles checks --profile allocs on an informer run: each
// implementation's process writes allocation profiles at the churn's start
// and end, both sampled (pkg/profile alone leaves the rate at 0), the end
// one holding more allocation than the start, and the report carries the
// churn's allocation and the GC goal at its start.
func TestChurnAllocsProfiles(t *testing.T) {
	dir := t.TempDir()
	c := mustParse(t, "--scenario", "informer", "--runs", "1", "--pods", "1500", "--namespaces", "6",
		"--churn-rate", "0", "--churn-events", "600", "--churn-duration", "0", "--profile", "allocs",
		"--out-dir", dir, "--progress", "0")
	rep, _ := runLoadgen(t, c)
	for _, tr := range rep.Trials {
		r := tr.Results[0]
		var space [2]int64
		for i, name := range []string{"churn-start.pprof", "churn-end.pprof"} {
			for _, s := range readProfile(t, filepath.Join(r.ProfileDir, name)).Sample {
				space[i] += s.Value[1] // alloc_space
			}
		}
		if space[0] == 0 || space[1] <= space[0] {
			t.Errorf("%s: alloc_space %d at the churn's start, %d at its end", r.Impl, space[0], space[1])
		}
		if r.ChurnAllocBytes == 0 || r.ChurnAllocObjects == 0 || r.ChurnStartGoal == 0 || r.ChurnStartLive == 0 || r.ChurnStartHeap == 0 {
			t.Errorf("%s: churn heap figures %d B %d objects, live %d goal %d heap %d", r.Impl,
				r.ChurnAllocBytes, r.ChurnAllocObjects, r.ChurnStartLive, r.ChurnStartGoal, r.ChurnStartHeap)
		}
	}
}

func readProfile(t *testing.T, path string) *pprofile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := pprofile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunOrder checks the trial order of runs 1 to 3: as given, reversed, as given; the list
// passed in is not changed.
func TestRunOrder(t *testing.T) {
	impls := []string{"a", "b", "c"}
	for r, want := range [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"a", "b", "c"}} {
		if got := runOrder(impls, r+1); !slices.Equal(got, want) {
			t.Errorf("run %d: %v, want %v", r+1, got, want)
		}
	}
	if !slices.Equal(impls, []string{"a", "b", "c"}) {
		t.Errorf("runOrder changed its argument: %v", impls)
	}
}
