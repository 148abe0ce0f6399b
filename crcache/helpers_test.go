package crcache

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
)

var (
	podGVK    = corev1.SchemeGroupVersion.WithKind("Pod")
	widgetGVK = apisim.WidgetKind
)

// kind is one way controller-runtime caches a resource: typed, unstructured
// or metadata-only.
type kind struct {
	name    string
	newObj  func() client.Object
	newList func() client.ObjectList
}

func typedPods() kind {
	return kind{"pods", func() client.Object { return &corev1.Pod{} }, func() client.ObjectList { return &corev1.PodList{} }}
}

func unstructuredKind(gvk schema.GroupVersionKind) kind {
	return kind{"unstructured " + gvk.Kind,
		func() client.Object { u := &unstructured.Unstructured{}; u.SetGroupVersionKind(gvk); return u },
		func() client.ObjectList {
			u := &unstructured.UnstructuredList{}
			u.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			return u
		}}
}

func metadataKind(gvk schema.GroupVersionKind) kind {
	return kind{"metadata " + gvk.Kind,
		func() client.Object { m := &metav1.PartialObjectMetadata{}; m.SetGroupVersionKind(gvk); return m },
		func() client.ObjectList {
			m := &metav1.PartialObjectMetadataList{}
			m.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			return m
		}}
}

// allKinds are the kinds every comparison covers.
func allKinds() []kind {
	return []kind{typedPods(), unstructuredKind(widgetGVK), unstructuredKind(podGVK), metadataKind(podGVK), metadataKind(widgetGVK)}
}

// namespaces of the fixture; ns-d appears only in the churn.
var namespaces = []string{"ns-a", "ns-b", "ns-c"}

