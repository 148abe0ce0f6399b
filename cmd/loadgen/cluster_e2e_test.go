//go:build e2e && unix

package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/e2e/cluster"
)

// startCluster starts a real kube-apiserver and etcd for one test, stopped
// at its cleanup, and returns a context that ends after 10 minutes (or with
// the test). Without the binaries the test is skipped, unless
// SHARDINFORMER_E2E_REQUIRE is set: then it fails.
func startCluster(t *testing.T) (context.Context, *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	c, err := cluster.Start(ctx, cluster.Options{Logf: t.Logf})
	if err != nil {
		if os.Getenv("SHARDINFORMER_E2E_REQUIRE") == "" {
			t.Skipf("no real cluster: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return ctx, c
}
