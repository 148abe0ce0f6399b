//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/shardinformer/shardinformer/e2e/cluster"
)

const (
	envRequire  = "SHARDINFORMER_E2E_REQUIRE"          // set: missing binaries fail instead of skipping
	envPods     = "SHARDINFORMER_E2E_PODS"             // pods per churn (default 5000)
	envWriters  = "SHARDINFORMER_E2E_WRITERS"          // concurrent writers (default 16)
	envKeep     = "SHARDINFORMER_E2E_KEEP"             // set: keep cluster dirs for debugging
	envConverge = "SHARDINFORMER_E2E_CONVERGE_SECONDS" // liveness bound for convergence (default 300)
)

var shared struct {
	once sync.Once
	c    *cluster.Cluster
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "shared cluster logs:\n%s\n", shared.c.Logs(64<<10))
		}
		shared.c.Stop()
	}
	os.Exit(code)
}

// requireBinaries skips the test when the server binaries are missing, or
// fails it when SHARDINFORMER_E2E_REQUIRE is set.
func requireBinaries(t *testing.T) {
	t.Helper()
	if _, err := cluster.FindBinaries(); err != nil {
		if os.Getenv(envRequire) != "" {
			t.Fatalf("%v (%s is set, so this is a failure)", err, envRequire)
		}
		t.Skipf("skipping e2e: %v; set %s=1 to make this a failure", err, envRequire)
	}
}

// sharedCluster returns the cluster shared by the tests that need no special
// server flags, starting it on first use; TestMain stops it.
func sharedCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	requireBinaries(t)
	shared.once.Do(func() {
		shared.c, shared.err = cluster.Start(context.Background(), cluster.Options{
			KeepDir: os.Getenv(envKeep) != "",
			Logf:    func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
		})
	})
	if shared.err != nil {
		t.Fatalf("starting the shared cluster: %v", shared.err)
	}
	return shared.c
}

// ownCluster starts a cluster for one test, with extra kube-apiserver flags;
// it is stopped (and its logs printed if the test failed) at cleanup.
func ownCluster(t *testing.T, apiserverArgs ...string) *cluster.Cluster {
	t.Helper()
	requireBinaries(t)
	c, err := cluster.Start(t.Context(), cluster.Options{
		APIServerArgs: apiserverArgs,
		KeepDir:       os.Getenv(envKeep) != "",
		Logf:          t.Logf,
	})
	if err != nil {
		t.Fatalf("starting cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster logs:\n%s", c.Logs(64<<10))
		}
		c.Stop()
	})
	return c
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
