//go:build e2e && unix

package main

import (
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/shardinformer/shardinformer/cmd/loadgen/internal/target"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestReusePodsOnRealCluster runs loadgen twice with --reuse-pods against a
// real kube-apiserver: the first run creates the pods with NewPod's status
// (written through the status subresource), both runs pass their check, the
// pods outlive the runs, and the second run repairs what an interrupted
// populate leaves (a missing pod, a pod without its status) and recreates
// nothing else.
func TestReusePodsOnRealCluster(t *testing.T) {
	ctx, c := startCluster(t)
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const pods, namespaces = 40, 3
	args := []string{"--kubeconfig", c.Kubeconfig(), "--reuse-pods", "--scenario", "informer", "--churn-duration", "0",
		"--churn-events", "0", "--pods", "40", "--namespaces", "3", "--runs", "1", "--out-dir", "", "--progress", "0",
		"--server-pids", strconv.Itoa(os.Getpid())}
	sel := metav1.ListOptions{LabelSelector: target.LabelRun + "=" + target.ReuseRunID(pods, namespaces, 1)}
	list := func() map[string]corev1.Pod {
		t.Helper()
		l, err := cs.CoreV1().Pods("").List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]corev1.Pod{}
		for _, p := range l.Items {
			m[p.Namespace+"/"+p.Name] = p
		}
		return m
	}
	loadgen := func(impl string) {
		t.Helper()
		c, err := parseFlags(append(args, "--impl", impl), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := run(ctx, c, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("loadgen --impl %s: %v", impl, err)
		}
		if !rep.Pass || len(rep.Trials) != 1 || rep.Trials[0].Results[0].Objects != pods {
			t.Fatalf("loadgen --impl %s: pass %v, trials %+v", impl, rep.Pass, rep.Trials)
		}
	}

	loadgen("client-go")
	first := list()
	if len(first) != pods {
		t.Fatalf("%d pods kept after the run, want %d", len(first), pods)
	}
	for k, p := range first {
		statusWriter := false
		for _, m := range p.ManagedFields {
			statusWriter = statusWriter || m.Subresource == "status"
		}
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 || p.Status.PodIP == "" || !statusWriter {
			t.Errorf("%s: phase %q, %d container statuses, pod IP %q, status in managedFields %v; want NewPod's status written through the subresource",
				k, p.Status.Phase, len(p.Status.ContainerStatuses), p.Status.PodIP, statusWriter)
		}
	}

	// An interrupted populate: one pod missing, one without its status.
	ns0 := target.Endpoint{Kind: target.KindCluster, RunID: target.ReuseRunID(pods, namespaces, 1)}.Namespace(0, namespaces)
	gone, bare := ns0+"/"+target.PodName(0), ns0+"/"+target.PodName(3)
	if err := cs.CoreV1().Pods(ns0).Delete(ctx, target.PodName(0), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	p := first[bare]
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if _, err := cs.CoreV1().Pods(ns0).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	loadgen("shardinformer")
	second := list()
	if len(second) != pods {
		t.Fatalf("%d pods after the second run, want %d", len(second), pods)
	}
	for k, p := range second {
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("%s: phase %q after the second run", k, p.Status.Phase)
		}
		if k != gone && p.UID != first[k].UID {
			t.Errorf("%s was recreated (uid %s, was %s)", k, p.UID, first[k].UID)
		}
	}
	if second[gone].UID == "" || second[gone].UID == first[gone].UID {
		t.Errorf("%s: uid %q, want a new pod", gone, second[gone].UID)
	}
}
