package metadatainformer_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers/metadatainformer"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	clientgometadatainformer "k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

var pods, configMaps = apisim.PodsResource, apisim.ConfigMapsResource

type impl struct {
	name string
	ours bool
	// lw is the prefix of Stats().ListerWatcher of the factory's pod
	// informer in namespace a; dieted: the cache has no managedFields.
	lw     string
	dieted bool
	build  func(metadata.Interface, string, metadatainformer.TweakListOptionsFunc) testkit.GVRFactory
}

// withOptions builds our factory with opts through the client-go-shaped
// constructor.
func withOptions(opts ...metadatainformer.SharedInformerOption) func(metadata.Interface, string, metadatainformer.TweakListOptionsFunc) testkit.GVRFactory {
	return func(c metadata.Interface, ns string, tweak metadatainformer.TweakListOptionsFunc) testkit.GVRFactory {
		return metadatainformer.NewSharedInformerFactoryWithOptions(c, 0,
			append([]metadatainformer.SharedInformerOption{metadatainformer.WithNamespace(ns), metadatainformer.WithTweakListOptions(tweak)}, opts...)...)
	}
}

var impls = []impl{
	{name: "client-go", build: func(c metadata.Interface, ns string, tweak metadatainformer.TweakListOptionsFunc) testkit.GVRFactory {
		return clientgometadatainformer.NewFilteredSharedInformerFactory(c, 0, ns, tweak)
	}},
	{name: "shardinformer", ours: true, lw: "wire pods.v1 in a: metadata only, protobuf, ", dieted: true,
		build: func(c metadata.Interface, ns string, tweak metadatainformer.TweakListOptionsFunc) testkit.GVRFactory {
			return metadatainformer.NewFilteredSharedInformerFactory(c, 0, ns, tweak)
		}},
	{name: "shardinformer/json-3-workers-without-diet", ours: true, lw: "wire pods.v1 in a: metadata only, json, 3 workers",
		build: withOptions(metadatainformer.WithWireOptions(wire.WithContentType(wire.JSON), wire.WithWorkers(3), wire.WithoutDiet()))},
	{name: "shardinformer/WithoutWire", ours: true, lw: "client-go list/watch (WithoutWire)", build: withOptions(metadatainformer.WithoutWire())},
}

// newServer serves pods web-0..4 and db-0..2 and config maps cm-0..3 in
// namespaces a and b, and returns a metadata client recording its requests.
func newServer(t *testing.T) (*apisim.Server, metadata.Interface, *testkit.Requests) {
	t.Helper()
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"a", "b"} {
		for i := range 8 {
			tier := "web"
			if i >= 5 {
				tier = "db"
			}
			p := apisim.NewPod(ns, fmt.Sprintf("%s-%d", tier, i), int64(i), apisim.PodOptions{ManagedFields: true})
			p.Labels["tier"] = tier
			if _, err := s.Create(p); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			if _, err := s.ConfigMaps().Create(apisim.NewConfigMap(ns, fmt.Sprint("cm-", i), int64(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cfg := s.RESTConfig()
	reqs := testkit.RecordRequests(cfg)
	return s, client(t, cfg), reqs
}

func client(t *testing.T, cfg *rest.Config) metadata.Interface {
	t.Helper()
	c, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cacheMatches reports whether lister holds exactly the metadata of want
// (without managedFields if dieted).
func cacheMatches(lister cache.GenericLister, want []*corev1.Pod, dieted bool) (bool, string) {
	objs, err := lister.List(labels.Everything())
	if err != nil {
		return false, err.Error()
	}
	byKey := map[string]metav1.ObjectMeta{}
	for _, p := range want {
		m := *p.ObjectMeta.DeepCopy()
		if dieted {
			m.ManagedFields = nil
		} else if len(m.ManagedFields) == 0 {
			return false, p.Name + " has no managedFields: the diet would go unnoticed"
		}
		byKey[p.Namespace+"/"+p.Name] = m
	}
	var got []string
	for _, o := range objs {
		m := o.(*metav1.PartialObjectMetadata)
		key := m.Namespace + "/" + m.Name
		got = append(got, key)
		if w, ok := byKey[key]; !ok || !equality.Semantic.DeepEqual(m.ObjectMeta, w) {
			return false, fmt.Sprintf("%s: metadata differs from the server's", key)
		}
	}
	slices.Sort(got)
	return len(got) == len(byKey), fmt.Sprintf("cached %v", got)
}

// webPods returns the server's pods in ns with tier web.
func webPods(s *apisim.Server, ns string) []*corev1.Pod {
	return slices.DeleteFunc(s.List(ns), func(p *corev1.Pod) bool { return p.Labels["tier"] != "web" })
}

// Namespace and tweak reach every list and watch request; the listers hold
// the metadata of the server's selected pods (ours on the wire without
// managedFields, by default), initially and as pods enter and leave the
// selection — for client-go's factory and ours (on the wire with the
// default diet; in JSON on three workers without it; WithoutWire), with
// and without WatchList.
func TestListersFollowTheServer(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			testkit.ListModes(t, func(t *testing.T, _ bool) {
				s, c, reqs := newServer(t)
				f := im.build(c, "a", func(o *metav1.ListOptions) { o.LabelSelector = "tier=web" })
				gi := f.ForResource(pods)
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
				if ok, why := cacheMatches(gi.Lister(), webPods(s, "a"), im.dieted); !ok {
					t.Fatalf("after sync: %s, want the 5 web pods of a", why)
				}
				if _, err := gi.Lister().ByNamespace("a").Get("web-1"); err != nil {
					t.Error(err)
				}
				for _, ns := range []string{"a", "b"} {
					p := apisim.NewPod(ns, "web-new", 99, apisim.PodOptions{ManagedFields: true})
					p.Labels["tier"] = "web"
					if _, err := s.Create(p); err != nil {
						t.Fatal(err)
					}
				}
				for name, tier := range map[string]string{"web-0": "db", "db-5": "web"} {
					if _, err := s.Modify("a", name, func(p *corev1.Pod) { p.Labels["tier"] = tier }); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.Modify("a", "web-2", func(p *corev1.Pod) { p.Annotations = map[string]string{"changed": "yes"} }); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Delete("a", "web-3"); err != nil {
					t.Fatal(err)
				}
				want := webPods(s, "a")
				testkit.EventuallyWhy(t, "cache = the server's selection", func() (bool, string) { return cacheMatches(gi.Lister(), want, im.dieted) })
				reqs.Check(t, "pods", "/api/v1/namespaces/a/pods", "tier=web")
			})
		})
	}
}

// client-go's factory lifecycle (testkit.CheckFactoryLifecycle), for
// client-go's factory and ours; ours leave no goroutine behind.
func TestLifecycle(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			_, c, _ := newServer(t)
			testkit.CheckFactoryLifecycle(t, im.build(c, "", nil), configMaps, pods, apisim.WidgetsResource, 8)
			if im.ours {
				testkit.NoGoroutines(t, "shardinformer/pipeline.", "shardinformer/wire.", "shardinformer/informers/")
			}
		})
	}
}

