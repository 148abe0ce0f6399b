package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/procfs"
)

// kubeconfigFile writes a syntactically valid kubeconfig (parseFlags only
// checks that it exists) and returns its path.
func kubeconfigFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseFlagsReusePods(t *testing.T) {
	kc := kubeconfigFile(t)
	ok := []string{"--kubeconfig", kc, "--reuse-pods", "--scenario", "informer", "--churn-duration", "0", "--churn-events", "0"}
	c, err := parseFlags(ok, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags(%q): %v", ok, err)
	}
	if !c.reusePods {
		t.Error("--reuse-pods not set")
	}
	if d, err := parseFlags(nil, io.Discard); err != nil || d.reusePods || d.serverPIDs != nil {
		t.Errorf("defaults: reuse %v server pids %v, err %v; want off", d.reusePods, d.serverPIDs, err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--reuse-pods", "--scenario", "informer", "--churn-duration", "0"}, []string{"--reuse-pods needs --kubeconfig"}},
		{[]string{"--reuse-pods", "--kubeconfig", kc, "--churn-duration", "0"}, []string{"--reuse-pods needs --scenario informer", "controller scenario"}},
		{[]string{"--reuse-pods", "--kubeconfig", kc, "--scenario", "informer"}, []string{"--reuse-pods needs no churn"}},
		{[]string{"--reuse-pods", "--kubeconfig", kc, "--scenario", "informer", "--churn-duration", "0", "--churn-events", "5"}, []string{"needs no churn"}},
		{[]string{"--reuse-pods", "--scenario", "scale"}, []string{"needs --kubeconfig", "needs --scenario informer", "needs no churn"}},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("parseFlags(%q) = %v, want an error containing %q", tc.args, err, w)
			}
		}
	}
}

func TestParseFlagsServerPIDs(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	c, err := parseFlags([]string{"--server-pids", self + ", " + self}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.serverPIDs, []int{os.Getpid(), os.Getpid()}) {
		t.Errorf("server pids %v", c.serverPIDs)
	}
	for _, tc := range []struct{ arg, want string }{
		{"x", `"x" is not a process id`},
		{"0", `"0" is not a process id`},
		{"1,", `"" is not a process id`},
		{"-3", `"-3" is not a process id`},
		{"4194305", "--server-pids: open /proc/4194305/stat"}, // above the kernel's pid limit
	} {
		_, err := parseFlags([]string{"--server-pids", tc.arg}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--server-pids %q: %v, want an error containing %q", tc.arg, err, tc.want)
		}
	}
	var out bytes.Buffer
	if _, err := parseFlags([]string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, f := range []string{"reuse-pods", "server-pids"} {
		if !strings.Contains(out.String(), "  -"+f+" ") && !strings.Contains(out.String(), "  -"+f+"\n") {
			t.Errorf("--help does not document -%s", f)
		}
	}
}

func TestServersCPU(t *testing.T) {
	// This process's own reading is a CPU time that does not go backwards.
	a, err := procfs.CPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if b, err := serversCPU([]int{os.Getpid()}); err != nil || b < a {
		t.Errorf("serversCPU = %v, %v; want ≥ %v", b, err, a)
	}
}
