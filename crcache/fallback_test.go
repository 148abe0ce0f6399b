package crcache

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// noWatchList is a list/watch that opts out of WatchList.
type noWatchList struct{ *toolscache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// When the probe cannot read what controller-runtime's list/watch requests
// — it answers without a request (as a list/watch not on the cache's HTTP
// client would), or sends a parameter crcache does not know (as a changed
// controller-runtime might) — the informer is ours on that list/watch:
// it syncs through it, keeps its WatchList choice, its Stats say why, and
// each reason is logged once at V(2).
func TestFallback(t *testing.T) {
	logs := testkit.CaptureKlog(t, 2)
	s := fixture(t, apisim.PodOptions{})
	cfg := s.RESTConfig()
	newInformer, err := informers.NewInformerFunc()
	if err != nil {
		t.Fatal(err)
	}
	var c config
	opts := cache.Options{}
	b, err := c.newBuilder(cfg, &opts, newInformer)
	if err != nil {
		t.Fatal(err)
	}
	// A clientset on the probing client controller-runtime is given.
	cs, err := kubernetes.NewForConfigAndClient(cfg, opts.HTTPClient)
	if err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("ns-a")
	offline := noWatchList{&toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.Pod{*apisim.NewPod("x", "only", 1, apisim.PodOptions{})}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}}
	unknownParam := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.AllowWatchBookmarks = true // not on a list
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, o)
		},
	}
	const offlineReason = "controller-runtime's list/watch cannot be read: its list answered without a request (*v1.PodList)"
	const paramReason = `controller-runtime's list/watch cannot be read: it sent the parameter "allowWatchBookmarks", which crcache does not know`
	for _, tc := range []struct {
		name        string
		lw          toolscache.ListerWatcher
		reason      string
		keys        int
		noWatchList bool
	}{
		{"offline", offline, offlineReason, 1, true},
		{"offline again", offline, offlineReason, 1, true},
		{"unknown parameter", unknownParam, paramReason, 6, false},
	} {
		inf := b.build(tc.lw, &corev1.Pod{}, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		ours, ok := pipeline.Unwrap(inf)
		if !ok {
			t.Fatalf("%s: %T is not ours", tc.name, inf)
		}
		if got, want := ours.Stats().ListerWatcher, "controller-runtime list/watch ("+tc.reason+")"; got != want {
			t.Errorf("%s: Stats().ListerWatcher = %q, want %q", tc.name, got, want)
		}
		testkit.RunSynced(t, inf)
		if n := len(inf.GetIndexer().ListKeys()); n != tc.keys {
			t.Errorf("%s: %d objects cached, want %d", tc.name, n, tc.keys)
		}
		if got := newFallback(tc.lw, "").(interface{ IsWatchListSemanticsUnSupported() bool }).IsWatchListSemanticsUnSupported(); got != tc.noWatchList {
			t.Errorf("%s: the fallback's IsWatchListSemanticsUnSupported = %v, want %v", tc.name, got, tc.noWatchList)
		}
	}
	for _, reason := range []string{offlineReason, paramReason} {
		if n := strings.Count(logs(), strconv.Quote(reason)); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", reason, n, logs())
		}
	}
}

// WithoutWire: the informers are ours on controller-runtime's own
// list/watch, with the same objects as controller-runtime's cache.
func TestWithoutWire(t *testing.T) {
	s := fixture(t, apisim.PodOptions{ManagedFields: true})
	cfg := s.RESTConfig()
	var b built
	newCache, err := NewFunc(WithoutWire(), withBuilt(&b))
	if err != nil {
		t.Fatal(err)
	}
	cr := startCache(t, cache.New, cfg, cache.Options{})
	ours := startCache(t, newCache, cfg, cache.Options{})
	for _, k := range allKinds() {
		if d := sameObjects(list(t, cr, k), list(t, ours, k)); d != "" {
			t.Errorf("List %s differs:\n%s", k.name, d)
		}
	}
	stats := b.stats()
	if len(stats) != len(allKinds()) {
		t.Errorf("%d informers built, want %d", len(stats), len(allKinds()))
	}
	for _, st := range stats {
		if _, lw, _ := strings.Cut(st, " "); lw != "controller-runtime list/watch (WithoutWire)" {
			t.Errorf("Stats().ListerWatcher = %q", st)
		}
	}
}

func TestBadInput(t *testing.T) {
	s := fixture(t, apisim.PodOptions{})
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"pipeline option", []Option{WithPipelineOptions(pipeline.WithShards(-1))}, "crcache: pipeline"},
		{"wire option", []Option{WithWireOptions(wire.WithWorkers(-1))}, "crcache: wire: invalid option: workers -1 < 1"},
	} {
		if _, err := NewFunc(tc.opts...); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: NewFunc: %v, want an error starting %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(nil, cache.Options{}); !errors.Is(err, errNilConfig) {
		t.Errorf("New(nil config): %v", err)
	}
	if _, err := New(s.RESTConfig(), cache.Options{NewInformer: informers.NewInformer}); !errors.Is(err, ErrNewInformerSet) {
		t.Errorf("New with NewInformer set: %v", err)
	}
	bad := s.RESTConfig()
	bad.Host = "http://a b"
	if _, err := New(bad, cache.Options{}); err == nil {
		t.Error("New with a host that is not a URL: no error")
	}
}

