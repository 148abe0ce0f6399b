//go:build e2e && !e2e_clientgo_only

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientgodynamicinformer "k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	clientgometadatainformer "k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"

	"github.com/shardinformer/shardinformer/informers/dynamicinformer"
	"github.com/shardinformer/shardinformer/informers/metadatainformer"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// The resources of TestFactoriesE2E: a custom resource whose
// CustomResourceDefinition the test creates, and two built-in ones.
var (
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gizmosGVR    = schema.GroupVersionResource{Group: "e2e.shardinformer.io", Version: "v1", Resource: "gizmos"}
	podsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

const webSelector = "tier=web"

// factoryImpl builds a dynamic or metadata factory for namespace with a
// tweak that sets the label selector webSelector, on cfg.
type factoryImpl struct {
	name string
	ours bool
	// lw is the prefix of our informers' Stats().ListerWatcher: "wire "
	// on the wire, the fallback's description without it.
	lw string
	// dieted: the cache holds objects without managedFields (the wire's
	// default diet).
	dieted bool
	build  func(t *testing.T, cfg *rest.Config, namespace string) testkit.GVRFactory
}

func tweak(o *metav1.ListOptions) { o.LabelSelector = webSelector }

var dynamicImpls = []factoryImpl{
	{name: "dynamic/client-go", build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return clientgodynamicinformer.NewFilteredDynamicSharedInformerFactory(must(dynamic.NewForConfig(cfg))(t), 0, ns, tweak)
	}},
	// On the wire from the user's dynamic client, with the default diet.
	{name: "dynamic/ours-client", ours: true, lw: "wire ", dieted: true, build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return dynamicinformer.NewFilteredDynamicSharedInformerFactory(must(dynamic.NewForConfig(cfg))(t), 0, ns, tweak)
	}},
	{name: "dynamic/ours-config", ours: true, lw: "wire ", dieted: true, build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return must(dynamicinformer.NewForConfig(cfg, 0, dynamicinformer.WithNamespace(ns),
			dynamicinformer.WithTweakListOptions(tweak), dynamicinformer.WithWireOptions(wire.WithWorkers(2))))(t)
	}},
	{name: "dynamic/ours-without-wire", ours: true, lw: "client-go list/watch (WithoutWire)", build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return must(dynamicinformer.New(must(dynamic.NewForConfig(cfg))(t), 0, dynamicinformer.WithNamespace(ns),
			dynamicinformer.WithTweakListOptions(tweak), dynamicinformer.WithoutWire()))(t)
	}},
}

var metadataImpls = []factoryImpl{
	{name: "metadata/client-go", build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return clientgometadatainformer.NewFilteredSharedInformerFactory(must(metadata.NewForConfig(cfg))(t), 0, ns, tweak)
	}},
	// On the wire from the user's metadata client, with the default diet:
	// protobuf, and JSON without the diet on two workers.
	{name: "metadata/ours", ours: true, lw: "wire ", dieted: true, build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return metadatainformer.NewFilteredSharedInformerFactory(must(metadata.NewForConfig(cfg))(t), 0, ns, tweak)
	}},
	{name: "metadata/ours-json", ours: true, lw: "wire ", build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return metadatainformer.NewSharedInformerFactoryWithOptions(must(metadata.NewForConfig(cfg))(t), 0, metadatainformer.WithNamespace(ns),
			metadatainformer.WithTweakListOptions(tweak), metadatainformer.WithWireOptions(wire.WithContentType(wire.JSON), wire.WithWorkers(2), wire.WithoutDiet()))
	}},
	{name: "metadata/ours-without-wire", ours: true, lw: "client-go list/watch (WithoutWire)", build: func(t *testing.T, cfg *rest.Config, ns string) testkit.GVRFactory {
		return metadatainformer.NewSharedInformerFactoryWithOptions(must(metadata.NewForConfig(cfg))(t), 0, metadatainformer.WithNamespace(ns),
			metadatainformer.WithTweakListOptions(tweak), metadatainformer.WithoutWire())
	}},
}

// must turns (v, err) into a function that fails t on err and returns v.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// watched is one informer of a factory under test, with what it must equal.
type watched struct {
	name string
	gi   informers.GenericInformer
	reqs *testkit.Requests
	gvr  schema.GroupVersionResource
	// dieted: compare without managedFields.
	dieted bool
	// list is a fresh LIST of the namespace with webSelector from the
	// server, in the representation the informer caches.
	list func(ctx context.Context) (runtime.Object, error)
}

