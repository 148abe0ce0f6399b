package main

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
	"k8s.io/utils/ptr"
)

// Annotations and labels loadgen writes.
const (
	// annEmitted is the churn generator's wall clock (unix nanoseconds) just
	// before it sent the write; handlers subtract it from their own clock.
	annEmitted = "loadgen.shardinformer.io/emitted-unix-nano"
	// annGeneration counts the updates loadgen made to a pod.
	annGeneration = "loadgen.shardinformer.io/generation"
	// labelRun marks everything one run creates in a real cluster.
	labelRun = "loadgen.shardinformer.io/run"
)

// target is where the pods live: the embedded simulator or a real cluster.
// Its methods are safe for concurrent use.
type target interface {
	// kind is "apisim" or "cluster".
	kind() string
	// endpoint is how the implementations under test reach it.
	endpoint() endpoint
	namespace(i int) string
	// populate creates the initial pods, reporting progress.
	populate(ctx context.Context, n int, progress func(done int)) error
	create(ctx context.Context, ns, name string, seed int64, emitted int64) error
	update(ctx context.Context, ns, name string, gen int, emittedNow func() int64) error
	delete(ctx context.Context, ns, name string) error
	// state returns key → resourceVersion of every pod of this run.
	state(ctx context.Context) (map[string]string, error)
	// close releases the target; a cluster target deletes what it created.
	close(ctx context.Context) error
}

func podName(i int) string { return fmt.Sprintf("pod-%06d", i) }

// newPod builds pod number seed's content. Pods differ by seed; the same
// seed always gives the same pod.
func newPod(ns, name string, seed int64, managedFields bool) *corev1.Pod {
	return apisim.NewPod(ns, name, seed, apisim.PodOptions{ManagedFields: managedFields})
}

// simTarget is the embedded apisim server. Its objects are pods, or
// (resourceWidgets) its custom resource with a pod's content in each.
type simTarget struct {
	srv           *apisim.Server
	resource      string // resourcePods or resourceWidgets
	namespaces    int
	seed          int64
	managedFields bool
}

func newSimTarget(c config) (*simTarget, error) {
	// EncodedOnly: the server's 1.7 GB of decoded pods (at 100k) would
	// otherwise be scanned by every GC cycle of the informers under test,
	// pushing the live heap near loadgen's soft memory limit, where GC
	// assists stall every goroutine and both informers' latency tails measure
	// the collector rather than the informers. Its versions are compact
	// (protobuf deltas against each ReplicaSet's first pod): ≈0.9 KB of
	// heap a pod at 1M pods (bench/results/apisim-1m.md).
	srv, err := apisim.New(apisim.Config{EncodedOnly: true})
	if err != nil {
		return nil, err
	}
	return &simTarget{srv: srv, resource: resourceOn(c.path, "apisim"), namespaces: c.namespaces, seed: c.seed, managedFields: c.managedFields}, nil
}

func (t *simTarget) kind() string           { return "apisim" }
func (t *simTarget) endpoint() endpoint     { return endpoint{Kind: "apisim", Host: t.srv.URL()} }
func (t *simTarget) namespace(i int) string { return namespaceName(t.endpoint(), i, t.namespaces) }

// namespaceName is the name of namespace i (of n) of a run on e.
func namespaceName(e endpoint, i, n int) string {
	if e.Kind == "cluster" {
		return fmt.Sprintf("loadgen-%s-%03d", e.RunID, i%n)
	}
	return fmt.Sprintf("loadgen-%03d", i%n)
}

// start serves the simulator; call it after populate, so the bulk load
// needs no HTTP.
func (t *simTarget) start() error { return t.srv.Start() }

