package pipeline_test

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/shards"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// namingHooks is an Observer that records each hook by name, with the listener
// for the listener hooks; scoped to an informer, it records that informer.
type namingHooks struct {
	informer string
	mu       sync.Mutex
	calls    []string
	scopes   []string // ForInformer's arguments
	children []*namingHooks
}

func (h *namingHooks) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, s)
}

func (h *namingHooks) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

func (h *namingHooks) BatchApplied(int, pipeline.BatchStats) { h.add("BatchApplied") }
func (h *namingHooks) Overflowed(l string, _, _ int)         { h.add("Overflowed " + l) }
func (h *namingHooks) Coalescing(l string, _ bool)           { h.add("Coalescing " + l) }
func (h *namingHooks) HandlerDone(l string, _ pipeline.EventKind, _ time.Duration) {
	h.add("HandlerDone " + l)
}
func (h *namingHooks) HandlerPanicked(l, _ string, _ any) { h.add("HandlerPanicked " + l) }
func (h *namingHooks) Relisted(int)                       { h.add("Relisted") }
func (h *namingHooks) Dropped(error)                      { h.add("Dropped") }

// scopedHooks is a namingHooks that is a ScopedObserver.
type scopedHooks struct{ *namingHooks }

func (s scopedHooks) ForInformer(name string) pipeline.Observer {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes = append(s.scopes, name)
	child := &namingHooks{informer: name}
	s.children = append(s.children, child)
	return child
}

// genericHandler has type arguments, as controller-runtime's handlers do.
type genericHandler[K comparable, V any] struct{ *testkit.Recorder }

// newConfigMaps returns a fake cluster holding n config maps ns/cm-000…
func newConfigMaps(t *testing.T, n int) *fakeapi.Cluster {
	t.Helper()
	c := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.ConfigMapList{} }, DeepCopy: true})
	for i := range n {
		if _, err := c.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("cm-%03d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// NamedHandler names the registration in Stats and in the Observer's hooks;
// without it the name is the handler's type without its type arguments.
// Either way the handler itself receives every event.
func TestHandlerNames(t *testing.T) {
	c := newConfigMaps(t, 10)
	obs := &namingHooks{}
	inf := pipeline.NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, pipeline.WithObserver(obs), pipeline.WithShards(2))
	named, plain := &testkit.Recorder{Serial: true}, genericHandler[string, *corev1.Pod]{&testkit.Recorder{}}
	r1, err := inf.AddEventHandler(pipeline.NamedHandler("reconciler", named))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := inf.AddParallelEventHandler(plain, 2)
	if err != nil {
		t.Fatal(err)
	}
	testkit.RunSynced(t, inf, r1, r2)
	if named.Count() != 10 || plain.Count() != 10 {
		t.Fatalf("handlers saw %d and %d events, want 10", named.Count(), plain.Count())
	}
	var got []string
	for _, l := range inf.Stats().Listeners {
		got = append(got, l.Name)
	}
	want := []string{"reconciler", "pipeline_test.genericHandler#2"}
	if !slices.Equal(got, want) {
		t.Fatalf("Stats listener names = %q, want %q", got, want)
	}
	for _, w := range want {
		if !slices.Contains(obs.seen(), "HandlerDone "+w) {
			t.Errorf("no HandlerDone for %q; hooks: %q", w, obs.seen())
		}
	}
	named.CheckConsistent(t)
}

// A NamedHandler given to client-go's informer forwards every call.
func TestNamedHandlerOnClientGo(t *testing.T) {
	c := newConfigMaps(t, 10)
	inf := cache.NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil)
	rec := &testkit.Recorder{Serial: true}
	reg, err := inf.AddEventHandler(pipeline.NamedHandler("x", rec))
	if err != nil {
		t.Fatal(err)
	}
	testkit.RunSynced(t, inf, reg)
	if _, err := c.Delete("ns/cm-003"); err != nil {
		t.Fatal(err)
	}
	rec.WaitCount(t, 11)
	rec.CheckConsistent(t)
}

