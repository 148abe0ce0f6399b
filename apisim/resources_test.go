package apisim

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/pager"
)

// serverSide drives one resource of a Server through its typed Objects API.
type serverSide struct {
	load   func(n, namespaces int) error
	create func(ns, name string, seed int64) error
	touch  func(ns, name, value string) (uint64, error) // sets label touched=value
	remove func(ns, name string) error
	// rvs maps namespace/name to resourceVersion for namespace ("" = all).
	rvs func(ns string) map[string]string
}

func drive[T Object](o *Objects[T], build func(ns, name string, seed int64) T) serverSide {
	return serverSide{
		load: func(n, namespaces int) error {
			objs := make([]T, n)
			for i := range objs {
				objs[i] = build(fmt.Sprintf("ns-%d", i%namespaces), fmt.Sprintf("obj-%05d", i), int64(i))
			}
			return o.Load(objs)
		},
		create: func(ns, name string, seed int64) error {
			_, err := o.Create(build(ns, name, seed))
			return err
		},
		touch: func(ns, name, value string) (uint64, error) {
			return o.Modify(ns, name, func(x T) {
				l := x.GetLabels()
				if l == nil {
					l = map[string]string{}
				}
				l["touched"] = value
				x.SetLabels(l)
			})
		},
		remove: func(ns, name string) error {
			_, err := o.Delete(ns, name)
			return err
		},
		rvs: func(ns string) map[string]string {
			out := map[string]string{}
			for _, x := range o.List(ns) {
				out[x.GetNamespace()+"/"+x.GetName()] = x.GetResourceVersion()
			}
			return out
		},
	}
}

// clientSide reaches one resource through a client-go client.
type clientSide struct {
	name  string
	list  func(ctx context.Context, ns string, opts metav1.ListOptions) (k8sruntime.Object, error)
	watch func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error)
	get   func(ctx context.Context, ns, name string) (k8sruntime.Object, error)
	// kind is the Go type of the objects the client decodes.
	kind string
}

type resourceCase struct {
	gvr     schema.GroupVersionResource
	server  func(*Server) serverSide
	clients func(testing.TB, *Server) []clientSide
	// badField is a field selector the API server rejects for the resource,
	// with its message.
	badField, badFieldMsg string
}

// typedIface is what the typed clientset offers for one resource.
type typedIface[L, O any] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (O, error)
}

func configMapsOf(cs *kubernetes.Clientset, ns string) typedIface[*corev1.ConfigMapList, *corev1.ConfigMap] {
	return cs.CoreV1().ConfigMaps(ns)
}

func deploymentsOf(cs *kubernetes.Clientset, ns string) typedIface[*appsv1.DeploymentList, *appsv1.Deployment] {
	return cs.AppsV1().Deployments(ns)
}

func typedClients[L k8sruntime.Object, O k8sruntime.Object](t testing.TB, s *Server, kind string,
	iface func(cs *kubernetes.Clientset, ns string) typedIface[L, O]) []clientSide {
	var out []clientSide
	for _, mt := range mediaTypes {
		cs := clientFor(t, s, mt.mediaType)
		out = append(out, clientSide{
			name: "clientset/" + mt.name,
			kind: kind,
			list: func(ctx context.Context, ns string, opts metav1.ListOptions) (k8sruntime.Object, error) {
				return iface(cs, ns).List(ctx, opts)
			},
			watch: func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
				return iface(cs, ns).Watch(ctx, opts)
			},
			get: func(ctx context.Context, ns, name string) (k8sruntime.Object, error) {
				return iface(cs, ns).Get(ctx, name, metav1.GetOptions{})
			},
		})
	}
	return out
}

func dynamicClient(t testing.TB, s *Server, gvr schema.GroupVersionResource) clientSide {
	dc, err := dynamic.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return clientSide{
		name: "dynamic/json",
		kind: "*unstructured.Unstructured",
		list: func(ctx context.Context, ns string, opts metav1.ListOptions) (k8sruntime.Object, error) {
			return dc.Resource(gvr).Namespace(ns).List(ctx, opts)
		},
		watch: func(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
			return dc.Resource(gvr).Namespace(ns).Watch(ctx, opts)
		},
		get: func(ctx context.Context, ns, name string) (k8sruntime.Object, error) {
			return dc.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		},
	}
}

var notKnownField = `"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"`

