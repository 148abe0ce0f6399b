package crcache

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

// impls are controller-runtime's cache and ours, for tests that check one
// behaviour on both.
func impls() []struct {
	name string
	new  cache.NewCacheFunc
} {
	return []struct {
		name string
		new  cache.NewCacheFunc
	}{{"controller-runtime", cache.New}, {"crcache", New}}
}

// sharesWith reports whether a and b share their contents: the labels map
// of typed and metadata-only objects, the content map of unstructured ones.
func sharesWith(a, b runtime.Object) bool {
	content := func(o runtime.Object) any {
		if u, ok := o.(runtime.Unstructured); ok {
			return u.UnstructuredContent()
		}
		m, _ := meta.Accessor(o)
		return m.GetLabels()
	}
	return reflect.ValueOf(content(a)).UnsafePointer() == reflect.ValueOf(content(b)).UnsafePointer()
}

// With UnsafeDisableDeepCopy, Get and List return the cached objects (their
// maps are the cache's), and the objects are the same through both caches;
// without it, copies.
func TestUnsafeDisableDeepCopy(t *testing.T) {
	s := fixture(t, apisim.PodOptions{})
	cfg := s.RESTConfig()
	cfg.ContentType = ""
	for _, disable := range []bool{true, false} {
		var caches []cache.Cache
		for _, im := range impls() {
			c := startCache(t, im.new, cfg, cache.Options{DefaultUnsafeDisableDeepCopy: ptr.To(disable)})
			caches = append(caches, c)
			for _, k := range allKinds() {
				inf, err := c.GetInformer(context.Background(), k.newObj())
				if err != nil {
					t.Fatal(err)
				}
				key := client.ObjectKey{Namespace: "ns-b", Name: "pod-2"}
				if k.name == unstructuredKind(widgetGVK).name || k.name == metadataKind(widgetGVK).name {
					key.Name = "w-2"
				}
				cached, ok, err := inf.(toolscache.SharedIndexInformer).GetIndexer().GetByKey(key.String())
				if err != nil || !ok {
					t.Fatalf("%s %s: %v not in the informer's indexer (%v)", im.name, k.name, key, err)
				}
				g := get(c, k, key)
				if g.err != "" {
					t.Fatalf("%s: Get %s %v: %s", im.name, k.name, key, g.err)
				}
				if got := sharesWith(g.obj, cached.(runtime.Object)); got != disable {
					t.Errorf("UnsafeDisableDeepCopy %v, %s: Get %s returned the cached object: %v", disable, im.name, k.name, got)
				}
				if got := sharesWith(list(t, c, k)[key.String()], cached.(runtime.Object)); got != disable {
					t.Errorf("UnsafeDisableDeepCopy %v, %s: List %s returned the cached object: %v", disable, im.name, k.name, got)
				}
			}
		}
		for _, k := range allKinds() {
			if d := sameObjects(list(t, caches[0], k), list(t, caches[1], k)); d != "" {
				t.Errorf("UnsafeDisableDeepCopy %v: List %s differs:\n%s", disable, k.name, d)
			}
		}
	}
}

// The resync period (SyncPeriod) and the watch error handler
// (DefaultWatchErrorHandler) reach the informers: handlers get resyncs,
// the handler is called when the server fails, and the caches recover.
func TestResyncAndWatchErrorHandler(t *testing.T) {
	s := fixture(t, apisim.PodOptions{})
	cfg := s.RESTConfig()
	cfg.ContentType = ""
	type counts struct{ resyncs, watchErrors atomic.Int64 }
	var all []*counts
	var caches []cache.Cache
	for _, im := range impls() {
		n := &counts{}
		all = append(all, n)
		c := startCache(t, im.new, cfg, cache.Options{
			SyncPeriod: ptr.To(300 * time.Millisecond),
			DefaultWatchErrorHandler: func(_ context.Context, _ *toolscache.Reflector, err error) {
				n.watchErrors.Add(1)
			},
		})
		caches = append(caches, c)
		inf, err := c.GetInformer(context.Background(), &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(old, new any) {
			if old.(*corev1.Pod).ResourceVersion == new.(*corev1.Pod).ResourceVersion {
				n.resyncs.Add(1)
			}
		}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, im := range impls() {
		testkit.Eventually(t, im.name+" resyncs", func() bool { return all[i].resyncs.Load() > 0 })
	}
	s.SetUnavailable(true)
	for i, im := range impls() {
		testkit.Eventually(t, im.name+" watch error handler calls", func() bool { return all[i].watchErrors.Load() > 0 })
	}
	churn(t, s)
	s.SetUnavailable(false)
	for i, im := range impls() {
		testkit.Eventually(t, im.name+" to recover", func() bool {
			v := versions(t, caches[i], typedPods())
			for key, rv := range serverVersions(s, typedPods()) {
				if v[key] != rv {
					return false
				}
			}
			return len(v) == s.Len()
		})
	}
}

// Objects with managedFields: the diet drops them, so crcache's objects
// are controller-runtime's with TransformStripManagedFields; with
// wire.WithoutDiet they are controller-runtime's exactly.
func TestManagedFields(t *testing.T) {
	s := fixture(t, apisim.PodOptions{ManagedFields: true})
	cfg := s.RESTConfig()
	cfg.ContentType = ""
	withoutDiet, err := NewFunc(WithWireOptions(wire.WithoutDiet()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		cr           cache.Options
		ours         cache.NewCacheFunc
		managedField bool
	}{
		{"diet", cache.Options{DefaultTransform: cache.TransformStripManagedFields()}, New, false},
		{"WithoutDiet", cache.Options{}, withoutDiet, true},
	} {
		cr := startCache(t, cache.New, cfg, tc.cr)
		ours := startCache(t, tc.ours, cfg, cache.Options{})
		for _, k := range allKinds() {
			a, o := list(t, cr, k), list(t, ours, k)
			if d := sameObjects(a, o); d != "" {
				t.Errorf("%s: List %s differs:\n%s", tc.name, k.name, d)
			}
			if k.name == "pods" {
				m, _ := meta.Accessor(o["ns-a/pod-0"])
				if has := len(m.GetManagedFields()) > 0; has != tc.managedField {
					t.Errorf("%s: crcache's pod has managedFields: %v, want %v", tc.name, has, tc.managedField)
				}
			}
		}
	}
}