// fixture is an apisim server with pods (pod-0…pod-5) and widgets
// (w-0…w-3) in every namespace, labelled group=g0 or g1 alternately.
func fixture(t *testing.T, podOpts apisim.PodOptions) *apisim.Server {
	t.Helper()
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for n, ns := range namespaces {
		for i := range 6 {
			p := apisim.NewPod(ns, fmt.Sprintf("pod-%d", i), int64(10*n+i), podOpts)
			p.Labels["group"] = fmt.Sprintf("g%d", i%2)
			if _, err := s.Create(p); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 4 {
			w := apisim.NewWidget(ns, fmt.Sprintf("w-%d", i), int64(10*n+i))
			setLabel(w, "group", fmt.Sprintf("g%d", i%2))
			if _, err := s.Widgets().Create(w); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func setLabel(o metav1.Object, k, v string) {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[k] = v
	o.SetLabels(l)
}

// churn creates, updates and deletes pods and widgets, moving some into
// and out of the group=g1 selection and into a new namespace.
func churn(t *testing.T, s *apisim.Server) {
	t.Helper()
	check := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(s.Modify("ns-a", "pod-0", func(p *corev1.Pod) { p.Labels["group"] = "g1" }))
	check(s.Modify("ns-a", "pod-3", func(p *corev1.Pod) { p.Labels["group"] = "g0" }))
	check(s.Modify("ns-b", "pod-2", func(p *corev1.Pod) { p.Annotations["touched"] = "yes" }))
	check(s.Delete("ns-a", "pod-1"))
	check(s.Delete("ns-c", "pod-4"))
	for _, ns := range []string{"ns-b", "ns-d"} {
		p := apisim.NewPod(ns, "pod-new", 99, apisim.PodOptions{})
		p.Labels["group"] = "g1"
		check(s.Create(p))
		w := apisim.NewWidget(ns, "w-new", 99)
		setLabel(w, "group", "g1")
		check(s.Widgets().Create(w))
	}
	check(s.Widgets().Modify("ns-a", "w-0", func(u *unstructured.Unstructured) { setLabel(u, "group", "g1") }))
	check(s.Widgets().Delete("ns-c", "w-1"))
}

// serverKeys are the keys of every pod and widget on the server, and some
// that are not.
func serverKeys(s *apisim.Server) []client.ObjectKey {
	var keys []client.ObjectKey
	for _, p := range s.List("") {
		keys = append(keys, client.ObjectKey{Namespace: p.Namespace, Name: p.Name})
	}
	for _, w := range s.Widgets().List("") {
		keys = append(keys, client.ObjectKey{Namespace: w.GetNamespace(), Name: w.GetName()})
	}
	return append(keys, client.ObjectKey{Namespace: "ns-a", Name: "absent"}, client.ObjectKey{Namespace: "ns-d", Name: "pod-new"})
}

// serverVersions returns namespace/name → resourceVersion of the server's
// objects of k's resource.
func serverVersions(s *apisim.Server, k kind) map[string]string {
	out := map[string]string{}
	if k.name == typedPods().name || strings.HasSuffix(k.name, " Pod") {
		for _, p := range s.List("") {
			out[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		return out
	}
	for _, w := range s.Widgets().List("") {
		out[w.GetNamespace()+"/"+w.GetName()] = w.GetResourceVersion()
	}
	return out
}

// startCache builds a cache with newCache and runs it until the test ends.
func startCache(t *testing.T, newCache cache.NewCacheFunc, cfg *rest.Config, opts cache.Options) cache.Cache {
	t.Helper()
	c, err := newCache(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }() // goroutine: the cache; joined at cleanup.
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cache.Start: %v", err)
		}
	})
	if !c.WaitForCacheSync(ctx) { // waits for Start too
		t.Fatal("the cache did not start")
	}
	return c
}

// list returns namespace/name → object of the cache's objects of kind k.
func list(t *testing.T, c cache.Cache, k kind) map[string]runtime.Object {
	t.Helper()
	l := k.newList()
	if err := c.List(context.Background(), l); err != nil {
		t.Fatalf("List %s: %v", k.name, err)
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]runtime.Object{}
	for _, o := range items {
		m, _ := meta.Accessor(o)
		out[m.GetNamespace()+"/"+m.GetName()] = o
	}
	return out
}

// indexed returns namespace/name → object of the objects in the indexer
// of the cache's informer for k, nil if the cache's informer has none (a
// multi-namespace cache's).
func indexed(t *testing.T, c cache.Cache, k kind) map[string]runtime.Object {
	t.Helper()
	inf, err := c.GetInformer(context.Background(), k.newObj())
	if err != nil {
		t.Fatal(err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil
	}
	out := map[string]runtime.Object{}
	for _, o := range sii.GetIndexer().List() {
		m, _ := meta.Accessor(o)
		out[m.GetNamespace()+"/"+m.GetName()] = o.(runtime.Object)
	}
	return out
}

// versions is list's namespace/name → resourceVersion.
func versions(t *testing.T, c cache.Cache, k kind) map[string]string {
	out := map[string]string{}
	for key, o := range list(t, c, k) {
		m, _ := meta.Accessor(o)
		out[key] = m.GetResourceVersion()
	}
	return out
}

// got is the outcome of a Get: the object, or the error's class.
type got struct {
	obj client.Object
	err string
}

func get(c cache.Cache, k kind, key client.ObjectKey) got {
	o := k.newObj()
	switch err := c.Get(context.Background(), key, o); {
	case err == nil:
		return got{obj: o}
	case apierrors.IsNotFound(err):
		return got{err: "NotFound"}
	default:
		return got{err: err.Error()}
	}
}

// sameObjects reports how a's and b's objects differ ("" if they do not),
// under apiequality.Semantic (a nil slice equals an empty one).
func sameObjects(a, b map[string]runtime.Object) string {
	var diffs []string
	for _, key := range union(a, b) {
		x, y := a[key], b[key]
		switch {
		case x == nil || y == nil:
			diffs = append(diffs, fmt.Sprintf("%s: in one only (%v, %v)", key, x != nil, y != nil))
		case !apiequality.Semantic.DeepEqual(x, y):
			diffs = append(diffs, fmt.Sprintf("%s (-controller-runtime +crcache):\n%s", key, cmp.Diff(x, y)))
		}
	}
	return strings.Join(diffs, "\n")
}

func union[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// resourceRequests is the sorted set of collection requests recorded, each
// as its path and the query parameters controller-runtime sets (selectors,
// watch, allowWatchBookmarks): the reflector's own (resourceVersion,
// limit, timeoutSeconds…) differ between runs.
func resourceRequests(r *testkit.Requests) []string {
	var out []string
	for _, req := range r.All() {
		p, q, _ := strings.Cut(req, "?")
		if !strings.HasSuffix(p, "/pods") && !strings.HasSuffix(p, "/widgets") {
			continue // discovery
		}
		v, _ := url.ParseQuery(q)
		s := p
		for _, k := range []string{"labelSelector", "fieldSelector", "watch", "allowWatchBookmarks"} {
			if x, ok := v[k]; ok {
				s += fmt.Sprintf(" %s=%q", k, x)
			}
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// built records the informers a crcache cache built (withBuilt).
type built struct {
	mu   sync.Mutex
	infs []builtInformer
}

type builtInformer struct {
	inf  *pipeline.Informer
	kind string // typed, unstructured or metadata
}

// withBuilt records every informer built.
func withBuilt(b *built) Option {
	return func(c *config) {
		c.built = func(inf *pipeline.Informer, obj runtime.Object) {
			kind := "typed"
			switch obj.(type) {
			case runtime.Unstructured:
				kind = "unstructured"
			case *metav1.PartialObjectMetadata:
				kind = "metadata"
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			b.infs = append(b.infs, builtInformer{inf, kind})
		}
	}
}

// stats returns each informer's Stats().ListerWatcher, after the kind of
// objects it caches: "typed wire pods.v1: protobuf, …".
func (b *built) stats() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, i := range b.infs {
		out = append(out, i.kind+" "+i.inf.Stats().ListerWatcher)
	}
	slices.Sort(out)
	return out
}

// prefixed serves s below /prefix, as a proxy that relocated the API
// server's paths would, and returns a config for it.
func prefixed(t *testing.T, s *apisim.Server) *rest.Config {
	t.Helper()
	target, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			p, ok := strings.CutPrefix(r.In.URL.Path, "/prefix")
			if !ok {
				p = "/not-below-the-prefix" + r.In.URL.Path
			}
			r.Out.URL.Path, r.Out.URL.RawPath = p, ""
		},
		FlushInterval: -1, // watch streams
	}
	ps := httptest.NewServer(proxy)
	t.Cleanup(ps.Close)
	cfg := s.RESTConfig()
	cfg.Host = ps.URL + "/prefix"
	return cfg
}

var _ http.Handler = (*httputil.ReverseProxy)(nil)
