// Command controller-runtime runs a controller-runtime manager whose cache is
// built on shardinformer's informers — the one line is NewInformer in
// newManager — with a pod controller reading from that cache, against the
// embedded simulated API server (package apisim): it creates -pods pods,
// waits until the controller has reconciled every one, and exits.
//
//	go run . -pods 2000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	pods := flag.Int("pods", 1000, "pods to create on the simulated API server")
	timeout := flag.Duration("timeout", time.Minute, "give up after this long")
	flag.Parse()
	ctrl.SetLogger(klog.Background())
	if err := run(ctrl.SetupSignalHandler(), *pods, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run serves n pods, runs the manager until every one is reconciled, and
// stops it.
func run(ctx context.Context, n int, timeout time.Duration) error {
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		return err
	}
	for i := range n {
		ns := fmt.Sprintf("team-%d", i%10)
		if _, err := s.Create(apisim.NewPod(ns, fmt.Sprintf("pod-%05d", i), int64(i), apisim.PodOptions{})); err != nil {
			return err
		}
	}
	if err := s.Start(); err != nil {
		return err
	}
	defer s.Close()

	mgr, err := newManager(s.RESTConfig())
	if err != nil {
		return err
	}
	r := NewPodReconciler(mgr.GetClient())
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }() // goroutine: the manager; joined below.

	start := time.Now()
	for r.Len() < n && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	done := r.Len()
	cancel()
	if err := <-errc; err != nil {
		return err
	}
	if done < n {
		return fmt.Errorf("reconciled %d of %d pods before the timeout", done, n)
	}
	fmt.Printf("reconciled %d pods in %v from a cache of shardinformer informers\n", done, time.Since(start).Round(time.Millisecond))
	return nil
}

// newManager builds the manager. The cache's informers are shardinformer's:
// that is the whole migration. The rest switches off the metrics and probe
// listeners an example does not need.
func newManager(cfg *rest.Config) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                  cache.Options{NewInformer: informers.NewInformer},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	return mgr, err
}

// PodReconciler reconciles pods by reading them from the manager's cache and
// recording the resourceVersion it saw ("" once the pod is gone).
type PodReconciler struct {
	client.Client

	mu   sync.Mutex
	seen map[types.NamespacedName]string
}

// NewPodReconciler returns a reconciler reading through c.
func NewPodReconciler(c client.Client) *PodReconciler {
	return &PodReconciler{Client: c, seen: map[types.NamespacedName]string{}}
}

// SetupWithManager registers the reconciler as the manager's pod controller.
func (r *PodReconciler) SetupWithManager(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}).
		Named("pods").
		WithOptions(controller.Options{MaxConcurrentReconciles: 4, SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pod corev1.Pod
	rv := ""
	switch err := r.Get(ctx, req.NamespacedName, &pod); {
	case err == nil:
		rv = pod.ResourceVersion
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[req.NamespacedName] = rv
	return ctrl.Result{}, nil
}

// Len returns the number of pods reconciled at least once.
func (r *PodReconciler) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// Seen returns the resourceVersion the last reconcile of key saw and whether
// key was reconciled.
func (r *PodReconciler) Seen(key types.NamespacedName) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := r.seen[key]
	return rv, ok
}
