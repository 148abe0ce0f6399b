package informers_test

import (
	"errors"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// panicOf returns the error fn panics with (nil if it returns).
func panicOf(t *testing.T, fn func()) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			var ok bool
			if err, ok = r.(error); !ok {
				t.Fatalf("panic with %T %v, want an error", r, r)
			}
		}
	}()
	fn()
	return nil
}

func clientGoPodInformer(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
	return coreinformers.NewPodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{})
}

// InformerFor with a newFunc that builds client-go's informer panics with
// ErrNotOurs and stores nothing: the typed accessor afterwards still gives
// ours, and Start runs no client-go informer.
func TestInformerForRefusesClientGoInformer(t *testing.T) {
	f := informers.NewSharedInformerFactory(fakeClient(), 0)
	err := panicOf(t, func() { f.InformerFor(&corev1.Pod{}, clientGoPodInformer) })
	if !errors.Is(err, informers.ErrNotOurs) {
		t.Fatalf("panic %v, want ErrNotOurs", err)
	}
	if _, ok := pipeline.Unwrap(f.Core().V1().Pods().Informer()); !ok {
		t.Fatal("after the refused InformerFor the typed accessor is not ours")
	}
	start(t, f)
	if l, _ := f.Core().V1().Pods().Lister().List(labels.Everything()); len(l) != 20 {
		t.Fatalf("%d pods cached, want 20", len(l))
	}
}

// Once the factory has an informer for a type, InformerFor returns it without
// calling newFunc — as client-go's factory does — whatever newFunc builds.
func TestInformerForReturnsExisting(t *testing.T) {
	f := informers.NewSharedInformerFactory(fakeClient(), 0)
	ours, _ := pipeline.Unwrap(f.Core().V1().Pods().Informer())
	called := false
	got := f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
		called = true
		return clientGoPodInformer(c, r)
	})
	if o, _ := pipeline.Unwrap(got); o != ours || called {
		t.Fatalf("InformerFor: same informer %v, newFunc called %v", o == ours, called)
	}
}

// A custom informer of ours — here of another namespace than the factory's —
// is accepted by InformerFor and then shared by the typed accessor and its
// lister.
func TestInformerForAcceptsOurs(t *testing.T) {
	f := informers.NewSharedInformerFactory(fakeClient(), 0)
	custom := f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw, err := informers.NewFilteredListWatch(c, &corev1.Pod{}, "other", nil)
		if err != nil {
			t.Fatal(err)
		}
		return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	typed := f.Core().V1().Pods()
	if a, b := mustUnwrap(t, custom), mustUnwrap(t, typed.Informer()); a != b {
		t.Fatal("typed accessor does not share the custom informer")
	}
	start(t, f)
	if l, _ := typed.Lister().List(labels.Everything()); len(l) != 0 {
		t.Fatalf("%d pods cached from namespace default; the custom informer lists other", len(l))
	}
}

func mustUnwrap(t *testing.T, inf cache.SharedInformer) *pipeline.Informer {
	t.Helper()
	o, ok := pipeline.Unwrap(inf)
	if !ok {
		t.Fatalf("%T is not ours", inf)
	}
	return o
}

// Bad input: every case fails with its error, at construction or on the
// call, never later.
func TestBadInput(t *testing.T) {
	if _, err := informers.New(nil, 0); !errors.Is(err, informers.ErrNilClient) {
		t.Errorf("nil client: %v", err)
	}
	if err := panicOf(t, func() { informers.NewSharedInformerFactory(nil, 0) }); !errors.Is(err, informers.ErrNilClient) {
		t.Errorf("NewSharedInformerFactory(nil): panic %v", err)
	}
	if _, err := informers.New(fakeClient(), 0, informers.WithPipelineOptions(pipeline.WithShards(-1))); err == nil {
		t.Error("WithPipelineOptions(WithShards(-1)) accepted")
	}
	if _, err := informers.New(fakeClient(), 0, informers.WithPipelineOptionsFor(&corev1.Pod{}, pipeline.WithRingCapacity(-1))); err == nil {
		t.Error("WithPipelineOptionsFor(WithRingCapacity(-1)) accepted")
	}
	if err := panicOf(t, func() {
		informers.NewSharedInformerFactoryWithOptions(fakeClient(), 0, informers.WithPipelineOptions(pipeline.WithBatchSize(0)))
	}); err == nil {
		t.Error("NewSharedInformerFactoryWithOptions with invalid pipeline options did not panic")
	}

	f := informers.NewSharedInformerFactory(fakeClient(), 0)
	if _, err := f.ForResource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}); !errors.Is(err, informers.ErrUnknownType) {
		t.Errorf("ForResource of a CRD: %v", err)
	}
	if _, err := informers.NewFilteredListWatch(fakeClient(), &metav1.PartialObjectMetadata{}, "", nil); !errors.Is(err, informers.ErrUnknownType) {
		t.Errorf("NewFilteredListWatch of an unknown type: %v", err)
	}
}

// Pipeline options reach the factory's informers, per type after the
// general ones.
func TestPipelineOptions(t *testing.T) {
	f := informers.NewSharedInformerFactoryWithOptions(fakeClient(), 0,
		informers.WithPipelineOptions(pipeline.WithShards(3), pipeline.WithName("all")),
		informers.WithPipelineOptionsFor(&corev1.Pod{}, pipeline.WithShards(5), pipeline.WithName("pods")))
	pods := mustUnwrap(t, f.Core().V1().Pods().Informer())
	cms := mustUnwrap(t, f.Core().V1().ConfigMaps().Informer())
	for _, c := range []struct {
		inf    *pipeline.Informer
		shards int
		name   string
	}{{pods, 5, "pods"}, {cms, 3, "all"}} {
		if got, name := len(c.inf.Stats().Shards), c.inf.HasSyncedChecker().Name(); got != c.shards || name != c.name {
			t.Errorf("informer %q with %d shards, want %q with %d", name, got, c.name, c.shards)
		}
	}
}

// Concurrent callers of the accessors share one informer per type.
func TestConcurrentAccessorsShareInformer(t *testing.T) {
	f := informers.NewSharedInformerFactory(fakeClient(), 0)
	const callers = 8
	got := make([]*pipeline.Informer, 2*callers)
	done := make(chan struct{})
	for i := range callers {
		go func() { // goroutine: one caller; joined below.
			defer func() { done <- struct{}{} }()
			got[2*i], _ = pipeline.Unwrap(f.Core().V1().Pods().Informer())
			gi, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("pods"))
			if err == nil {
				got[2*i+1], _ = pipeline.Unwrap(gi.Informer())
			}
		}()
	}
	for range callers {
		<-done
	}
	for i, inf := range got {
		if inf == nil || inf != got[0] {
			t.Fatalf("caller %d got informer %p, caller 0 %p", i/2, inf, got[0])
		}
	}
}
