package wire_test

import (
	"math/rand"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

// TestUnstructuredRequestsAndErrors: an unstructured ListerWatcher sends
// the requests client-go's dynamic client sends (URL with every list
// option, no timeout, Accept header) and reports HTTP errors as it does
// (type, code, reason, message: no resource named), for LIST and WATCH.
func TestUnstructuredRequestsAndErrors(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newMetaServer(t)
	dyn := dynamicFor(cfg)
	empty := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList"}}
	srv.set(encodeFor(t, mtJSON, widgetGVR.GroupVersion(), empty), nil, mtJSON)
	for seed := range int64(20) {
		r := rand.New(rand.NewSource(seed))
		ns := []string{"", "ns-1"}[r.Intn(2)]
		lw, err := wire.NewForConfig(cfg, wire.Resource{GVR: widgetGVR, Namespace: ns}, wire.WithWorkers(1+r.Intn(3)))
		if err != nil {
			t.Fatal(err)
		}
		opts := metav1.ListOptions{LabelSelector: "a=b", Limit: int64(r.Intn(100)), Continue: "c" + strconv.Itoa(r.Intn(9)),
			ResourceVersion: strconv.Itoa(r.Intn(100)), TimeoutSeconds: ptr.To(int64(1 + r.Intn(600))), AllowWatchBookmarks: r.Intn(2) == 0}
		srv.take()
		if _, err := dyn.Resource(widgetGVR).Namespace(ns).List(ctx(t), opts); err != nil {
			t.Fatal(err)
		}
		if _, err := lw.ListWithContext(ctx(t), opts); err != nil {
			t.Fatal(err)
		}
		sameRequests(t, "list", wire.Protobuf, srv.take())
		w, err := dyn.Resource(widgetGVR).Namespace(ns).Watch(ctx(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		drainAll(w)
		gw, err := lw.WatchWithContext(ctx(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		drainAll(gw)
		sameRequests(t, "watch", wire.Protobuf, srv.take())
	}

	status := encodeFor(t, mtJSON, schema.GroupVersion{Version: "v1"}, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "from the server"})
	for _, tc := range []struct {
		name   string
		status int
		body   []byte
		ct     string
	}{
		{"410 Expired", 410, status, mtJSON},
		{"503 plain text", 503, []byte("upstream connect error"), "text/plain"},
		{"502 no body", 502, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.mu.Lock()
			srv.status, srv.errBody, srv.errCT = tc.status, tc.body, tc.ct
			srv.mu.Unlock()
			lw, err := wire.NewForConfig(cfg, wire.Resource{GVR: widgetGVR, Namespace: "ns-1"})
			if err != nil {
				t.Fatal(err)
			}
			_, werr := dyn.Resource(widgetGVR).Namespace("ns-1").List(ctx(t), metav1.ListOptions{})
			_, gerr := lw.ListWithContext(ctx(t), metav1.ListOptions{})
			sameError(t, "list", werr, gerr)
			_, werr = dyn.Resource(widgetGVR).Namespace("ns-1").Watch(ctx(t), metav1.ListOptions{})
			_, gerr = lw.WatchWithContext(ctx(t), metav1.ListOptions{})
			sameError(t, "watch", werr, gerr)
		})
	}
}

// TestInvalidPathSegments: a namespace, resource, group or version that
// cannot be a path segment is refused by New with a clear error.
func TestInvalidPathSegments(t *testing.T) {
	for _, res := range []wire.Resource{
		{GVR: widgetGVR, Namespace: "a/b"},
		{GVR: schema.GroupVersionResource{Version: "v1", Resource: ".."}, Object: &metav1.PartialObjectMetadata{}},
		{GVR: schema.GroupVersionResource{Group: "x%y", Version: "v1", Resource: "pods"}},
		{GVR: schema.GroupVersionResource{Version: "v1/../v2", Resource: "pods"}},
	} {
		if _, err := wire.NewForConfig(&restConfigForNothing, res); err == nil {
			t.Errorf("%+v accepted", res)
		}
	}
}

var restConfigForNothing = rest.Config{Host: "http://127.0.0.1:1"}

// TestStringNamesWhatIsRequested: String names the content type requested
// (JSON for unstructured objects under the default Protobuf) and
// metadata-only objects.
func TestStringNamesWhatIsRequested(t *testing.T) {
	for _, c := range []struct {
		res  wire.Resource
		opts []wire.Option
		want string
	}{
		{wire.Resource{GVR: widgetGVR, Namespace: "shop"}, nil, "wire widgets.v1.example.com in shop: json, 2 workers"},
		{wire.Resource{GVR: widgetGVR}, []wire.Option{wire.WithContentType(wire.CBOR), wire.WithDiet()}, "wire widgets.v1.example.com: cbor, 2 workers, diet (managedFields dropped, interned, compacted, shared)"},
		{wire.Resource{GVR: podsGVR, Object: &metav1.PartialObjectMetadata{}}, []wire.Option{wire.WithContentType(wire.JSON)}, "wire pods.v1: metadata only, json, 2 workers"},
	} {
		lw, err := wire.NewForConfig(&restConfigForNothing, c.res, append([]wire.Option{wire.WithWorkers(2)}, c.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := lw.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}