// parseTarget takes exactly what controller-runtime's list/watch sends.
func TestParseTarget(t *testing.T) {
	base, _ := url.Parse("https://api.example:6443/prefix")
	req := func(method, raw string) probed {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return probed{method: method, url: u, accept: "application/vnd.kubernetes.protobuf, */*"}
	}
	const srv = "https://api.example:6443/prefix"
	for _, tc := range []struct {
		name        string
		list, watch []probed
		want        target
		err         string
	}{{
		name:  "namespaced, selectors, bookmarks",
		list:  []probed{req("GET", srv+"/api/v1/namespaces/shop/pods?labelSelector=a%3Db&fieldSelector=metadata.name%21%3Dx")},
		watch: []probed{req("GET", srv+"/api/v1/namespaces/shop/pods?allowWatchBookmarks=true&fieldSelector=metadata.name%21%3Dx&labelSelector=a%3Db&watch=true")},
		want:  target{gvr: corev1.SchemeGroupVersion.WithResource("pods"), namespace: "shop", labelSelector: "a=b", fieldSelector: "metadata.name!=x", allowBookmarks: true, contentType: wire.Protobuf},
	}, {
		name:  "group, cluster-wide, no bookmarks",
		list:  []probed{req("GET", srv+"/apis/example.io/v1/widgets")},
		watch: []probed{req("GET", srv+"/apis/example.io/v1/widgets?watch=true")},
		want:  target{gvr: schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "widgets"}, contentType: wire.Protobuf},
	}, {
		name: "the resource named namespaces",
		list: []probed{req("GET", srv+"/api/v1/namespaces")}, watch: []probed{req("GET", srv+"/api/v1/namespaces?watch=true")},
		want: target{gvr: corev1.SchemeGroupVersion.WithResource("namespaces"), contentType: wire.Protobuf},
	},
		{name: "no request", watch: []probed{req("GET", srv+"/api/v1/pods?watch=true")}, err: "its list and watch sent 0 and 1 requests, not 1 and 1"},
		{name: "two requests", list: []probed{req("GET", srv+"/api/v1/pods"), req("GET", srv+"/api/v1/pods")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true")}, err: "sent 2 and 1 requests"},
		{name: "not a GET", list: []probed{req("POST", srv+"/api/v1/pods")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true")}, err: "it sent a POST, not a GET"},
		{name: "another host", list: []probed{req("GET", "https://other:6443/prefix/api/v1/pods")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true")}, err: "not to the configured https://api.example:6443"},
		{name: "paths differ", list: []probed{req("GET", srv+"/api/v1/pods")}, watch: []probed{req("GET", srv+"/api/v1/namespaces/x/pods?watch=true")}, err: "paths differ"},
		{name: "not below the prefix", list: []probed{req("GET", "https://api.example:6443/api/v1/pods")}, watch: []probed{req("GET", "https://api.example:6443/api/v1/pods?watch=true")}, err: "not below the server's /prefix/"},
		{name: "no group version", list: []probed{req("GET", srv+"/apis/pods")}, watch: []probed{req("GET", srv+"/apis/pods?watch=true")}, err: "names no API group version"},
		{name: "an object, not a collection", list: []probed{req("GET", srv+"/api/v1/namespaces/x/pods/p")}, watch: []probed{req("GET", srv+"/api/v1/namespaces/x/pods/p?watch=true")}, err: "is not a collection"},
		{name: "empty namespace", list: []probed{req("GET", srv+"/api/v1/namespaces//pods")}, watch: []probed{req("GET", srv+"/api/v1/namespaces//pods?watch=true")}, err: "is not a collection"},
		{name: "empty resource", list: []probed{req("GET", srv+"/api/v1/")}, watch: []probed{req("GET", srv+"/api/v1/?watch=true")}, err: "has an empty segment"},
		{name: "selectors differ", list: []probed{req("GET", srv+"/api/v1/pods?labelSelector=a")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true&labelSelector=b")}, err: "list and watch labelSelectors differ"},
		{name: "two selectors", list: []probed{req("GET", srv+"/api/v1/pods?fieldSelector=a&fieldSelector=b")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true&fieldSelector=a&fieldSelector=b")}, err: "has 2 fieldSelector parameters"},
		{name: "watch not set", list: []probed{req("GET", srv+"/api/v1/pods")}, watch: []probed{req("GET", srv+"/api/v1/pods")}, err: `its watch has watch=[]`},
		{name: "odd bookmarks", list: []probed{req("GET", srv+"/api/v1/pods")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true&allowWatchBookmarks=1")}, err: `allowWatchBookmarks=["1"]`},
		{name: "unknown parameter", list: []probed{req("GET", srv+"/api/v1/pods?limit=5")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true")}, err: `it sent the parameter "limit"`},
		{name: "unknown watch parameter", list: []probed{req("GET", srv+"/api/v1/pods")}, watch: []probed{req("GET", srv+"/api/v1/pods?watch=true&timeoutSeconds=5")}, err: `it sent the parameter "timeoutSeconds"`},
	} {
		got, err := parseTarget(base, tc.list, tc.watch)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}

func TestContentTypeOf(t *testing.T) {
	for accept, want := range map[string]wire.ContentType{
		"application/vnd.kubernetes.protobuf, */*": wire.Protobuf,
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json": wire.Protobuf,
		"application/json, */*":                        wire.JSON,
		"application/json":                             wire.JSON,
		"application/cbor;q=1, application/json;q=0.9": wire.CBOR,
		"": wire.JSON,
		"application/vnd.kubernetes.protobuf;stream=watch": wire.Protobuf,
	} {
		if got := contentTypeOf(accept); got != want {
			t.Errorf("contentTypeOf(%q) = %v, want %v", accept, got, want)
		}
	}
}