// New scopes a ScopedObserver to the informer's name, and the informer
// calls the scoped Observer's hooks.
func TestScopedObserver(t *testing.T) {
	c := newConfigMaps(t, 3)
	root := scopedHooks{&namingHooks{}}
	a := pipeline.NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, pipeline.WithObserver(root), pipeline.WithName("a"))
	b := pipeline.NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, nil, pipeline.WithObserver(root))
	if got, want := root.scopes, []string{"a", "shardinformer *v1.ConfigMap"}; !slices.Equal(got, want) {
		t.Fatalf("ForInformer called with %q, want %q", got, want)
	}
	if a.Name() != "a" || b.Name() != "shardinformer *v1.ConfigMap" {
		t.Fatalf("names %q, %q", a.Name(), b.Name())
	}
	testkit.RunSynced(t, a)
	testkit.Eventually(t, "a's relist hook", func() bool { return slices.Contains(root.children[0].seen(), "Relisted") })
	if len(root.seen()) != 0 || len(root.children[1].seen()) != 0 {
		t.Fatalf("hooks reached the unscoped observer (%q) or b's (%q)", root.seen(), root.children[1].seen())
	}
}

// Observers passes every hook of the Observer interface to each member, in
// order; scoping it scopes the members that are ScopedObservers.
func TestObserversFanOut(t *testing.T) {
	if _, ok := pipeline.Observers().(pipeline.NopObserver); !ok {
		t.Fatal("Observers() is not a NopObserver")
	}
	one := &namingHooks{}
	if pipeline.Observers(nil, pipeline.NopObserver{}, one) != pipeline.Observer(one) {
		t.Fatal("Observers(nil, Nop, x) is not x")
	}
	a, b, c := &namingHooks{}, &namingHooks{}, &namingHooks{}
	fan := pipeline.Observers(a, pipeline.Observers(b, c)) // nested: flattened
	hooks := reflect.TypeFor[pipeline.Observer]()
	for i := range hooks.NumMethod() {
		m := hooks.Method(i)
		args := make([]reflect.Value, m.Type.NumIn())
		for j := range args {
			args[j] = reflect.Zero(m.Type.In(j))
		}
		reflect.ValueOf(fan).MethodByName(m.Name).Call(args)
	}
	for name, h := range map[string]*namingHooks{"a": a, "b": b, "c": c} {
		if got := h.seen(); len(got) != hooks.NumMethod() {
			t.Errorf("member %s saw %q, want each of the %d hooks once", name, got, hooks.NumMethod())
		}
	}

	scoped := scopedHooks{&namingHooks{}}
	plain := &namingHooks{}
	inf := pipeline.NewSharedIndexInformer(newConfigMaps(t, 2).ListerWatcher(), &corev1.ConfigMap{}, 0, nil,
		pipeline.WithObserver(pipeline.Observers(scoped, plain)), pipeline.WithName("pods"))
	if !slices.Equal(scoped.scopes, []string{"pods"}) {
		t.Fatalf("the scoped member was scoped to %q", scoped.scopes)
	}
	testkit.RunSynced(t, inf)
	testkit.Eventually(t, "relist hooks", func() bool {
		return slices.Contains(plain.seen(), "Relisted") && slices.Contains(scoped.children[0].seen(), "Relisted")
	})
}

// 0 shards means the default count, for WithShards as for loadgen's flag;
// a negative count is an error.
func TestZeroShardsIsTheDefault(t *testing.T) {
	inf, err := pipeline.New(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, nil, pipeline.WithShards(0))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(inf.Stats().Shards); got != shards.DefaultCount() {
		t.Fatalf("WithShards(0): %d shards, want the default %d", got, shards.DefaultCount())
	}
	if _, err := pipeline.New(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, nil, pipeline.WithShards(-1)); err == nil {
		t.Fatal("WithShards(-1) accepted")
	}
}
