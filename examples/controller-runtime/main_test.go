package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/ratelimit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// eventually polls cond until it holds; the deadline only turns a hang into a
// failure.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serverState returns key → resourceVersion of the server's pods.
func serverState(s *apisim.Server) map[types.NamespacedName]string {
	out := map[types.NamespacedName]string{}
	for _, p := range s.List("") {
		out[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.ResourceVersion
	}
	return out
}

// A real controller-runtime manager with a pod controller runs on crcache's
// cache against the simulated API server: the cache's informer is ours, on
// the wire with its diet,
// every pod is reconciled at its current version — through creates, updates
// and deletes while the controller runs — the cache equals the server, and
// stopping the manager stops every informer goroutine. The controller's
// work queue is ratelimit's (what its NewQueue built), and it reports into
// controller-runtime's workqueue metrics under the controller's name.
func TestManagerOnShardinformer(t *testing.T) {
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.Create(apisim.NewPod(fmt.Sprintf("ns-%d", i%5), fmt.Sprintf("pod-%03d", i), int64(i), apisim.PodOptions{})); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	mgr, err := newManager(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := NewPodReconciler(mgr.GetClient())
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }() // goroutine: the manager; joined below.
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}

	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if sii, ok := inf.(toolscache.SharedIndexInformer); !ok {
		t.Fatalf("cache informer %T", inf)
	} else if ours, ok := pipeline.Unwrap(sii); !ok {
		t.Fatalf("cache informer %T is not shardinformer's", inf)
	} else if lw := ours.Stats().ListerWatcher; !strings.HasPrefix(lw, "wire pods.v1: ") || !strings.Contains(lw, "diet") {
		t.Fatalf("the cache's pod informer lists and watches through %q, not the wire with its diet", lw)
	}

	// reconciledAll: every server pod reconciled at its current version and
	// every deleted one reconciled as gone.
	deleted := map[types.NamespacedName]bool{}
	reconciledAll := func() bool {
		for key, rv := range serverState(s) {
			if got, _ := r.Seen(key); got != rv {
				return false
			}
		}
		for key := range deleted {
			if got, ok := r.Seen(key); !ok || got != "" {
				return false
			}
		}
		return true
	}
	eventually(t, "every pod reconciled", reconciledAll)

	for i := range 60 {
		ns, name := fmt.Sprintf("ns-%d", i%5), fmt.Sprintf("pod-%03d", i)
		switch i % 3 {
		case 0:
			if _, err := s.Modify(ns, name, func(p *corev1.Pod) { p.Labels["reconcile"] = "again" }); err != nil {
				t.Fatal(err)
			}
		case 1:
			if _, err := s.Delete(ns, name); err != nil {
				t.Fatal(err)
			}
			deleted[types.NamespacedName{Namespace: ns, Name: name}] = true
		case 2:
			if _, err := s.Create(apisim.NewPod(ns, "new-"+name, int64(1000+i), apisim.PodOptions{})); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, "every change reconciled", reconciledAll)

	if q := r.Queue(); q == nil {
		t.Fatal("the controller started without calling NewQueue")
	} else if _, ours := q.(*ratelimit.Queue[reconcile.Request]); !ours {
		t.Fatalf("the controller's queue is %T, not ratelimit's", q)
	}
	// Every key reconciled was added to the queue and done at least once.
	adds, done := queueMetric(t, "workqueue_adds_total"), queueMetric(t, "workqueue_work_duration_seconds")
	if n := float64(r.Len()); adds < n || done < n {
		t.Errorf("controller-runtime's metrics for queue pods: %v adds, %v items done; want at least %v each", adds, done, n)
	}

	cacheState := func() map[types.NamespacedName]string {
		var list corev1.PodList
		if err := mgr.GetCache().List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		out := map[types.NamespacedName]string{}
		for _, p := range list.Items {
			out[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p.ResourceVersion
		}
		return out
	}
	want := serverState(s)
	if got := cacheState(); !mapsEqual(got, want) || len(want) != 300 {
		t.Fatalf("cache has %d pods, server %d (want 300), or versions differ", len(got), len(want))
	}

	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// The manager waits for its cache; our informers' RunWithContext waits for
	// every goroutine it started.
	// The controller shuts its queue down, and ratelimit's ShutDown waits for
	// the queue's goroutines.
	for _, pkg := range []string{"shardinformer/pipeline.", "shardinformer/ratelimit."} {
		if g := goroutines(pkg); len(g) != 0 {
			t.Fatalf("%d %s goroutines after the manager stopped:\n%s", len(g), pkg, strings.Join(g, "\n\n"))
		}
	}
}

// workqueueMetrics finds controller-runtime's own vectors; a vector that
// differs from controller-runtime's, or one controller-runtime does not
// register, is an error and stays out of the registry.
func TestWorkqueueMetricsBadInput(t *testing.T) {
	if _, err := workqueueMetrics(); err != nil {
		t.Fatal(err)
	}
	otherHelp := prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total", Help: "other"}, []string{"name", "controller"})
	if _, err := existing(nil, otherHelp); err == nil {
		t.Error("a workqueue_adds_total with another help text was taken for controller-runtime's")
	}
	unknown := prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "unknown_total", Help: "unknown"}, []string{"name"})
	if _, err := existing(nil, unknown); err == nil {
		t.Error("a vector controller-runtime does not register was accepted")
	}
	if metrics.Registry.Unregister(unknown) {
		t.Error("the rejected vector stayed registered")
	}
}

// queueMetric returns the value (counters) or sample count (histograms) of
// family in controller-runtime's registry for the queue of the controller
// named pods.
func queueMetric(t *testing.T, family string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] == "pods" && labels["controller"] == "pods" {
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{name=pods,controller=pods} in controller-runtime's registry", family)
	return 0
}

func mapsEqual(a, b map[types.NamespacedName]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// goroutines returns the stacks of goroutines with a frame containing s.
func goroutines(s string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return slices.DeleteFunc(strings.Split(string(buf), "\n\n"), func(g string) bool { return !strings.Contains(g, s) })
}

// The program runs end to end.
func TestRun(t *testing.T) {
	if err := run(context.Background(), 100, time.Minute); err != nil {
		t.Fatal(err)
	}
}
