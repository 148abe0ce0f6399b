package dynamicinformer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers/dynamicinformer"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

var widgets = apisim.WidgetsResource

// impl builds a factory for namespace and tweak: client-go's, or ours
// listing through the dynamic client or through wire.
type impl struct {
	name string
	ours bool
	// lw is the prefix of Stats().ListerWatcher of the factory's widget
	// informer in namespace a.
	lw    string
	build func(t *testing.T, cfg *rest.Config, namespace string, tweak dynamicinformer.TweakListOptionsFunc) dynamicinformer.DynamicSharedInformerFactory
}

func dynamicClient(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var impls = []impl{
	{name: "client-go", build: func(t *testing.T, cfg *rest.Config, ns string, tweak dynamicinformer.TweakListOptionsFunc) dynamicinformer.DynamicSharedInformerFactory {
		return clientgodynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamicClient(t, cfg), 0, ns, tweak)
	}},
	{name: "ours/client", ours: true, lw: "wire widgets.v1.example.shardinformer.io in a: json, ",
		build: func(t *testing.T, cfg *rest.Config, ns string, tweak dynamicinformer.TweakListOptionsFunc) dynamicinformer.DynamicSharedInformerFactory {
			return dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamicClient(t, cfg), 0, ns, tweak)
		}},
	{name: "ours/config", ours: true, lw: "wire widgets.v1.example.shardinformer.io in a: json, 2 workers, diet (",
		build: func(t *testing.T, cfg *rest.Config, ns string, tweak dynamicinformer.TweakListOptionsFunc) dynamicinformer.DynamicSharedInformerFactory {
			f, err := dynamicinformer.NewForConfig(cfg, 0, dynamicinformer.WithNamespace(ns), dynamicinformer.WithTweakListOptions(tweak),
				dynamicinformer.WithWireOptions(wire.WithWorkers(2)))
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
	{name: "ours/WithoutWire", ours: true, lw: "client-go list/watch (WithoutWire)",
		build: func(t *testing.T, cfg *rest.Config, ns string, tweak dynamicinformer.TweakListOptionsFunc) dynamicinformer.DynamicSharedInformerFactory {
			f, err := dynamicinformer.New(dynamicClient(t, cfg), 0, dynamicinformer.WithNamespace(ns), dynamicinformer.WithTweakListOptions(tweak),
				dynamicinformer.WithoutWire())
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
}

func widget(ns, name, tier string, seed int64) *unstructured.Unstructured {
	w := apisim.NewWidget(ns, name, seed)
	l := w.GetLabels()
	l["tier"] = tier
	w.SetLabels(l)
	return w
}

// newServer serves widgets web-0..4 and db-0..2 in namespaces a and b.
func newServer(t *testing.T) (*apisim.Server, *rest.Config, *testkit.Requests) {
	t.Helper()
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ws []*unstructured.Unstructured
	for _, ns := range []string{"a", "b"} {
		for i := range 5 {
			ws = append(ws, widget(ns, fmt.Sprint("web-", i), "web", int64(i)))
		}
		for i := range 3 {
			ws = append(ws, widget(ns, fmt.Sprint("db-", i), "db", int64(10+i)))
		}
	}
	if err := s.Widgets().Load(ws); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cfg := s.RESTConfig()
	return s, cfg, testkit.RecordRequests(cfg)
}

// serverWidgets returns the server's widgets in ns with tier web, by key.
func serverWidgets(s *apisim.Server, ns string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, w := range s.Widgets().List(ns) {
		if w.GetLabels()["tier"] == "web" {
			out[w.GetNamespace()+"/"+w.GetName()] = w
		}
	}
	return out
}

// cacheMatches reports whether the lister holds exactly want, each object
// equal to the server's.
func cacheMatches(lister cache.GenericLister, want map[string]*unstructured.Unstructured) (bool, string) {
	objs, err := lister.List(labels.Everything())
	if err != nil {
		return false, err.Error()
	}
	var got []string
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		key := u.GetNamespace() + "/" + u.GetName()
		got = append(got, key)
		if w, ok := want[key]; !ok || !equality.Semantic.DeepEqual(u.Object, w.Object) {
			return false, fmt.Sprintf("%s differs from the server's", key)
		}
	}
	slices.Sort(got)
	return len(got) == len(want), fmt.Sprintf("cached %v", got)
}

// Namespace and tweak reach every list and watch request; the listers hold
// the server's selected widgets, equal to the server's, initially and as
// widgets enter and leave the selection — for client-go's factory and ours
// (on the wire from a dynamic client and from a config, and WithoutWire),
// with and without WatchList.
func TestListersFollowTheServer(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			testkit.ListModes(t, func(t *testing.T, _ bool) {
				s, cfg, reqs := newServer(t)
				f := im.build(t, cfg, "a", func(o *metav1.ListOptions) { o.LabelSelector = "tier=web" })
				gi := f.ForResource(widgets)
				if gi != f.ForResource(widgets) {
					t.Error("ForResource built a second informer for the same resource")
				}
				inf, ok := pipeline.Unwrap(gi.Informer())
				if ok != im.ours {
					t.Fatalf("informer %T: ours %v, want %v", gi.Informer(), ok, im.ours)
				}
				if ok {
					if got := inf.Stats().ListerWatcher; !strings.HasPrefix(got, im.lw) {
						t.Fatalf("Stats().ListerWatcher = %q, want %q…", got, im.lw)
					}
				}
				testkit.StartFactory(t, f)
				if ok, why := cacheMatches(gi.Lister(), serverWidgets(s, "a")); !ok {
					t.Fatalf("after sync: %s, want the 5 web widgets of a", why)
				}
				if _, err := gi.Lister().ByNamespace("a").Get("web-1"); err != nil {
					t.Error(err)
				}
				// Into the selection, in another namespace, out of it, changed.
				ws := s.Widgets()
				for _, w := range []*unstructured.Unstructured{widget("a", "web-new", "web", 99), widget("b", "web-new", "web", 98)} {
					if _, err := ws.Create(w); err != nil {
						t.Fatal(err)
					}
				}
				setTier := func(name, tier string) {
					if _, err := ws.Modify("a", name, func(u *unstructured.Unstructured) {
						l := u.GetLabels()
						l["tier"] = tier
						u.SetLabels(l)
					}); err != nil {
						t.Fatal(err)
					}
				}
				setTier("web-0", "db")
				setTier("db-0", "web")
				if _, err := ws.Modify("a", "web-2", func(u *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(u.Object, "changed", "spec", "note")
				}); err != nil {
					t.Fatal(err)
				}
				if _, err := ws.Delete("a", "web-3"); err != nil {
					t.Fatal(err)
				}
				want := serverWidgets(s, "a")
				testkit.EventuallyWhy(t, "cache = the server's selection", func() (bool, string) { return cacheMatches(gi.Lister(), want) })
				reqs.Check(t, "widgets", "/apis/example.shardinformer.io/v1/namespaces/a/widgets", "tier=web")
			})
		})
	}
}

