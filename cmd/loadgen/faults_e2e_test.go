//go:build e2e && unix

package main

import "testing"

// TestFaultsOnRealCluster runs loadgen --faults against a real
// kube-apiserver: the proxy forwards to its HTTPS port with the
// kubeconfig's CA and token while the implementations' clients talk plain
// HTTP to the proxy; faults are injected, both implementations converge
// after they stop and pass the check.
func TestFaultsOnRealCluster(t *testing.T) {
	_, c := startCluster(t)
	cfg := mustParse(t, "--kubeconfig", c.Kubeconfig(), "--scenario", "informer", "--pods", "300", "--namespaces", "3",
		"--churn-rate", "200", "--churn-events", "600", "--churn-duration", "0", "--runs", "1", "--out-dir", "", "--progress", "0",
		"--faults", "cut=0.2,stall=0.05:300ms,500=0.1,429=0.1,410=0.2,max=4,bytes=64Ki,seed=3")
	rep, _ := runLoadgen(t, cfg)
	if !rep.Pass {
		t.Fatal("the run did not pass")
	}
	for _, tr := range rep.Trials {
		var total uint64
		for _, n := range tr.Faults.Injected {
			total += n
		}
		if total == 0 {
			t.Errorf("trial %v: no fault injected (%+v)", tr.Impls, tr.Faults)
		}
		for _, r := range tr.Results {
			if r.ConvergeAfterFaults == nil {
				t.Errorf("%s: no time to converge", r.Impl)
			}
		}
	}
}