// resourceCases are the served resources other than pods (which have their
// own tests), each through every client that reaches it.
var resourceCases = []resourceCase{
	{
		gvr:    ConfigMapsResource,
		server: func(s *Server) serverSide { return drive(s.ConfigMaps(), NewConfigMap) },
		clients: func(t testing.TB, s *Server) []clientSide {
			return append(typedClients(t, s, "*v1.ConfigMap", configMapsOf), dynamicClient(t, s, ConfigMapsResource))
		},
		badField: "spec.replicas=1", badFieldMsg: notKnownField,
	},
	{
		gvr:    DeploymentsResource,
		server: func(s *Server) serverSide { return drive(s.Deployments(), NewDeployment) },
		clients: func(t testing.TB, s *Server) []clientSide {
			return append(typedClients(t, s, "*v1.Deployment", deploymentsOf), dynamicClient(t, s, DeploymentsResource))
		},
		badField: "spec.replicas=1", badFieldMsg: notKnownField,
	},
	{
		gvr:    WidgetsResource,
		server: func(s *Server) serverSide { return drive(s.Widgets(), NewWidget) },
		clients: func(t testing.TB, s *Server) []clientSide {
			return []clientSide{dynamicClient(t, s, WidgetsResource)}
		},
		badField: "spec.size=1", badFieldMsg: "field label not supported: spec.size",
	},
}

// listed returns namespace/name → resourceVersion of a list's items, and
// fails if an item is not of kind.
func listed(t testing.TB, list k8sruntime.Object, kind string) map[string]string {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range items {
		if got := fmt.Sprintf("%T", it); got != kind {
			t.Fatalf("list item is %s, want %s", got, kind)
		}
		m, err := meta.Accessor(it)
		if err != nil {
			t.Fatal(err)
		}
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

func sameMap(a, b map[string]string) (bool, string) {
	for k, v := range a {
		if b[k] != v {
			return false, fmt.Sprintf("%s: %q vs %q (%d vs %d entries)", k, v, b[k], len(a), len(b))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return false, fmt.Sprintf("%s only in the second (%d vs %d entries)", k, len(a), len(b))
		}
	}
	return true, ""
}

func listRV(t testing.TB, list k8sruntime.Object) (rv, cont string, remaining *int64) {
	t.Helper()
	lm, err := meta.ListAccessor(list)
	if err != nil {
		t.Fatal(err)
	}
	return lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
}

// TestResourcesListGetSelectors lists, pages, selects and gets every
// resource through every client and compares with the store.
func TestResourcesListGetSelectors(t *testing.T) {
	ctx := context.Background()
	for _, rc := range resourceCases {
		s := startServer(t, Config{})
		srv := rc.server(s)
		if err := srv.load(60, 3); err != nil {
			t.Fatal(err)
		}
		// Objects of the other resources share the store and must not leak in.
		fill(t, s, 30, 3)
		for _, c := range rc.clients(t, s) {
			t.Run(rc.gvr.Resource+"/"+c.name, func(t *testing.T) {
				all, err := c.list(ctx, "", metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ok, why := sameMap(listed(t, all, c.kind), srv.rvs("")); !ok {
					t.Fatalf("list: %s", why)
				}
				if rv, _, _ := listRV(t, all); rv != strconv.FormatUint(s.ResourceVersion(), 10) {
					t.Errorf("list rv %s, store at %d", rv, s.ResourceVersion())
				}
				ns, err := c.list(ctx, "ns-1", metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ok, why := sameMap(listed(t, ns, c.kind), srv.rvs("ns-1")); !ok {
					t.Fatalf("namespaced list: %s", why)
				}

				first, err := c.list(ctx, "", metav1.ListOptions{Limit: 25})
				if err != nil {
					t.Fatal(err)
				}
				if _, cont, rem := listRV(t, first); cont == "" || rem == nil || *rem != 35 {
					t.Errorf("first page: continue %q remaining %v; want a token and 35", cont, rem)
				}
				p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
					return c.list(ctx, "", opts)
				})
				p.PageSize = 7
				paged, _, err := p.List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ok, why := sameMap(listed(t, paged, c.kind), srv.rvs("")); !ok {
					t.Fatalf("paged list: %s", why)
				}

				byName, err := c.list(ctx, "", metav1.ListOptions{FieldSelector: "metadata.name=obj-00007"})
				if err != nil {
					t.Fatal(err)
				}
				byNS, err := c.list(ctx, "", metav1.ListOptions{FieldSelector: "metadata.namespace=ns-2,metadata.name!=obj-00002"})
				if err != nil {
					t.Fatal(err)
				}
				if got := listed(t, byName, c.kind); len(got) != 1 || got["ns-1/obj-00007"] == "" {
					t.Errorf("metadata.name selector: %v", got)
				}
				want := srv.rvs("ns-2")
				delete(want, "ns-2/obj-00002")
				if ok, why := sameMap(listed(t, byNS, c.kind), want); !ok {
					t.Errorf("metadata.namespace selector: %s", why)
				}
				if _, err := srv.touch("ns-0", "obj-00003", "yes"); err != nil {
					t.Fatal(err)
				}
				byLabel, err := c.list(ctx, "", metav1.ListOptions{LabelSelector: "touched=yes"})
				if err != nil {
					t.Fatal(err)
				}
				if got := listed(t, byLabel, c.kind); len(got) != 1 || got["ns-0/obj-00003"] == "" {
					t.Errorf("label selector: %v", got)
				}
				_, err = c.list(ctx, "", metav1.ListOptions{FieldSelector: rc.badField})
				if !apierrors.IsBadRequest(err) || apierrors.ReasonForError(err) != metav1.StatusReasonBadRequest ||
					err.Error() != rc.badFieldMsg {
					t.Errorf("unsupported field selector: %v; want 400 %q", err, rc.badFieldMsg)
				}

				obj, err := c.get(ctx, "ns-2", "obj-00005")
				if err != nil {
					t.Fatal(err)
				}
				if m, _ := meta.Accessor(obj); fmt.Sprintf("%T", obj) != c.kind || m.GetName() != "obj-00005" ||
					m.GetResourceVersion() != srv.rvs("ns-2")["ns-2/obj-00005"] {
					t.Errorf("get: %T %s", obj, m.GetName())
				}
				if _, err := c.get(ctx, "ns-2", "nope"); !apierrors.IsNotFound(err) {
					t.Errorf("get missing: %v", err)
				}
			})
		}
	}
}

// nextNonBookmark returns the next event of w that is not a BOOKMARK.
func nextNonBookmark(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		ev, ok := nextEvent(t, w)
		if !ok {
			t.Fatal("watch closed")
		}
		if ev.Type != watch.Bookmark {
			return ev
		}
	}
}

func eventKey(t *testing.T, ev watch.Event) (key, rv string) {
	t.Helper()
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		t.Fatalf("%s event object %T: %v", ev.Type, ev.Object, err)
	}
	return m.GetNamespace() + "/" + m.GetName(), m.GetResourceVersion()
}

