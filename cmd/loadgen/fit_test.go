package main

import (
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
)

// TestChildMemLimitFlag: --child-mem-limit reads binary sizes and 0, says
// what is wrong with anything else, and is refused where no implementation
// runs in a child process of its own.
func TestChildMemLimitFlag(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want int64
	}{
		{"20GiB", 20 << 30}, {"20Gi", 20 << 30}, {"512MiB", 512 << 20}, {"1.5GiB", 3 << 29}, {"2097152", 2 << 20},
		{"0", 0}, {"none", 0}, {"off", 0},
	} {
		c, err := parseFlags([]string{"--child-mem-limit", tc.arg}, io.Discard)
		if err != nil || c.childMemLimit != tc.want {
			t.Errorf("--child-mem-limit %s: %d, %v; want %d", tc.arg, c.childMemLimit, err, tc.want)
		}
	}
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.childMemLimit != defaultChildMemLimit() {
		t.Errorf("default --child-mem-limit %d, %v; want %d", c.childMemLimit, err, defaultChildMemLimit())
	}
	if total := int64(procfs.MemTotal()); total > 8<<30 && (c.childMemLimit > total-childMemHeadroom || c.childMemLimit < total-childMemHeadroom-1<<30) {
		t.Errorf("default --child-mem-limit %s on a machine of %s, want its memory less 4 GiB", fmtLimit(c.childMemLimit), fmtLimit(total))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--child-mem-limit", "lots"}, `--child-mem-limit "lots": want a size in binary units (e.g. 20GiB, 512MiB) or 0 for no limit`},
		{[]string{"--child-mem-limit", "20GB"}, `--child-mem-limit "20GB": want a size in binary units`},
		{[]string{"--child-mem-limit", "20G"}, `--child-mem-limit "20G": want a size in binary units`},
		{[]string{"--child-mem-limit", "-1GiB"}, `--child-mem-limit "-1GiB": must not be negative`},
		{[]string{"--child-mem-limit", "100KiB"}, "below 1 MiB"},
		{[]string{"--child-mem-limit", "1GiB", "--side-by-side"}, "--child-mem-limit: applies to each implementation alone in its child process, not with --side-by-side"},
		{[]string{"--child-mem-limit", "1GiB", "--scenario", "replicas"}, "not with --side-by-side or --scenario replicas"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	// The default applies, silently, only where it can.
	if _, err := parseFlags([]string{"--side-by-side"}, io.Discard); err != nil {
		t.Errorf("--side-by-side with the default --child-mem-limit: %v", err)
	}
	var help strings.Builder
	_, _ = parseFlags([]string{"--help"}, &help)
	for _, w := range []string{"  -child-mem-limit ", `reported as "did not fit in N GiB"`, "the run goes on", "GOMEMLIMIT"} {
		if !strings.Contains(help.String(), w) {
			t.Errorf("--help lacks %q", w)
		}
	}
	if got := childSoftLimit(20 << 30); got != 18<<30 {
		t.Errorf("soft limit under 20 GiB: %s, want 18 GiB", fmtLimit(got))
	}
}

// TestScaleDidNotFit sweeps three sizes with both implementations under a
// limit only the smallest fits in: at the middle size each implementation's
// child is killed above the limit and reported as did-not-fit, and the sweep
// goes on (the second implementation still runs there); at the largest
// neither is run again. The smallest size is checked as usual, and the
// report, its summary, its schema and its scale table say what did not fit.
func TestScaleDidNotFit(t *testing.T) {
	// 300 pods take a child ≈50 MiB (≈100 MiB with -race), 25k pods
	// ≥300 MiB of cache alone (ours, with the diet; client-go's ≥500 MiB).
	c := mustParse(t, "--scenario", "scale", "--impl", "both", "--scale-pods", "300,25000,30000", "--runs", "1", "--namespaces", "3",
		"--churn-rate", "0", "--churn-events", "100", "--churn-duration", "0", "--child-mem-limit", "200MiB",
		"--out-dir", t.TempDir(), "--progress", "0")
	rep, stdout := runLoadgen(t, c)
	if !rep.Pass || len(rep.Trials) != 2 || rep.Settings.ChildMemLimit != 200<<20 {
		t.Fatalf("pass %v, %d trials, child limit %d; want the 300-pod trials alone, passed", rep.Pass, len(rep.Trials), rep.Settings.ChildMemLimit)
	}
	for _, tr := range rep.Trials {
		r := tr.Results[0]
		if tr.Pods != 300 || !r.Check.Pass || r.GoMemLimitBytes != childSoftLimit(200<<20) {
			t.Errorf("trial %v at %d pods: check %+v, Go memory limit %d", tr.Impls, tr.Pods, r.Check, r.GoMemLimitBytes)
		}
		t.Logf("%s at %d pods: peak RSS %s", r.Impl, tr.Pods, report.FmtBytes(float64(r.PeakRSSBytes)))
	}
	type key struct {
		impl   string
		pods   int
		notRun bool
	}
	var got []key
	for _, d := range rep.DidNotFit {
		got = append(got, key{d.Impl, d.Pods, d.NotRun})
		if d.Text != "did not fit in 200 MiB" || d.LimitBytes != 200<<20 || d.Run != 1 {
			t.Errorf("%+v: want \"did not fit in 200 MiB\"", d)
		}
		if !d.NotRun && (d.PeakRSSBytes <= 200<<20 || !strings.Contains(d.Reason, "killed by loadgen") || d.Phase == "" || d.Seconds <= 0) {
			t.Errorf("%+v: want a child killed above the limit", d)
		}
		if d.NotRun && !strings.Contains(d.Reason, "not run: it did not fit at 25k pods in run 1") {
			t.Errorf("%+v: want not run, as it did not fit at 25k", d)
		}
	}
	want := []key{{report.ImplOurs, 25000, false}, {report.ImplClientGo, 25000, false}, {report.ImplOurs, 30000, true}, {report.ImplClientGo, 30000, true}}
	if !slices.Equal(got, want) {
		t.Errorf("did not fit %v, want %v", got, want)
	}
	if len(rep.Scale) != 3 || rep.Scale[1].DidNotFit[report.ImplClientGo] != "did not fit in 200 MiB" || len(rep.Scale[1].Figures) != 0 ||
		len(rep.Scale[0].Figures) == 0 || rep.Scale[0].DidNotFit != nil {
		t.Errorf("scale points %+v", rep.Scale)
	}
	for _, w := range []string{"DID NOT FIT shardinformer (25000 pods, run 1): did not fit in 200 MiB: resident set",
		"DID NOT FIT client-go (30000 pods, run 1): did not fit in 200 MiB; not run", "PASS client-go (300 pods, run 1)",
		"Did not fit: shardinformer did not fit in 200 MiB at 25k pods; client-go did not fit in 200 MiB at 25k pods."} {
		if !strings.Contains(stdout, w) {
			t.Errorf("summary lacks %q", w)
		}
	}
	if !strings.Contains(stdout, "did not fit in 200 MiB  ") && !strings.Contains(stdout, "did not fit in 200 MiB\n") {
		t.Errorf("the scale table does not say what did not fit:\n%s", stdout)
	}
	if err := compileSchema(t).Validate(readJSON(t, filepath.Join(rep.Directory, "report.json"))); err != nil {
		t.Errorf("report.json does not match report.schema.json: %v", err)
	}
	if _, err := report.HTML(rep); err != nil {
		t.Error(err)
	}
}

// TestScaleHonoursPath: the scale scenario builds both implementations
// through --path: on the typed path (the default) it sweeps the controller
// scenario on the typed factory, wire and diet; on another path it sweeps
// the informer scenario, that path's one, through the path's factories.
func TestScaleHonoursPath(t *testing.T) {
	typed := mustParse(t, "--scenario", "scale", "--path", "typed")
	if !typed.controller() || !slices.Equal(typed.impls, []string{report.ImplOurs}) {
		t.Errorf("--scenario scale --path typed: controller %v impls %v", typed.controller(), typed.impls)
	}
	if v := typed.variants[report.ImplOurs]; v.decoder != decoderWire || !v.diet {
		t.Errorf("--scenario scale --path typed: ours %+v, want the wire with its diet", v)
	}
	set, impls := reportSettings(typed, report.Metadata{})
	rt := report.New(typed.scenario, set, impls, report.Metadata{})
	if im := rt.Implementations[0]; !strings.HasPrefix(im.Informer, "shardinformer informers.NewSharedInformerFactoryWithOptions(clientset") || im.Queue != queueOurs {
		t.Errorf("typed scale: %+v", im)
	}

	c := mustParse(t, "--scenario", "scale", "--path", "metadata", "--impl", "both", "--scale-pods", "200,600", "--runs", "1",
		"--namespaces", "2", "--churn-rate", "0", "--churn-events", "100", "--churn-duration", "0", "--out-dir", t.TempDir(), "--progress", "0")
	if c.controller() || c.scenario != report.ScenarioScale {
		t.Fatalf("--scenario scale --path metadata: scenario %s, controller %v", c.scenario, c.controller())
	}
	rep, stdout := runLoadgen(t, c)
	if !rep.Pass || rep.Settings.Path != pathMetadata || len(rep.Trials) != 4 || len(rep.Scale) != 2 {
		t.Fatalf("pass %v path %q, %d trials, %d scale points", rep.Pass, rep.Settings.Path, len(rep.Trials), len(rep.Scale))
	}
	for _, tr := range rep.Trials {
		r := tr.Results[0]
		if !r.Check.Pass || r.Queue != "" || r.EventsObserved != 100 || (r.Impl == report.ImplClientGo && !strings.Contains(r.ListWatch, "metadata client")) {
			t.Errorf("%s at %d pods: check %v queue %q observed %d list/watch %q", r.Impl, tr.Pods, r.Check.Pass, r.Queue, r.EventsObserved, r.ListWatch)
		}
	}
	for _, im := range rep.Implementations {
		if !strings.Contains(im.Informer, "metadatainformer") {
			t.Errorf("%s: informer %q, want the metadata factory", im.Name, im.Informer)
		}
	}
	keys := map[string]bool{}
	for _, f := range rep.Scale[1].Figures {
		keys[f.Key] = true
	}
	if !keys["delivery_p99"] || keys["latency_p99"] || !keys["sync_gc_cpu_seconds"] || !keys["heap_bytes_per_object"] {
		t.Errorf("figures %v: want the informer scenario's", keys)
	}
	if !strings.Contains(stdout, "scale scenario, metadata path, on apisim") {
		t.Errorf("summary does not name the path:\n%s", stdout)
	}
}

// TestOOMScanner: the Go runtime's out-of-memory message is noticed even
// when it arrives split between writes, and everything passes through.
func TestOOMScanner(t *testing.T) {
	var out strings.Builder
	s := &oomScanner{w: &out}
	for _, p := range []string{"goroutine 1 [running]:\nfatal error: runt", "ime: out of mem", "ory\n"} {
		if s.seen() {
			t.Fatal("seen before the whole message")
		}
		_, _ = s.Write([]byte(p))
	}
	if !s.seen() || out.String() != "goroutine 1 [running]:\nfatal error: runtime: out of memory\n" {
		t.Errorf("seen %v, passed %q", s.seen(), out.String())
	}
}

// TestChildWatchVerdicts: a child the parent kills above the limit, and one
// killed by SIGKILL from elsewhere (as the OOM killer does), did not fit;
// one that fails otherwise did.
func TestChildWatchVerdicts(t *testing.T) {
	start := func(args ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		if err := cmd.Start(); err != nil {
			t.Skip(err)
		}
		return cmd
	}
	// Above the limit (1 byte: the first sample).
	cmd := start("sleep", "30")
	w := watchChild(cmd, 1, nil, procfs.OOMKills())
	deadline := time.Now().Add(10 * time.Second)
	for procfs.RSS(cmd.Process.Pid) > 0 && time.Now().Before(deadline) {
		w.mu.Lock()
		killed := w.killed
		w.mu.Unlock()
		if killed {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.stop()
	d := w.verdict(cmd.Wait())
	if d == nil || !strings.Contains(d.Reason, "killed by loadgen") || d.Text != "did not fit in 1 B" || d.PeakRSSBytes == 0 {
		t.Errorf("above the limit: %+v", d)
	}
	// SIGKILL from elsewhere, no limit: the machine's memory.
	cmd = start("sleep", "30")
	w = watchChild(cmd, 0, &oomScanner{w: io.Discard}, procfs.OOMKills())
	_ = cmd.Process.Signal(syscall.SIGKILL)
	w.stop()
	d = w.verdict(cmd.Wait())
	if d == nil || !strings.Contains(d.Reason, "SIGKILL") || !strings.HasSuffix(d.Text, "(the machine's memory)") {
		t.Errorf("SIGKILL: %+v", d)
	}
	// A failure that is no memory's: it fitted.
	cmd = start("sh", "-c", "exit 3")
	w = watchChild(cmd, 1<<30, &oomScanner{w: io.Discard}, procfs.OOMKills())
	w.stop()
	if d := w.verdict(cmd.Wait()); d != nil {
		t.Errorf("exit 3: %+v, want it to have fitted", d)
	}
}
