package informers_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// spec is a factory's options, built by each implementation with its own
// option functions: the behavioural tests run against client-go's factory and
// ours alike.
type spec struct {
	defaultResync time.Duration
	namespace     string
	tweak         internalinterfaces.TweakListOptionsFunc
	transform     cache.TransformFunc
	resync        map[metav1.Object]time.Duration
}

type impl struct {
	name  string
	ours  bool
	build func(kubernetes.Interface, spec) informers.SharedInformerFactory
}

var impls = []impl{
	{name: "client-go", build: func(c kubernetes.Interface, s spec) informers.SharedInformerFactory {
		var opts []clientgoinformers.SharedInformerOption
		if s.namespace != "" {
			opts = append(opts, clientgoinformers.WithNamespace(s.namespace))
		}
		if s.tweak != nil {
			opts = append(opts, clientgoinformers.WithTweakListOptions(s.tweak))
		}
		if s.transform != nil {
			opts = append(opts, clientgoinformers.WithTransform(s.transform))
		}
		if s.resync != nil {
			opts = append(opts, clientgoinformers.WithCustomResyncConfig(s.resync))
		}
		return clientgoinformers.NewSharedInformerFactoryWithOptions(c, s.defaultResync, opts...)
	}},
	{name: "shardinformer", ours: true, build: func(c kubernetes.Interface, s spec) informers.SharedInformerFactory {
		var opts []informers.SharedInformerOption
		if s.namespace != "" {
			opts = append(opts, informers.WithNamespace(s.namespace))
		}
		if s.tweak != nil {
			opts = append(opts, informers.WithTweakListOptions(s.tweak))
		}
		if s.transform != nil {
			opts = append(opts, informers.WithTransform(s.transform))
		}
		if s.resync != nil {
			opts = append(opts, informers.WithCustomResyncConfig(s.resync))
		}
		return informers.NewSharedInformerFactoryWithOptions(c, s.defaultResync, opts...)
	}},
}

// checkImpl fails unless inf is ours exactly when the implementation is.
func checkImpl(t *testing.T, im impl, inf cache.SharedInformer) {
	t.Helper()
	if _, ok := pipeline.Unwrap(inf); ok != im.ours {
		t.Fatalf("%s: informer %T is shardinformer's: %v", im.name, inf, ok)
	}
}

// start starts f, waits for its caches and stops it when the test ends:
// cancel, then Shutdown, which waits for the informers' goroutines.
func start(t *testing.T, f informers.SharedInformerFactory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.StartWithContext(ctx)
	if err := f.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		t.Fatalf("caches did not sync: %v", err)
	}
}

func pod(ns, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

// server is a simulated API server with pods, and a client to it whose
// requests are recorded.
type server struct {
	*apisim.Server
	client   kubernetes.Interface
	requests *testkit.Requests
}

func newServer(t *testing.T, pods ...*corev1.Pod) *server {
	t.Helper()
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(pods); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cfg := s.RESTConfig()
	log := testkit.RecordRequests(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &server{Server: s, client: cs, requests: log}
}

// keys returns the sorted "ns/name" keys of objs.
func keys[T metav1.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// serverKeys returns the keys of the server's pods in namespace matching sel.
func (s *server) keys(namespace string, sel labels.Selector) []string {
	var out []*corev1.Pod
	for _, p := range s.List(namespace) {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return keys(out)
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}