// TestResourcesWatch: live events, WatchList's initial events and
// bookmark, and 410 Expired, for every resource through every client.
func TestResourcesWatch(t *testing.T) {
	ctx := context.Background()
	for _, rc := range resourceCases {
		s := startServer(t, Config{BookmarkInterval: -1, ResourceVersionWait: 10 * time.Millisecond})
		srv := rc.server(s)
		if err := srv.load(30, 3); err != nil {
			t.Fatal(err)
		}
		for i, c := range rc.clients(t, s) {
			t.Run(rc.gvr.Resource+"/"+c.name, func(t *testing.T) {
				from := strconv.FormatUint(s.ResourceVersion(), 10)
				w, err := c.watch(ctx, "", metav1.ListOptions{ResourceVersion: from})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				name := fmt.Sprintf("new-%d", i)
				// A pod write between them: other resources' events are not delivered.
				if _, err := s.Create(NewPod("ns-0", name, 1, PodOptions{})); err != nil {
					t.Fatal(err)
				}
				if err := srv.create("ns-0", name, 99); err != nil {
					t.Fatal(err)
				}
				rv, err := srv.touch("ns-0", name, "1")
				if err != nil {
					t.Fatal(err)
				}
				if err := srv.remove("ns-0", name); err != nil {
					t.Fatal(err)
				}
				deletedRV := strconv.FormatUint(s.ResourceVersion(), 10)
				for _, want := range []struct {
					typ watch.EventType
					rv  string
				}{{watch.Added, ""}, {watch.Modified, strconv.FormatUint(rv, 10)}, {watch.Deleted, deletedRV}} {
					ev := nextNonBookmark(t, w)
					key, evRV := eventKey(t, ev)
					if ev.Type != want.typ || key != "ns-0/"+name || (want.rv != "" && evRV != want.rv) ||
						fmt.Sprintf("%T", ev.Object) != c.kind {
						t.Fatalf("got %s %T %s@%s; want %s %s ns-0/%s@%s", ev.Type, ev.Object, key, evRV, want.typ, c.kind, name, want.rv)
					}
				}

				send := true
				wl, err := c.watch(ctx, "ns-1", metav1.ListOptions{SendInitialEvents: &send,
					ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
				if err != nil {
					t.Fatal(err)
				}
				defer wl.Stop()
				want := srv.rvs("ns-1")
				got := map[string]string{}
				for range want {
					ev, _ := nextEvent(t, wl)
					if ev.Type != watch.Added {
						t.Fatalf("initial event %s", ev.Type)
					}
					k, rv := eventKey(t, ev)
					got[k] = rv
				}
				if ok, why := sameMap(got, want); !ok {
					t.Fatalf("initial events: %s", why)
				}
				ev, _ := nextEvent(t, wl)
				m, err := meta.Accessor(ev.Object)
				if err != nil || ev.Type != watch.Bookmark || fmt.Sprintf("%T", ev.Object) != c.kind ||
					m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" ||
					m.GetResourceVersion() != strconv.FormatUint(s.ResourceVersion(), 10) {
					t.Fatalf("got %s %T; want the initial-events-end bookmark", ev.Type, ev.Object)
				}

				s.Compact(s.ResourceVersion())
				old, err := c.watch(ctx, "", metav1.ListOptions{ResourceVersion: from})
				if err != nil {
					t.Fatal(err)
				}
				evs := drainUntilClosed(t, old)
				if len(evs) != 1 || evs[0].Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(evs[0].Object)) {
					t.Fatalf("watch from a compacted version: %v; want one 410 ERROR", evs)
				}
			})
		}
	}
}

// TestCustomResourceNegotiation: a custom resource is served as JSON even
// to a client preferring protobuf, and a client accepting only protobuf
// gets 406, as from the API server; its objects keep their kind.
func TestCustomResourceNegotiation(t *testing.T) {
	s := startServer(t, Config{})
	if _, err := s.Widgets().Create(NewWidget("ns", "w", 1)); err != nil {
		t.Fatal(err)
	}
	checkHTTP(t, s, []httpCase{
		{"/apis/example.shardinformer.io/v1/widgets", "application/vnd.kubernetes.protobuf, application/json", ContentTypeJSON, 200},
		{"/apis/example.shardinformer.io/v1/namespaces/ns/widgets/w", "application/vnd.kubernetes.protobuf,*/*", ContentTypeJSON, 200},
		{"/apis/example.shardinformer.io/v1/widgets?watch=1&timeoutSeconds=1", "application/vnd.kubernetes.protobuf;stream=watch, application/json", ContentTypeJSON, 200},
		// The Status of the 406 is negotiated without the restriction.
		{"/apis/example.shardinformer.io/v1/widgets", "application/vnd.kubernetes.protobuf", ContentTypeProtobuf, 406},
		{"/apis/example.shardinformer.io/v1/widgets", "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1", ContentTypeJSON, 406},
		{"/apis/example.shardinformer.io/v1/widgets", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", ContentTypeProtobuf, 200},
		{"/apis/example.shardinformer.io/v2/widgets", "", ContentTypeJSON, 404},
		{"/apis/apps/v1/namespaces/ns/deployments", "application/vnd.kubernetes.protobuf", ContentTypeProtobuf, 200},
		{"/apis/apps/v1/namespaces/ns/deployments", "application/*", ContentTypeJSON, 406}, // go-restful's check
		{"/apis/example.shardinformer.io/v1/widgets", "application/*", ContentTypeJSON, 200},
	})
	u, ok := s.Widgets().Get("ns", "w")
	if !ok || u.GroupVersionKind() != WidgetKind {
		t.Errorf("stored widget kind %v", u.GroupVersionKind())
	}
	bad := NewWidget("ns", "x", 2)
	bad.SetKind("Gadget")
	if _, err := s.Widgets().Create(bad); !apierrors.IsBadRequest(err) {
		t.Errorf("create of another kind: %v; want 400", err)
	}
	plain := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "y", "namespace": "ns"}}}
	if got, err := s.Widgets().Create(plain); err != nil || got.GroupVersionKind() != WidgetKind {
		t.Errorf("create without kind: %v, kind %v", err, got)
	}
}