// populate generates the initial pods on GOMAXPROCS goroutines, a chunk at
// a time and a few chunks ahead, and loads each chunk as it is ready. Nothing
// is kept between trials: generating a pod (NewPod, ≈20–50 µs) costs no more
// than decoding a kept encoding of it would, so the process holds only the
// server's compact versions (apisim's Config.EncodedOnly: ≈1 KB a pod).
func (t *simTarget) populate(ctx context.Context, n int, progress func(int)) error {
	const chunk = 500
	chunks := (n + chunk - 1) / chunk
	workers := goruntime.GOMAXPROCS(0)
	ready := make([]chan []*corev1.Pod, chunks)
	for c := range ready {
		ready[c] = make(chan []*corev1.Pod, 1)
	}
	gctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	var next atomic.Int64
	ahead := make(chan struct{}, workers+1) // chunks taken by generators and not yet loaded
	for range workers {
		wg.Go(func() { // one of populate's generators; populate waits for it
			for {
				select {
				case ahead <- struct{}{}:
				case <-gctx.Done():
					return
				}
				c := int(next.Add(1) - 1)
				if c >= chunks {
					return
				}
				lo, hi := c*chunk, min((c+1)*chunk, n)
				pods := make([]*corev1.Pod, 0, hi-lo)
				for i := lo; i < hi; i++ {
					pods = append(pods, newPod(t.namespace(i), podName(i), podSeed(t.seed, i), t.managedFields))
				}
				ready[c] <- pods // never blocks: one chunk per channel
			}
		})
	}
	for c := range chunks {
		var pods []*corev1.Pod
		select {
		case pods = <-ready[c]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-ahead
		if t.resource == resourceWidgets {
			ws, err := podWidgets(pods)
			if err != nil {
				return err
			}
			if err := t.srv.Widgets().Load(ws); err != nil {
				return err
			}
		} else if err := t.srv.Load(pods); err != nil {
			return err
		}
		progress(min((c+1)*chunk, n))
	}
	return nil
}

func (t *simTarget) create(_ context.Context, ns, name string, seed int64, emitted int64) error {
	p := newPod(ns, name, seed, t.managedFields)
	stamp(p, emitted, 0)
	if t.resource == resourceWidgets {
		w, err := podWidget(p)
		if err != nil {
			return err
		}
		_, err = t.srv.Widgets().Create(w)
		return err
	}
	_, err := t.srv.Create(p)
	return err
}

func (t *simTarget) update(_ context.Context, ns, name string, gen int, emittedNow func() int64) error {
	if t.resource == resourceWidgets {
		_, err := t.srv.Widgets().Modify(ns, name, func(u *unstructured.Unstructured) { stamp(u, emittedNow(), gen) })
		return err
	}
	_, err := t.srv.Modify(ns, name, func(p *corev1.Pod) { stamp(p, emittedNow(), gen) })
	return err
}

func (t *simTarget) delete(_ context.Context, ns, name string) error {
	if t.resource == resourceWidgets {
		_, err := t.srv.Widgets().Delete(ns, name)
		return err
	}
	_, err := t.srv.Delete(ns, name)
	return err
}

// state reads the simulator's store in process: key → resourceVersion of
// every object, without decoding one (a LIST would decode every pod in this
// process: ≈45 s of CPU and a garbage-driven heap at 1M pods).
func (t *simTarget) state(context.Context) (map[string]string, error) {
	if t.resource == resourceWidgets {
		return t.srv.Widgets().ResourceVersions(""), nil
	}
	return t.srv.Pods().ResourceVersions(""), nil
}

// podWidget is a custom resource of apisim's widgets with p's content:
// p's metadata, spec and status, so that it is as big as the pod (≈10 KB
// of JSON, 14–17 KB with managedFields).
func podWidget(p *corev1.Pod) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s as a widget: %w", p.Namespace, p.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(apisim.WidgetKind)
	return u, nil
}