// client-go's factory lifecycle (testkit.CheckFactoryLifecycle), for
// client-go's factory and ours; ours leave no goroutine behind.
func TestLifecycle(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			_, cfg, _ := newServer(t)
			testkit.CheckFactoryLifecycle(t, im.build(t, cfg, "", nil), widgets, apisim.ConfigMapsResource, apisim.DeploymentsResource, 16)
			if im.ours {
				testkit.NoGoroutines(t, "shardinformer/pipeline.", "shardinformer/wire.", "shardinformer/informers/")
			}
		})
	}
}

// Transform and pipeline options reach every informer; informers are named
// after their resource.
func TestTransformAndPipelineOptions(t *testing.T) {
	_, cfg, _ := newServer(t)
	for _, build := range []func(...dynamicinformer.Option) (dynamicinformer.SharedInformerFactory, error){
		func(opts ...dynamicinformer.Option) (dynamicinformer.SharedInformerFactory, error) {
			return dynamicinformer.New(dynamicClient(t, cfg), 0, opts...)
		},
		func(opts ...dynamicinformer.Option) (dynamicinformer.SharedInformerFactory, error) {
			return dynamicinformer.NewForConfig(cfg, 0, opts...)
		},
	} {
		f, err := build(dynamicinformer.WithPipelineOptions(pipeline.WithShards(3)),
			dynamicinformer.WithTransform(func(o any) (any, error) {
				u := o.(*unstructured.Unstructured)
				u.SetAnnotations(map[string]string{"transformed": "yes"})
				return u, nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		gi := f.ForResource(widgets)
		inf, _ := pipeline.Unwrap(gi.Informer())
		if inf.Name() != "dynamic widgets.example.shardinformer.io" || len(inf.Stats().Shards) != 3 {
			t.Errorf("informer %q with %d shards, want dynamic widgets.example.shardinformer.io with 3", inf.Name(), len(inf.Stats().Shards))
		}
		testkit.StartFactory(t, f)
		objs, _ := gi.Lister().List(labels.Everything())
		for _, o := range objs {
			if a := o.(*unstructured.Unstructured).GetAnnotations(); len(a) != 1 || a["transformed"] != "yes" {
				t.Fatalf("untransformed object cached: annotations %v", a)
			}
		}
		if len(objs) != 16 {
			t.Fatalf("cached %d widgets, want 16", len(objs))
		}
	}
}

// Bad input: invalid options and a nil config fail the constructors; a resource without
// version or name panics in ForResource with ErrInvalidResource.
func TestBadInput(t *testing.T) {
	_, cfg, _ := newServer(t)
	client := dynamicClient(t, cfg)
	if _, err := dynamicinformer.New(client, 0, dynamicinformer.WithPipelineOptions(pipeline.WithShards(-1))); err == nil {
		t.Error("New with -1 shards succeeded")
	}
	if _, err := dynamicinformer.New(client, 0, dynamicinformer.WithWireOptions(wire.WithWorkers(-1))); err == nil {
		t.Error("New with -1 wire workers succeeded")
	}
	if _, err := dynamicinformer.New(client, 0, dynamicinformer.WithoutWire(), dynamicinformer.WithWireOptions(wire.WithWindow(-1))); err == nil {
		t.Error("New WithoutWire with a -1 wire window succeeded")
	}
	if _, err := dynamicinformer.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}}, 0); err == nil {
		t.Error("NewForConfig with a missing CA file succeeded")
	}
	if _, err := dynamicinformer.NewForConfig(cfg, 0, dynamicinformer.WithWireOptions(wire.WithWorkers(-1))); err == nil {
		t.Error("NewForConfig with -1 wire workers succeeded")
	}
	if _, err := dynamicinformer.NewForConfig(cfg, 0, dynamicinformer.WithPipelineOptions(pipeline.WithShards(-1))); err == nil {
		t.Error("NewForConfig with -1 shards succeeded")
	}
	if f, err := dynamicinformer.New(nil, 0); err == nil || f != nil {
		t.Errorf("New(nil) = %v, %v; want nil and an error", f, err)
	}
	if f, err := dynamicinformer.NewForConfig(nil, 0); err == nil || f != nil {
		t.Errorf("NewForConfig(nil) = %v, %v; want nil and an error", f, err)
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, time.Minute)
	for _, gvr := range []schema.GroupVersionResource{{Resource: "widgets"}, {Version: "v1"}} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, dynamicinformer.ErrInvalidResource) {
					t.Errorf("ForResource(%v) panicked with %v, want ErrInvalidResource", gvr, err)
				}
			}()
			f.ForResource(gvr)
		}()
	}
}

// ForResource, Start and WaitForCacheSync called concurrently (under
// -race): one informer per resource, each started once, all synced.
func TestConcurrentUse(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/pipeline.", "shardinformer/informers/")
	_, cfg, _ := newServer(t)
	f, err := dynamicinformer.New(dynamicClient(t, cfg), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer f.Shutdown() // after cancel
	defer cancel()
	resources := []schema.GroupVersionResource{widgets, apisim.ConfigMapsResource, apisim.DeploymentsResource}
	got := make([][]cache.SharedIndexInformer, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			for _, gvr := range resources {
				got[g] = append(got[g], f.ForResource(gvr).Informer())
				f.StartWithContext(ctx)
			}
			f.WaitForCacheSync(ctx.Done())
		})
	}
	wg.Wait()
	for g := range got {
		if !slices.Equal(got[g], got[0]) {
			t.Fatalf("goroutine %d got other informers than goroutine 0", g)
		}
	}
	if synced := f.WaitForCacheSync(ctx.Done()); len(synced) != 3 || !synced[widgets] || !synced[apisim.ConfigMapsResource] || !synced[apisim.DeploymentsResource] {
		t.Fatalf("WaitForCacheSync = %v, want all three synced", synced)
	}
}