// Our dynamic factory (on the wire from a dynamic client and from a config,
// and WithoutWire) and our metadata factory (on the wire from a metadata
// client, in protobuf with the diet and in JSON without it, and
// WithoutWire) against a real kube-apiserver, beside client-go's
// factories — each of ours on the path Stats().ListerWatcher names, the
// dieted ones equal to the server but for managedFields —: on a custom resource (CRD created here) for the
// dynamic ones and on pods and config maps for the metadata ones, with
// namespace and label selector tweak, each informer's lister equals a fresh
// LIST from the server (same keys, same objects or metadata) after the
// initial sync and again after creates, updates (into, out of and within
// the selection), deletes and a re-create under a new UID in the selected
// and another namespace; every list and watch request of every informer
// carried the namespace and the selector. Both with client-go's
// WatchListClient gate off and on.
func TestFactoriesE2E(t *testing.T) {
	c := sharedCluster(t)
	ctx := t.Context()
	cfg := c.RESTConfig()
	dyn := must(dynamic.NewForConfig(cfg))(t)
	md := must(metadata.NewForConfig(cfg))(t)
	createGizmoCRD(t, dyn)

	testkit.ListModes(t, func(t *testing.T, watchList bool) {
		suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
		sel, other := "fac-sel-"+suffix, "fac-other-"+suffix
		for _, ns := range []string{sel, other} {
			nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
			if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		resources := []schema.GroupVersionResource{gizmosGVR, podsGVR, configMapGVR}
		for _, gvr := range resources {
			for _, ns := range []string{sel, other} {
				for i := range 8 {
					create(t, dyn, gvr, ns, fmt.Sprint("obj-", i), tierOf(i < 5))
				}
			}
		}

		var all []watched
		add := func(im factoryImpl, gvrs ...schema.GroupVersionResource) {
			rc := rest.CopyConfig(cfg)
			reqs := testkit.RecordRequests(rc)
			f := im.build(t, rc, sel)
			for _, gvr := range gvrs {
				gi := f.ForResource(gvr)
				inf, ok := pipeline.Unwrap(gi.Informer())
				if ok != im.ours {
					t.Fatalf("%s: informer %T: ours %v, want %v", im.name, gi.Informer(), ok, im.ours)
				}
				if ok {
					if lw := inf.Stats().ListerWatcher; !strings.HasPrefix(lw, im.lw) {
						t.Fatalf("%s: lists and watches through %q, want %q…", im.name, lw, im.lw)
					}
				}
				w := watched{name: im.name + "/" + gvr.Resource, gi: gi, reqs: reqs, gvr: gvr, dieted: im.dieted}
				opts := metav1.ListOptions{LabelSelector: webSelector}
				if gvr == gizmosGVR {
					w.list = func(ctx context.Context) (runtime.Object, error) {
						return dyn.Resource(gvr).Namespace(sel).List(ctx, opts)
					}
				} else {
					w.list = func(ctx context.Context) (runtime.Object, error) {
						return md.Resource(gvr).Namespace(sel).List(ctx, opts)
					}
				}
				all = append(all, w)
			}
			testkit.StartFactory(t, f)
		}
		for _, im := range dynamicImpls {
			add(im, gizmosGVR)
		}
		for _, im := range metadataImpls {
			add(im, podsGVR, configMapGVR)
		}

		checkAll := func(when string) {
			t.Helper()
			for _, w := range all {
				testkit.EventuallyWhy(t, fmt.Sprintf("%s: %s: lister = a fresh LIST", when, w.name), func() (bool, string) {
					return listerEqualsList(ctx, w)
				})
			}
		}
		checkAll("after sync")

		for _, gvr := range resources {
			for _, ns := range []string{sel, other} {
				churnResource(t, dyn, gvr, ns)
			}
		}
		checkAll("after churn")

		for _, w := range all {
			path := "/apis/" + w.gvr.Group + "/" + w.gvr.Version
			if w.gvr.Group == "" {
				path = "/api/" + w.gvr.Version
			}
			w.reqs.Check(t, w.gvr.Resource, path+"/namespaces/"+sel+"/"+w.gvr.Resource, webSelector)
		}
		t.Logf("watchList=%v: %d informers matched the server", watchList, len(all))
	})
}

// createGizmoCRD creates the CustomResourceDefinition of gizmosGVR (through
// the dynamic client: the module does not depend on apiextensions'
// clientset) unless it exists, and waits until gizmos can be listed.
func createGizmoCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": gizmosGVR.Resource + "." + gizmosGVR.Group},
		"spec": map[string]any{
			"group": gizmosGVR.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
			"versions": []any{map[string]any{
				"name": gizmosGVR.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := dyn.Resource(crdGVR).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	testkit.EventuallyWhy(t, "the gizmos CRD serves", func() (bool, string) {
		_, err := dyn.Resource(gizmosGVR).List(t.Context(), metav1.ListOptions{Limit: 1})
		return err == nil, fmt.Sprint(err)
	})
}

func tierOf(web bool) string {
	if web {
		return "web"
	}
	return "db"
}

// newObject returns a minimal object of gvr (a gizmo, a pending pod or a
// config map) labelled tier.
func newObject(gvr schema.GroupVersionResource, ns, name, tier string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(map[string]string{"tier": tier})
	switch gvr {
	case gizmosGVR:
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind("Gizmo")
		u.Object["spec"] = map[string]any{"size": int64(len(name)), "colour": "blue"}
	case podsGVR:
		u.SetAPIVersion("v1")
		u.SetKind("Pod")
		u.Object["spec"] = map[string]any{
			"schedulerName": "do-not-schedule", // no scheduler or kubelet: pods stay Pending
			"containers":    []any{map[string]any{"name": "c", "image": "registry.invalid/pause:none"}},
		}
	case configMapGVR:
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.Object["data"] = map[string]any{"name": name}
	}
	return u
}

func create(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns, name, tier string) {
	t.Helper()
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(t.Context(), newObject(gvr, ns, name, tier), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// churnResource changes the objects obj-0..7 of gvr in ns (obj-0..4 web,
// the rest db) while the informers run: creates web and db objects; moves
// obj-0 out of the selection and obj-5 into it; annotates obj-1 (an update
// within it); deletes obj-2, obj-6 and a new one; deletes obj-3 and creates
// it again (a new UID under the same key).
func churnResource(t *testing.T, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) {
	t.Helper()
	ctx := t.Context()
	r := dyn.Resource(gvr).Namespace(ns)
	for i := range 6 {
		create(t, dyn, gvr, ns, fmt.Sprint("new-", i), tierOf(i%2 == 0))
	}
	update := func(name string, change func(u *unstructured.Unstructured)) {
		t.Helper()
		u, err := r.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(u)
		if _, err := r.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setTier := func(tier string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"tier": tier}) }
	}
	update("obj-0", setTier("db"))
	update("obj-5", setTier("web"))
	update("obj-1", func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"changed": "yes"}) })
	now := int64(0)
	for _, name := range []string{"obj-2", "obj-6", "new-2", "obj-3"} {
		if err := r.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &now}); err != nil {
			t.Fatal(err)
		}
	}
	create(t, dyn, gvr, ns, "obj-3", "web")
}