// podWidgets converts pods to widgets on GOMAXPROCS goroutines.
func podWidgets(pods []*corev1.Pod) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(pods))
	errs := make([]error, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() { // one of podWidgets' converters; podWidgets waits for it
			for i := w; i < len(pods); i += len(errs) {
				if out[i], errs[w] = podWidget(pods[i]); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// listState reads key → resourceVersion of every pod matching opts with a
// paginated LIST, so only one page of decoded pods is alive at a time.
func listState(ctx context.Context, cs kubernetes.Interface, opts metav1.ListOptions) (map[string]string, error) {
	m := map[string]string{}
	p := pager.New(pager.SimplePageFunc(func(o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Pods("").List(ctx, o)
	}))
	p.PageSize = 500
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		pod := obj.(*corev1.Pod)
		m[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
		return nil
	})
	return m, err
}

func (t *simTarget) close(context.Context) error { return t.srv.Close() }

// stamp writes the emission time (and, for updates, the generation) into o.
func stamp(o metav1.Object, emitted int64, gen int) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[annEmitted] = fmt.Sprint(emitted)
	if gen > 0 {
		a[annGeneration] = fmt.Sprint(gen)
	}
	o.SetAnnotations(a)
}

func podSeed(seed int64, i int) int64 { return seed<<32 + int64(i) }

// clusterTarget is a real API server reached through a kubeconfig. It creates
// namespaces labelled with a unique run id and deletes them (and their pods)
// in close.
type clusterTarget struct {
	kubeconfig    string
	cfg           *rest.Config
	cs            kubernetes.Interface
	runID         string
	namespaces    int
	seed          int64
	managedFields bool
	writers       int
	keep          bool // --reuse-pods: populate only what is missing, delete nothing

	mu      sync.Mutex
	created []string // namespaces created, for cleanup
}

func newClusterTarget(ctx context.Context, c config, runID string) (*clusterTarget, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", c.kubeconfig, err)
	}
	rc.QPS, rc.Burst = -1, -1 // loadgen paces itself
	rc.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", c.kubeconfig, err)
	}
	vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().List(vctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: API server %s unreachable or refusing: %w", c.kubeconfig, rc.Host, err)
	}
	return &clusterTarget{kubeconfig: c.kubeconfig, cfg: rc, cs: cs, runID: runID, namespaces: c.namespaces, seed: c.seed,
		managedFields: c.managedFields, writers: max(c.churnWorkers, 16), keep: c.reusePods}, nil
}

func (t *clusterTarget) kind() string { return "cluster" }
func (t *clusterTarget) endpoint() endpoint {
	return endpoint{Kind: "cluster", Host: t.cfg.Host, Kubeconfig: t.kubeconfig, RunID: t.runID}
}
func (t *clusterTarget) namespace(i int) string { return namespaceName(t.endpoint(), i, t.namespaces) }

// populate creates the run's namespaces and pods 0..n-1 with their status;
// with --reuse-pods, only what an earlier run did not create.
func (t *clusterTarget) populate(ctx context.Context, n int, progress func(int)) error {
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
func (t *clusterTarget) prepare(p *corev1.Pod) *corev1.Pod {
	p.OwnerReferences = nil
	p.Spec.PriorityClassName, p.Spec.Priority, p.Spec.PreemptionPolicy = "", nil, nil
	p.ManagedFields = nil
	p.Status = corev1.PodStatus{}
	p.Spec.ServiceAccountName = "default"
	p.Spec.DeprecatedServiceAccount = ""
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[labelRun] = t.runID
	return p
}

func (t *clusterTarget) create(ctx context.Context, ns, name string, seed int64, emitted int64) error {
	p := t.prepare(newPod(ns, name, seed, t.managedFields))
	stamp(p, emitted, 0)
	_, err := t.cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	return err
}

func (t *clusterTarget) update(ctx context.Context, ns, name string, gen int, emittedNow func() int64) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		annEmitted, fmt.Sprint(emittedNow()), annGeneration, fmt.Sprint(gen))
	_, err := t.cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (t *clusterTarget) delete(ctx context.Context, ns, name string) error {
	// Grace period 0: pods bound to a node otherwise wait for a kubelet.
	return t.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

func (t *clusterTarget) state(ctx context.Context) (map[string]string, error) {
	opts := metav1.ListOptions{}
	t.endpoint().narrow(&opts)
	return listState(ctx, t.cs, opts)
}

// close deletes the run's pods (immediately, without grace) and namespaces,
// unless they are kept (--reuse-pods). It is called on every exit path,
// Ctrl-C included, with a fresh context.
func (t *clusterTarget) close(ctx context.Context) error {
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
			metav1.ListOptions{LabelSelector: labelRun + "=" + t.runID})
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
