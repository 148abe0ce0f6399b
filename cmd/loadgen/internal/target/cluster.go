package target

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
	"k8s.io/utils/ptr"
)

// Cluster is a real API server reached through a kubeconfig. It creates
// namespaces labelled with a unique run id and deletes them (and their pods)
// in Close.
type Cluster struct {
	kubeconfig    string
	cfg           *rest.Config
	cs            kubernetes.Interface
	runID         string
	namespaces    int
	seed          int64
	managedFields bool
	writers       int
	keep          bool // Config.ReusePods: populate only what is missing, delete nothing

	mu      sync.Mutex
	created []string // namespaces created, for cleanup
}

// NewCluster connects to c.Kubeconfig's API server and checks that it
// answers; runID labels what the run creates (ReuseRunID with ReusePods).
func NewCluster(ctx context.Context, c Config, runID string) (*Cluster, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", c.Kubeconfig, err)
	}
	rc.QPS, rc.Burst = -1, -1 // loadgen paces itself
	rc.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", c.Kubeconfig, err)
	}
	vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().List(vctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: API server %s unreachable or refusing: %w", c.Kubeconfig, rc.Host, err)
	}
	return &Cluster{kubeconfig: c.Kubeconfig, cfg: rc, cs: cs, runID: runID, namespaces: c.Namespaces, seed: c.Seed,
		managedFields: c.ManagedFields, writers: max(c.ChurnWorkers, 16), keep: c.ReusePods}, nil
}

func (t *Cluster) Kind() string { return KindCluster }
func (t *Cluster) Endpoint() Endpoint {
	return Endpoint{Kind: KindCluster, Host: t.cfg.Host, Kubeconfig: t.kubeconfig, RunID: t.runID}
}
func (t *Cluster) Upstream() *rest.Config { return rest.CopyConfig(t.cfg) }
func (t *Cluster) Namespace(i int) string { return t.Endpoint().Namespace(i, t.namespaces) }

// Populate creates the run's namespaces and pods 0..n-1 with their status;
// with ReusePods, only what an earlier run did not create.
func (t *Cluster) Populate(ctx context.Context, n int, progress func(int)) error {
	if err := t.createNamespaces(ctx); err != nil {
		return err
	}
	var have map[string]podProgress
	if t.keep {
		var err error
		if have, err = t.existingPods(ctx); err != nil {
			return fmt.Errorf("list the kept pods: %w", err)
		}
	}
	return t.writePods(ctx, n, have, progress)
}

// prepare makes a generated pod acceptable to a real API server: no owner
// (the garbage collector would delete pods of a missing ReplicaSet), no
// priority (the Priority admission plugin rejects a PriorityClass that does
// not exist, and a priority given without one), the run label, the
// namespace's default service account.
func (t *Cluster) prepare(p *corev1.Pod) *corev1.Pod {
	p.OwnerReferences = nil
	p.Spec.PriorityClassName, p.Spec.Priority, p.Spec.PreemptionPolicy = "", nil, nil
	p.ManagedFields = nil
	p.Status = corev1.PodStatus{}
	p.Spec.ServiceAccountName = "default"
	p.Spec.DeprecatedServiceAccount = ""
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[LabelRun] = t.runID
	return p
}

func (t *Cluster) Create(ctx context.Context, ns, name string, seed int64, emitted int64) error {
	p := t.prepare(newPod(ns, name, seed, t.managedFields))
	stamp(p, emitted, 0)
	_, err := t.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	return err
}

func (t *Cluster) Update(ctx context.Context, ns, name string, gen int, emittedNow func() int64) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		AnnEmitted, fmt.Sprint(emittedNow()), AnnGeneration, fmt.Sprint(gen))
	_, err := t.cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (t *Cluster) Delete(ctx context.Context, ns, name string) error {
	// Grace period 0: pods bound to a node otherwise wait for a kubelet.
	return t.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// State reads key → resourceVersion of the run's pods with a paginated
// LIST, so only one page of decoded pods is alive at a time.
func (t *Cluster) State(ctx context.Context) (map[string]string, error) {
	m := map[string]string{}
	err := t.eachPod(ctx, func(pod *corev1.Pod) { m[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion })
	return m, err
}

// eachPod calls f with every pod of the run, a page of 500 at a time.
func (t *Cluster) eachPod(ctx context.Context, f func(*corev1.Pod)) error {
	opts := metav1.ListOptions{}
	t.Endpoint().Narrow(&opts)
	p := pager.New(pager.SimplePageFunc(func(o metav1.ListOptions) (runtime.Object, error) {
		return t.cs.CoreV1().Pods("").List(ctx, o)
	}))
	p.PageSize = 500
	return p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		f(obj.(*corev1.Pod))
		return nil
	})
}

// Close deletes the run's pods (immediately, without grace) and namespaces,
// unless they are kept (ReusePods). Call it on every exit path, Ctrl-C
// included, with a fresh context.
func (t *Cluster) Close(ctx context.Context) error {
	if t.keep {
		return nil
	}
	t.mu.Lock()
	nss := append([]string(nil), t.created...)
	t.mu.Unlock()
	var errs []error
	for _, ns := range nss {
		err := t.cs.CoreV1().Pods(ns).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
			metav1.ListOptions{LabelSelector: LabelRun + "=" + t.runID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete pods in %s: %w", ns, err))
		}
		if err := t.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleanup of run %s: %v", t.runID, errs)
	}
	return nil
}