// listerEqualsList reports whether w's lister holds exactly the objects of
// a fresh LIST: the same keys, and for each the same object (dynamic) or
// the same metadata (metadata-only).
func listerEqualsList(ctx context.Context, w watched) (bool, string) {
	fresh, err := w.list(ctx)
	if err != nil {
		return false, err.Error()
	}
	items, err := meta.ExtractList(fresh)
	if err != nil {
		return false, err.Error()
	}
	cached, err := w.gi.Lister().List(labels.Everything())
	if err != nil {
		return false, err.Error()
	}
	if w.dieted {
		for _, o := range items {
			if len(mustAccessor(o).GetManagedFields()) == 0 {
				return false, "the server's objects have no managedFields: the diet would go unnoticed"
			}
			mustAccessor(o).SetManagedFields(nil)
		}
	}
	want, got := byKey(items), byKey(cached)
	for key, o := range want {
		if g, ok := got[key]; !ok {
			return false, key + " missing from the lister"
		} else if !equality.Semantic.DeepEqual(g, o) {
			return false, key + " differs from the server's"
		}
	}
	if len(got) != len(want) {
		return false, fmt.Sprintf("lister holds %v, the server %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
	if len(want) == 0 {
		return false, "the server lists nothing: the test would prove nothing"
	}
	return true, ""
}

func mustAccessor(o runtime.Object) metav1.Object {
	a, err := meta.Accessor(o)
	if err != nil {
		panic(err)
	}
	return a
}

// byKey maps namespace/name to what the informer must hold equal: the
// whole object for unstructured ones, the metadata for metadata-only ones.
func byKey(objs []runtime.Object) map[string]any {
	out := make(map[string]any, len(objs))
	for _, o := range objs {
		switch o := o.(type) {
		case *unstructured.Unstructured:
			out[o.GetNamespace()+"/"+o.GetName()] = o.Object
		case *metav1.PartialObjectMetadata:
			out[o.Namespace+"/"+o.Name] = o.ObjectMeta
		default:
			out[fmt.Sprintf("unexpected %T", o)] = o
		}
	}
	return out
}