func rawRequest(t testing.TB, method, url, accept string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestDiscoveryEveryGroup: client-go's discovery client and a REST mapper
// built on it find every served resource in its group, version and scope.
func TestDiscoveryEveryGroup(t *testing.T) {
	s := startServer(t, Config{})
	dc, err := discovery.NewDiscoveryClientForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups {
		names = append(names, g.Name+"="+g.PreferredVersion.GroupVersion)
	}
	if want := []string{"=v1", "apps=apps/v1", "example.shardinformer.io=example.shardinformer.io/v1",
		"coordination.k8s.io=coordination.k8s.io/v1"}; !slices.Equal(names, want) {
		t.Errorf("groups %v, want %v", names, want)
	}
	served := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			served[l.GroupVersion+"/"+r.Name] = r.Namespaced && slices.Equal(r.Verbs, []string{"get", "list", "watch"})
			if r.Name == "leases" {
				served[l.GroupVersion+"/"+r.Name] = r.Namespaced &&
					slices.Equal(r.Verbs, []string{"create", "delete", "get", "list", "update", "watch"})
			}
		}
	}
	for _, gvr := range []schema.GroupVersionResource{PodsResource, ConfigMapsResource, DeploymentsResource, WidgetsResource, LeasesResource} {
		if !served[gvr.GroupVersion().String()+"/"+gvr.Resource] {
			t.Errorf("%s not discovered as a namespaced resource with its verbs: %v", gvr, served)
		}
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	m, err := mapper.RESTMapping(WidgetKind.GroupKind(), "v1")
	if err != nil || m.Resource != WidgetsResource || m.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("Widget maps to %+v (%v)", m, err)
	}
	expander := restmapper.NewShortcutExpander(mapper, memory.NewMemCacheClient(dc), nil)
	if gvk, err := expander.KindFor(schema.GroupVersionResource{Resource: "deploy"}); err != nil || gvk.Kind != "Deployment" || gvk.Group != "apps" {
		t.Errorf("short name deploy: %v %v", gvk, err)
	}
	for path, code := range map[string]int{"/apis/apps": 200, "/apis/apps/v1": 200, "/apis/nope": 404, "/apis/apps/v2": 404, "/api/v2": 404} {
		if resp := rawRequest(t, http.MethodGet, s.URL()+path, ""); resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}
}

