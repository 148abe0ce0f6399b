//go:build e2e && unix

package runner

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/shardinformer/shardinformer/e2e/cluster"
)

// realBackend starts etcd and kube-apiserver (bin/ of the repository
// root) with the ShardedListAndWatch gate as asked, and the namespaces the
// scenario writes to.
func realBackend(t *testing.T, sharded bool) backend {
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{APIServerArgs: []string{fmt.Sprintf("--feature-gates=ShardedListAndWatch=%v", sharded)}, Logf: t.Logf})
	if err != nil {
		if os.Getenv("SHARDINFORMER_E2E_REQUIRE") == "" {
			t.Skipf("no real cluster: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"ns-0", "ns-1", "ns-2", "ns-3", "ns-new", "ctrl"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return backend{
		cfg:     cfg,
		sharded: sharded,
		list: func() []*corev1.Pod {
			l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Errorf("list: %v", err)
				return nil
			}
			out := make([]*corev1.Pod, len(l.Items))
			for i := range l.Items {
				out[i] = &l.Items[i]
			}
			return out
		},
		create: func(p *corev1.Pod) error {
			p = p.DeepCopy()
			p.ResourceVersion, p.UID = "", ""
			p.Spec.PriorityClassName, p.Spec.Priority = "", nil // the Priority admission plugin rejects unknown classes
			_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			return err
		},
		modify: func(ns, name string) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if p.Labels == nil {
					p.Labels = map[string]string{}
				}
				p.Labels["churn"] = "yes"
				_, err = cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
				return err
			})
		},
	}
}

// TestReplicasE2E runs the scenario of TestReplicas, on pipeline
// informers with parallel handler calls, on a real kube-apiserver with
// the ShardedListAndWatch gate on (server-side filtering) and off (the
// client-side fallback).
func TestReplicasE2E(t *testing.T) {
	for _, sharded := range []bool{true, false} {
		t.Run(fmt.Sprint("gate=", sharded), func(t *testing.T) { scenario(t, realBackend(t, sharded), true) })
	}
}

// TestUnreadableLeaseE2E runs the scenario of TestUnreadableLease on a real
// kube-apiserver with the ShardedListAndWatch gate on.
func TestUnreadableLeaseE2E(t *testing.T) { unreadableScenario(t, realBackend(t, true)) }
