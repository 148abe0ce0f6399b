package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseFlagsDefaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.impls, []string{implOurs, implClientGo}) || c.pods != 100000 || c.sequential ||
		c.policy.String() != "buffer" || c.mix != (mix{1, 8, 1}) || c.churnDuration <= 0 {
		t.Errorf("defaults = %+v", c)
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
		{[]string{"--ring-size", "0"}, "--ring-size 0"},
		{[]string{"--churn-rate", "-3"}, "--churn-rate -3"},
		{[]string{"--churn-duration", "-1s"}, "must not be negative"},
		{[]string{"--impl", "informer2"}, `--impl "informer2"`},
		{[]string{"--policy", "drop"}, `unknown full-ring policy "drop"`},
		{[]string{"--mix", "1:2"}, "want create:update:delete"},
		{[]string{"--mix", "1:x:1"}, `weight "x"`},
		{[]string{"--mix", "0:0:0"}, "all weights are zero"},
		{[]string{"--content-type", "yaml"}, `--content-type "yaml"`},
		{[]string{"--watchlist", "maybe"}, `--watchlist "maybe"`},
		{[]string{"--profile", "heap"}, `--profile "heap"`},
		{[]string{"--metrics-addr", "0.0.0.0:9090"}, "only loopback"},
		{[]string{"--metrics-addr", "nonsense"}, "--metrics-addr"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig"},
		{[]string{"--pods", "ten"}, "invalid value"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	// Several problems are reported together.
	_, err := parseFlags([]string{"--pods", "-1", "--impl", "x"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--pods") || !strings.Contains(err.Error(), "--impl") {
		t.Errorf("two bad flags: %v, want both reported", err)
	}
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"impl", "sequential", "pods", "namespaces", "churn-rate", "churn-duration", "churn-events",
		"mix", "handlers", "handler-work", "readers", "workers", "shards", "ring-size", "policy", "content-type",
		"watchlist", "managed-fields", "kubeconfig", "out", "html", "metrics-addr", "profile", "profile-dir", "seed"} {
		if !strings.Contains(out.String(), "  -"+f+" ") && !strings.Contains(out.String(), "  -"+f+"\n") {
			t.Errorf("--help does not document -%s", f)
		}
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
	c, err := parseFlags([]string{"--kubeconfig", path, "--pods", "10", "--progress", "0"}, io.Discard)
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

// TestShortRun runs both implementations side by side on a small simulated
// cluster, with the metrics endpoint on, and checks the JSON report, the
// HTML report, that every churn event reached every handler of both, and
// that the endpoint serves shardinformer's, loadgen's and the Go runtime's
// metrics.
func TestShortRun(t *testing.T) {
	dir := t.TempDir()
	out, html := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	c, err := parseFlags([]string{
		"--pods", "2000", "--namespaces", "8", "--churn-rate", "0", "--churn-events", "1200", "--churn-duration", "0",
		"--handlers", "2", "--readers", "1", "--workers", "2", "--shards", "3", "--ring-size", "64", "--policy", "grow",
		"--content-type", "json", "--out", out, "--html", html, "--metrics-addr", "127.0.0.1:0", "--progress", "0",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if _, err := run(ctx, c, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Log("\n" + stdout.String())

	for _, want := range []string{
		`shardinformer_shard_queue_depth{shard="2"}`,
		`shardinformer_shard_objects{shard="0"}`,
		`shardinformer_events_total{shard="1",type="update"}`,
		`shardinformer_handler_duration_seconds_bucket{listener="*main.handler#1"`,
		`shardinformer_listener_workers{listener="*main.handler#2"} 2`,
		`shardinformer_relists_total 1`,
		`loadgen_handler_calls_total{impl="client-go"}`,
		`loadgen_churn_events_total 1200`,
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !strings.Contains(scraped, want) {
			t.Errorf("metrics endpoint lacks %q", want)
		}
	}

	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != 1 || !rep.Pass || rep.Mode != "side-by-side" || len(rep.Scenarios) != 1 || len(rep.Implementations) != 2 {
		t.Fatalf("report header: schema=%d pass=%v mode=%s scenarios=%d impls=%d", rep.Schema, rep.Pass, rep.Mode, len(rep.Scenarios), len(rep.Implementations))
	}
	sc := rep.Scenarios[0]
	if sc.Churn.Emitted != 1200 || sc.Churn.Creates+sc.Churn.Updates+sc.Churn.Deletes != 1200 || sc.Churn.Failed != 0 {
		t.Errorf("churn = %+v, want 1200 events", sc.Churn)
	}
	if want := 2000 + int(sc.Churn.Creates) - int(sc.Churn.Deletes); sc.ServerObjects != want {
		t.Errorf("server objects = %d, want %d", sc.ServerObjects, want)
	}
	if len(sc.Timeline) == 0 || sc.CPUSeconds <= 0 || sc.PeakHeapBytes == 0 || sc.PeakRSSBytes == 0 {
		t.Errorf("scenario measurements missing: timeline=%d cpu=%v heap=%d rss=%d", len(sc.Timeline), sc.CPUSeconds, sc.PeakHeapBytes, sc.PeakRSSBytes)
	}
	for _, ir := range rep.Implementations {
		if !ir.Check.Pass || ir.Objects != sc.ServerObjects || ir.Check.ServerObjects != sc.ServerObjects {
			t.Errorf("%s: check %+v, objects %d, want pass with %d", ir.Name, ir.Check, ir.Objects, sc.ServerObjects)
		}
		// Policy grow, no relist: every handler saw every event.
		if ir.EventsObserved != sc.Churn.Emitted || !slices.Equal(ir.EventsObservedByH, []uint64{sc.Churn.Emitted, sc.Churn.Emitted}) {
			t.Errorf("%s saw %d (per handler %v) of %d churn events", ir.Name, ir.EventsObserved, ir.EventsObservedByH, sc.Churn.Emitted)
		}
		if ir.Deliveries != 2*sc.Churn.Emitted {
			t.Errorf("%s: %d deliveries, want %d (2 handlers)", ir.Name, ir.Deliveries, 2*sc.Churn.Emitted)
		}
		if ir.Latency.Count != 2*sc.Churn.Emitted || ir.Latency.P50 <= 0 || ir.Latency.P50 > ir.Latency.P99 || ir.Latency.P99 > ir.Latency.Max {
			t.Errorf("%s latency = %+v", ir.Name, ir.Latency)
		}
		if ir.InitialSyncSeconds <= 0 || ir.EventsPerSecond <= 0 || ir.DeliveriesPerSecond <= 0 || ir.Reads == 0 ||
			ir.RetainedHeapBytes == 0 || ir.HeapBytesPerObject <= 0 {
			t.Errorf("%s: missing measurements: %+v", ir.Name, ir)
		}
		if (ir.Name == implOurs) != (ir.Coalesced != nil && ir.Overflow != nil && ir.Relists != nil) {
			t.Errorf("%s: pipeline counters present=%v", ir.Name, ir.Coalesced != nil)
		}
		if ir.Name == implOurs && *ir.Coalesced != 0 {
			t.Errorf("policy grow coalesced %d notifications", *ir.Coalesced)
		}
	}
	if !strings.Contains(stdout.String(), "PASS shardinformer") || !strings.Contains(stdout.String(), "PASS client-go") {
		t.Errorf("summary lacks PASS lines:\n%s", stdout.String())
	}
	h, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "Churn throughput over time", "Delivery latency", "client-go", "shardinformer"} {
		if !bytes.Contains(h, []byte(want)) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	if bytes.Contains(h, []byte("http://")) || bytes.Contains(h, []byte("https://")) {
		// Only the SVG namespace may name a URL; nothing is fetched.
		if n := bytes.Count(h, []byte("http")); n != bytes.Count(h, []byte(`xmlns="http://www.w3.org/2000/svg"`))+bytes.Count(h, []byte(sc.URL)) {
			t.Errorf("HTML report refers to %d URLs; it must work offline", n)
		}
	}
}

// TestSequentialDetectsMismatch runs one implementation sequentially and then
// corrupts a handler's view, to show the check can fail.
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

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []time.Duration
	for range 20000 {
		v := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		vals = append(vals, v)
		h.record(v)
	}
	slices.Sort(vals)
	s := merge(&h)
	for _, q := range []float64{.5, .9, .99, .999} {
		exact := vals[int(q*float64(len(vals)))-1]
		got := s.quantile(q)
		if d := float64(got-exact) / float64(exact); d > 0.07 || d < -0.07 {
			t.Errorf("q%v = %v, exact %v (%.1f%% off)", q, got, exact, 100*d)
		}
	}
	if s.max != int64(vals[len(vals)-1]) || s.n != 20000 {
		t.Errorf("max %v n %d", time.Duration(s.max), s.n)
	}
	for b := range 400 { // bounds and bucketOf agree
		lo, hi := bucketBounds(b)
		if bucketOf(lo) != b || bucketOf(hi) != b || (b > 0 && bucketOf(lo-1) != b-1) {
			t.Fatalf("bucket %d: [%d, %d] maps to %d, %d", b, lo, hi, bucketOf(lo), bucketOf(hi))
		}
	}
}

// TestHandlerSkipsMarkForDeletion checks that the update a real API server
// sends when it marks a pod for deletion (before the delete event) is not
// counted as a churn event nor timed with the previous update's stamp, while
// other updates are.
func TestHandlerSkipsMarkForDeletion(t *testing.T) {
	h := newHandler(0, func() *churner { return nil })
	stamped := func(rv string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv,
			Annotations: map[string]string{annEmitted: fmt.Sprint(time.Now().UnixNano())}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	h.OnUpdate(stamped("1", false), stamped("2", false))
	h.OnUpdate(stamped("2", false), stamped("3", true)) // marked for deletion
	h.OnUpdate(stamped("3", true), stamped("4", true))  // a later write while terminating
	h.OnDelete(stamped("4", true))
	if got := h.observed.Load(); got != 3 {
		t.Errorf("observed %d churn events, want 3 (update, update while terminating, delete)", got)
	}
	if got := h.lat.n.Load(); got != 2 {
		t.Errorf("timed %d events, want 2 (the updates other than the marking)", got)
	}
}