// Transform and pipeline options reach every informer; informers are named
// after their resource.
func TestTransformAndPipelineOptions(t *testing.T) {
	_, c, _ := newServer(t)
	f, err := metadatainformer.New(c, 0, metadatainformer.WithPipelineOptions(pipeline.WithShards(3)),
		metadatainformer.WithTransform(func(o any) (any, error) {
			m := o.(*metav1.PartialObjectMetadata)
			m.ManagedFields, m.Annotations = nil, map[string]string{"transformed": "yes"}
			return m, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	gi := f.ForResource(configMaps)
	inf, _ := pipeline.Unwrap(gi.Informer())
	if inf.Name() != "metadata configmaps" || len(inf.Stats().Shards) != 3 {
		t.Errorf("informer %q with %d shards, want metadata configmaps with 3", inf.Name(), len(inf.Stats().Shards))
	}
	testkit.StartFactory(t, f)
	objs, _ := gi.Lister().List(labels.Everything())
	for _, o := range objs {
		if a := o.(*metav1.PartialObjectMetadata).Annotations; len(a) != 1 || a["transformed"] != "yes" {
			t.Fatalf("untransformed object cached: annotations %v", a)
		}
	}
	if len(objs) != 8 {
		t.Fatalf("cached %d config maps, want 8", len(objs))
	}
}

// Bad input: a nil client and invalid pipeline options fail New and make
// the client-go shaped constructors panic; a resource without version or
// name panics in ForResource with ErrInvalidResource.
func TestBadInput(t *testing.T) {
	_, c, _ := newServer(t)
	bad := metadatainformer.WithPipelineOptions(pipeline.WithShards(-1))
	if f, err := metadatainformer.New(c, 0, bad); err == nil || f != nil {
		t.Errorf("New with -1 shards = %v, %v; want nil and an error", f, err)
	}
	mustPanic := func(what string, fn func(), check func(error) bool) {
		t.Helper()
		defer func() {
			if err, _ := recover().(error); !check(err) {
				t.Errorf("%s panicked with %v", what, err)
			}
		}()
		fn()
	}
	if f, err := metadatainformer.New(nil, 0); err == nil || f != nil {
		t.Errorf("New(nil) = %v, %v; want nil and an error", f, err)
	}
	mustPanic("NewSharedInformerFactory(nil)", func() { metadatainformer.NewSharedInformerFactory(nil, 0) },
		func(err error) bool { return err != nil })
	mustPanic("NewSharedInformerFactoryWithOptions with -1 shards", func() {
		metadatainformer.NewSharedInformerFactoryWithOptions(c, 0, bad)
	}, func(err error) bool { return err != nil })
	f := metadatainformer.NewSharedInformerFactory(c, time.Minute)
	for _, gvr := range []schema.GroupVersionResource{{Resource: "pods"}, {Version: "v1"}} {
		mustPanic(fmt.Sprintf("ForResource(%v)", gvr), func() { f.ForResource(gvr) },
			func(err error) bool { return errors.Is(err, metadatainformer.ErrInvalidResource) })
	}
}
