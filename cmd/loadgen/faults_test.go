package main

import (
	"bytes"
	"errors"
	"flag"
	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/report"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFaultsFlag: --faults is documented and validated, with errors that
// say what is wrong.
func TestFaultsFlag(t *testing.T) {
	c := mustParse(t, "--faults", "cut=0.02,stall=0.01:2s,500=0.01,429=0.01,410=0.005,seed=7")
	if c.faults == nil || c.faults.Seed != 7 || len(c.faults.Rules) != 5 {
		t.Fatalf("parsed %+v", c.faults)
	}
	if c := mustParse(t); c.faults != nil {
		t.Errorf("no --faults, but a fault config %+v", c.faults)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--faults", "cut=2"}, `--faults "cut=2"`},
		{[]string{"--faults", "cut=2"}, "not a number in [0, 1]"},
		{[]string{"--faults", "drop=0.1"}, `unknown kind or key "drop"`},
		{[]string{"--faults", "seed=3"}, "names no fault kind"},
		{[]string{"--faults", "cut=0.7,410=0.7"}, "add up to"},
		{[]string{"--faults", "cut=0.1:5s"}, "applies to stall and 429 only"},
		{[]string{"--faults", "cut=0.1", "--scenario", "replicas"}, "not with --scenario replicas"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	var out bytes.Buffer
	if _, err := parseFlags([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, s := range []string{"  -faults ", "cut=0.02,stall=0.01:2s,500=0.01,429=0.01,410=0.005,seed=7", "Retry-After", "max=N", "bytes=SIZE"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("--help does not document %q", s)
		}
	}
}

// TestRequestCounter: lists (first pages only), watches and WatchList
// streams of the resource are counted, other requests not; relists and
// watch restarts follow.
func TestRequestCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	rc := newRequestCounter("")
	client := &http.Client{Transport: rc.wrap(http.DefaultTransport)}
	for _, u := range []string{
		"/api/v1/pods", "/api/v1/pods?continue=abc", "/api/v1/namespaces/x/pods?limit=500",
		"/api/v1/pods?watch=true&sendInitialEvents=true", "/api/v1/pods?watch=1", "/api/v1/pods?watch=true",
		"/api/v1/configmaps", "/api/v1/namespaces/x/pods/p", "/version",
	} {
		resp, err := client.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got := *rc.report()
	want := report.ListWatchRequests{Lists: 2, Watches: 2, WatchLists: 1, Relists: 2, WatchRestarts: 2}
	if got != want {
		t.Errorf("counted %+v, want %+v", got, want)
	}
	if r := *newRequestCounter("widgets").report(); r != (report.ListWatchRequests{}) {
		t.Errorf("nothing sent, counted %+v", r)
	}
}

// TestFaultsRun: a controller run with --faults, each implementation in
// its own process behind the proxy: faults are injected and counted by
// kind, every implementation relists or restarts its watch, converges
// after the faults stop (the check passes) and says how fast; the report
// validates against the schema.
func TestFaultsRun(t *testing.T) {
	dir := t.TempDir()
	c := mustParse(t, "--pods", "600", "--namespaces", "4", "--churn-rate", "400", "--churn-events", "1200", "--churn-duration", "0",
		"--runs", "1", "--workers", "2", "--reconcile-work", "5us", "--out-dir", dir, "--progress", "0",
		"--faults", "cut=0.3,stall=0.1:300ms,500=0.1,429=0.1,410=0.3,seed=7,max=3,bytes=64Ki")
	rep, stdout := runLoadgen(t, c)
	if !rep.Pass {
		t.Fatal("the run did not pass")
	}
	if rep.Settings.Faults == "" || !strings.Contains(stdout, "Faults (") {
		t.Errorf("settings.faults %q; summary:\n%s", rep.Settings.Faults, stdout)
	}
	for _, tr := range rep.Trials {
		f := tr.Faults
		if f == nil {
			t.Fatalf("trial %v: no faults in the report", tr.Impls)
		}
		var total uint64
		for _, n := range f.Injected {
			total += n
		}
		if total == 0 || f.Requests == 0 || f.StoppedAt < tr.ChurnEnd-0.5 {
			t.Errorf("trial %v: faults %+v (churn end %.2f): want some injected, stopped at the churn's end", tr.Impls, f, tr.ChurnEnd)
		}
		for _, r := range tr.Results {
			if r.ConvergeAfterFaults == nil || r.Requests == nil {
				t.Errorf("%s: converge %v, requests %v", r.Impl, r.ConvergeAfterFaults, r.Requests)
				continue
			}
			if r.Requests.Relists+r.Requests.WatchRestarts == 0 {
				t.Errorf("%s: %d faults injected but no relist or watch restart: %+v", r.Impl, total, *r.Requests)
			}
			t.Logf("%s: injected %v; requests %+v; converged %.2fs after the faults stopped", r.Impl, f.Injected, *r.Requests, *r.ConvergeAfterFaults)
		}
	}
	sch := compileSchema(t)
	if err := sch.Validate(readJSON(t, filepath.Join(rep.Directory, "report.json"))); err != nil {
		t.Fatalf("report.json does not match report.schema.json: %v", err)
	}
	_ = os.RemoveAll(rep.Directory)
}
