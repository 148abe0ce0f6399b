//go:build e2e

package e2e

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestClusterHarness checks the harness itself: the generated kubeconfig
// works (TLS verified against the generated CA), compaction goes through
// etcd's JSON gateway, and etcd and kube-apiserver come back after a stop.
func TestClusterHarness(t *testing.T) {
	cl := ownCluster(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("listing with the kubeconfig: %v", err)
	}
	rev, err := cl.Compact(t.Context())
	if err != nil || rev <= 0 {
		t.Fatalf("Compact() = %d, %v", rev, err)
	}
	cl.StopEtcd()
	if err := cl.StartEtcd(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := cl.RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not serving after restarts: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