// TestNegotiateViews: which content type and view an Accept header gets,
// per kind of resource, as the API server's negotiation decides.
func TestNegotiateViews(t *testing.T) {
	reg := newResourceSet()
	for _, tc := range []struct {
		accept string
		custom bool
		ok     bool
		ct     contentType
		meta   string // "" whole objects, else the meta.k8s.io version
		as     string
	}{
		{"", false, true, ctJSON, "", ""},
		{"", true, true, ctJSON, "", ""},
		{"application/vnd.kubernetes.protobuf", true, false, 0, "", ""},
		{"application/vnd.kubernetes.protobuf, application/json", true, true, ctJSON, "", ""},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", true, true, ctProtobuf, "v1", asPartial},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", false, true, ctJSON, "v1beta1", asPartialList},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v2, application/vnd.kubernetes.protobuf", false, true, ctProtobuf, "", ""},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io", false, false, 0, "", ""},
		{"application/json;as=PartialObjectMetadataList;v=v1", false, false, 0, "", ""},
		{"application/json;as=Table;g=meta.k8s.io;v=v1", false, false, 0, "", ""},
		{"application/json;stream=watch", false, true, ctJSON, "", ""},
		{"application/json;stream=other", false, false, 0, "", ""},
		{"application/json;sv=v1", false, true, ctJSON, "", ""},
		{"application/json;sv=v2", false, false, 0, "", ""},
		{"application/yaml, application/vnd.kubernetes.protobuf;q=0.5", false, true, ctProtobuf, "", ""},
		{"*/*;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", true, true, ctJSON, "v1", asPartialList},
		{"Application/JSON", false, false, 0, "", ""},
	} {
		res := reg.pods
		if tc.custom {
			res = reg.widgets
		}
		fm, ok := negotiate(tc.accept, res)
		if ok != tc.ok {
			t.Errorf("%q (custom %v): ok %v", tc.accept, tc.custom, ok)
			continue
		}
		if !ok {
			continue
		}
		wantView := res.full
		if tc.meta != "" {
			wantView = metaViews[tc.meta]
		}
		if fm.ct != tc.ct || fm.view != wantView || fm.convert != tc.as {
			t.Errorf("%q (custom %v): %s meta=%v as %q", tc.accept, tc.custom, fm.ct.mediaType(), fm.view.meta, fm.convert)
		}
	}
}
