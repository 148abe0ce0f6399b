package wire_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

// partialGVK is the kind of the objects a metadata-only list and watch
// carry.
var partialGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")

// recorded is one request a server received.
type recorded struct{ url, accept string }

// metaServer is the canned server that also records each request's URL
// and Accept header.
type metaServer struct {
	*canned
	mu   sync.Mutex
	reqs []recorded
}

func newMetaServer(t testing.TB) (*metaServer, *rest.Config) {
	s := &metaServer{canned: &canned{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, recorded{r.URL.String(), r.Header.Get("Accept")})
		s.mu.Unlock()
		s.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	return s, &rest.Config{Host: srv.URL, QPS: -1}
}

// take returns the requests recorded since the last take.
func (s *metaServer) take() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs
	s.reqs = nil
	return r
}

// metaCodecs are the metadata client's codecs (and the API server's for
// meta.k8s.io).
var metaCodecs = metainternalversionscheme.Codecs.WithoutConversion()

// encodeMeta encodes obj as the API server encodes a PartialObjectMetadata
// or PartialObjectMetadataList (or a Status, in gv "v1").
func encodeMeta(t testing.TB, mt string, gv schema.GroupVersion, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(metaCodecs.SupportedMediaTypes(), mt)
	if !ok {
		t.Fatalf("no serializer for %s", mt)
	}
	b, err := runtime.Encode(metaCodecs.EncoderForVersion(info.Serializer, gv), obj)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}

// encodeMetaEvents encodes a metadata-only watch stream; each event's object
// is encoded in its own kind's group version (Status in "v1").
func encodeMetaEvents(t testing.TB, mt string, events []watch.Event) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(metaCodecs.SupportedMediaTypes(), mt)
	var buf bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
	for _, ev := range events {
		gv := metav1.SchemeGroupVersion
		if _, ok := ev.Object.(*metav1.Status); ok {
			gv = schema.GroupVersion{Version: "v1"}
		}
		we := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: encodeMeta(t, mt, gv, ev.Object)}}
		if err := enc.Encode(we); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// randomPartial returns the metadata of a random object, as the API server
// sends it in a list (with its TypeMeta).
func randomPartial(f interface{ Fill(any) }, r *rand.Rand, i int) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: partialGVK.GroupVersion().String(), Kind: partialGVK.Kind}}
	f.Fill(&p.ObjectMeta)
	p.Namespace = "ns-" + strconv.Itoa(r.Intn(3))
	p.Name = "obj-" + strconv.Itoa(i)
	p.ManagedFields = managedFields(r)
	return p
}

// metadataClientConfig returns the config of the REST client under
// metadata.NewForConfig(cfg): what restclient.Metadata hands the factories.
func metadataRESTClient(t testing.TB, cfg *rest.Config) rest.Interface {
	t.Helper()
	c := metadata.ConfigFor(cfg)
	c.GroupVersion = &schema.GroupVersion{}
	c.APIPath = "/this-value-should-never-be-sent"
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// newMetaLW returns a metadata-only ListerWatcher of gvr in ns, through
// NewForConfig or (viaClient) New on the metadata client's REST client.
func newMetaLW(t testing.TB, cfg *rest.Config, gvr schema.GroupVersionResource, ns string, viaClient bool, opts ...wire.Option) *wire.ListerWatcher {
	t.Helper()
	res := wire.Resource{GVR: gvr, Namespace: ns, Object: &metav1.PartialObjectMetadata{}}
	var lw *wire.ListerWatcher
	var err error
	if viaClient {
		lw, err = wire.New(metadataRESTClient(t, cfg), res, opts...)
	} else {
		lw, err = wire.NewForConfig(cfg, res, opts...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return lw
}

// TestMetadataDifferential: for random metadata of a core, a grouped and a
// custom resource, in protobuf and JSON, lists (paged or not) and watch
// streams (ADDED, MODIFIED and DELETED events, bookmarks, the WatchList
// bookmark k8s.io/initial-events-end, a 410 ERROR event) served over HTTP
// decode through wire's metadata mode exactly as through client-go's
// metadata client (apiequality; with the diet equal but for
// managedFields), for random workers, windows and diets, through
// NewForConfig and through New on the metadata client's own REST client;
// and both send the same requests (URL with every list option, Accept
// header).
func TestMetadataDifferential(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newMetaServer(t)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvrs := []schema.GroupVersionResource{podsGVR, {Group: "apps", Version: "v1", Resource: "deployments"}, widgetGVR}
	for _, ct := range []wire.ContentType{wire.Protobuf, wire.JSON} {
		for _, gvr := range gvrs {
			t.Run(fmt.Sprintf("%s/%s", gvr.Resource, ctName(ct)), func(t *testing.T) {
				mt := mediaType(ct)
				for seed := int64(0); seed < 25; seed++ {
					r := rand.New(rand.NewSource(seed))
					f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
					dc := randomDiffCase(r)
					ns := []string{"", "ns-1"}[r.Intn(2)]
					n := r.Intn(12)
					list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(r.Intn(1000))}}
					if r.Intn(2) == 0 {
						list.Continue = "token-" + strconv.Itoa(r.Intn(100))
						list.RemainingItemCount = ptr.To(int64(r.Intn(100)))
					}
					var events []watch.Event
					for i := range n {
						p := randomPartial(f, r, i)
						list.Items = append(list.Items, *p)
						ev := p.DeepCopy()
						ev.TypeMeta = metav1.TypeMeta{}
						events = append(events, watch.Event{Type: []watch.EventType{watch.Added, watch.Modified, watch.Deleted}[r.Intn(3)], Object: ev})
					}
					if r.Intn(2) == 0 {
						events = append(events, watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{
							ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.Itoa(r.Intn(1000))}}})
					}
					if r.Intn(2) == 0 {
						events = append(events, watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{
							ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1000", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}})
					}
					if r.Intn(3) == 0 {
						events = append(events, watch.Event{Type: watch.Error, Object: &metav1.Status{
							Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}})
					}
					srv.set(encodeMeta(t, mt, metav1.SchemeGroupVersion, list), encodeMetaEvents(t, mt, events), mt)

					viaClient := r.Intn(2) == 0
					name := fmt.Sprintf("seed=%d/workers=%d/window=%d/diet=%s/viaClient=%v", seed, dc.workers, dc.window, dc.dietName, viaClient)
					opts := append([]wire.Option{wire.WithWorkers(dc.workers), wire.WithWindow(dc.window)}, dc.diet...)
					if ct == wire.JSON || r.Intn(2) == 0 {
						opts = append(opts, wire.WithContentType(ct)) // Protobuf is the default
					}
					lw := newMetaLW(t, cfg, gvr, ns, viaClient, opts...)
					listOpts := metav1.ListOptions{LabelSelector: "tier=web", ResourceVersion: "0"}
					if r.Intn(2) == 0 {
						listOpts = metav1.ListOptions{Limit: int64(1 + r.Intn(50)), Continue: "token-" + strconv.Itoa(r.Intn(9)), FieldSelector: "metadata.name!=x"}
					}
					if r.Intn(2) == 0 {
						listOpts.TimeoutSeconds = ptr.To(int64(1 + r.Intn(100))) // the metadata client's List sets no timeout
					}
					srv.take()
					want, err := mc.Resource(gvr).Namespace(ns).List(ctx(t), listOpts)
					if err != nil {
						t.Fatalf("%s: metadata client list: %v", name, err)
					}
					got, err := lw.ListWithContext(ctx(t), listOpts)
					if err != nil {
						t.Fatalf("%s: wire list: %v", name, err)
					}
					if dc.dietName != "" {
						clearManaged(want)
					}
					mustEqual(t, name+": list", want, got)
					sameRequests(t, name+": list", ct, srv.take())

					watchOpts := metav1.ListOptions{ResourceVersion: strconv.Itoa(r.Intn(1000)), AllowWatchBookmarks: true, TimeoutSeconds: ptr.To(int64(30 + r.Intn(100)))}
					if r.Intn(2) == 0 {
						watchOpts = metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
					}
					ww, err := mc.Resource(gvr).Namespace(ns).Watch(ctx(t), watchOpts)
					if err != nil {
						t.Fatal(err)
					}
					wantEv := drainAll(ww)
					gw, err := lw.WatchWithContext(ctx(t), watchOpts)
					if err != nil {
						t.Fatal(err)
					}
					gotEv := drainAll(gw)
					if len(wantEv) != len(events) {
						t.Fatalf("%s: the metadata client delivered %d of %d events", name, len(wantEv), len(events))
					}
					if dc.dietName != "" {
						for _, ev := range wantEv {
							clearManaged(ev.Object)
						}
					}
					mustEqual(t, name+": watch", wantEv, gotEv)
					sameRequests(t, name+": watch", ct, srv.take())
				}
			})
		}
	}
}

// sameRequests fails unless reqs are two equal requests (the metadata
// client's, then wire's); with JSON, wire's Accept header leaves protobuf
// out (TestMetadataAccept), and only the URLs must be equal.
func sameRequests(t *testing.T, what string, ct wire.ContentType, reqs []recorded) {
	t.Helper()
	if len(reqs) == 2 && ct == wire.JSON {
		reqs[1].accept = reqs[0].accept
	}
	if len(reqs) != 2 || reqs[0] != reqs[1] {
		t.Fatalf("%s: requests differ (metadata client first, then wire): %q", what, reqs)
	}
}

// TestMetadataAccept: the Accept headers are the metadata client's, JSON
// only with WithContentType(JSON); CBOR is refused.
func TestMetadataAccept(t *testing.T) {
	srv, cfg := newMetaServer(t)
	srv.set(encodeMeta(t, mtJSON, metav1.SchemeGroupVersion, &metav1.PartialObjectMetadataList{}), nil, mtJSON)
	const (
		pbList  = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
		pbWatch = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	)
	for _, tc := range []struct {
		opts        []wire.Option
		list, watch string
	}{
		{nil, pbList, pbWatch},
		{[]wire.Option{wire.WithContentType(wire.Protobuf)}, pbList, pbWatch},
		{[]wire.Option{wire.WithContentType(wire.JSON)},
			"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
			"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"},
	} {
		lw := newMetaLW(t, cfg, podsGVR, "", false, tc.opts...)
		if _, err := lw.List(metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		w, err := lw.Watch(metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		drainAll(w)
		got := srv.take()
		if len(got) != 2 || got[0].accept != tc.list || got[1].accept != tc.watch {
			t.Errorf("options %d: requests %q, want Accept %q then %q", len(tc.opts), got, tc.list, tc.watch)
		}
	}
	if _, err := wire.NewForConfig(cfg, wire.Resource{GVR: podsGVR, Object: &metav1.PartialObjectMetadata{}}, wire.WithContentType(wire.CBOR)); err == nil {
		t.Error("CBOR for metadata-only objects accepted")
	}
	lw := newMetaLW(t, cfg, podsGVR, "shop", false, wire.WithWorkers(2), wire.WithDiet())
	if got, want := lw.String(), "wire pods.v1 in shop: metadata only, protobuf, 2 workers, diet (managedFields dropped, interned, compacted, shared)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestMetadataAgainstAPISim: against apisim, which negotiates and
// transforms as the API server does, wire's metadata mode returns what
// client-go's metadata client returns — for pods (with managedFields),
// config maps and a custom resource, in protobuf and JSON, through
// NewForConfig and the metadata client's REST client, with one and three
// workers, with and without the diet: whole lists, every page of a paged
// list, a watch carrying an update, a create and a delete, and a WatchList
// stream (the initial events, then the k8s.io/initial-events-end bookmark).
func TestMetadataAgainstAPISim(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	s := startSim(t, 40, apisim.Config{BookmarkInterval: time.Hour})
	for i := range 12 {
		if _, err := s.ConfigMaps().Create(apisim.NewConfigMap(fmt.Sprintf("ns-%d", i%4), fmt.Sprint("cm-", i), int64(i))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Widgets().Create(apisim.NewWidget(fmt.Sprintf("ns-%d", i%4), fmt.Sprint("w-", i), int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	// The metadata client asks for protobuf first; the JSON reference is
	// the same client with the protobuf clause cut from its Accept header.
	clients := map[wire.ContentType]metadata.Interface{}
	for _, ct := range []wire.ContentType{wire.Protobuf, wire.JSON} {
		cfg := s.RESTConfig()
		if ct == wire.JSON {
			cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return jsonOnly{rt} }
		}
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		clients[ct] = mc
	}
	// change makes an update, a create and a delete of gvr in ns-1.
	change := func(gvr schema.GroupVersionResource, round int) {
		t.Helper()
		var err error
		name := fmt.Sprintf("new-%d", round)
		switch gvr {
		case apisim.PodsResource:
			_, err = s.Modify("ns-1", "pod-00001", func(p *corev1.Pod) { p.Labels["round"] = strconv.Itoa(round) })
			if err == nil {
				_, err = s.Create(apisim.NewPod("ns-1", name, int64(100+round), apisim.PodOptions{ManagedFields: true}))
			}
			if err == nil {
				_, err = s.Delete("ns-1", name)
			}
		case apisim.ConfigMapsResource:
			cms := s.ConfigMaps()
			_, err = cms.Modify("ns-1", "cm-1", func(c *corev1.ConfigMap) { c.Annotations = map[string]string{"round": strconv.Itoa(round)} })
			if err == nil {
				_, err = cms.Create(apisim.NewConfigMap("ns-1", name, int64(round)))
			}
			if err == nil {
				_, err = cms.Delete("ns-1", name)
			}
		default:
			ws := s.Widgets()
			_, err = ws.Modify("ns-1", "w-1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"round": strconv.Itoa(round)}) })
			if err == nil {
				_, err = ws.Create(apisim.NewWidget("ns-1", name, int64(round)))
			}
			if err == nil {
				_, err = ws.Delete("ns-1", name)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	round := 0
	for _, gvr := range []schema.GroupVersionResource{apisim.PodsResource, apisim.ConfigMapsResource, apisim.WidgetsResource} {
		for _, ct := range []wire.ContentType{wire.Protobuf, wire.JSON} {
			for _, workers := range []int{1, 3} {
				for _, diet := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/workers=%d/diet=%v", gvr.Resource, ctName(ct), workers, diet)
					t.Run(name, func(t *testing.T) {
						opts := []wire.Option{wire.WithWorkers(workers), wire.WithContentType(ct)}
						if diet {
							opts = append(opts, wire.WithDiet())
						}
						fix := func(o runtime.Object) runtime.Object {
							if diet {
								clearManaged(o)
							}
							return o
						}
						for _, ns := range []string{"", "ns-1"} {
							lw := newMetaLW(t, s.RESTConfig(), gvr, ns, workers == 3, opts...)
							mr := clients[ct].Resource(gvr).Namespace(ns)
							want, err := mr.List(ctx(t), metav1.ListOptions{})
							if err != nil {
								t.Fatal(err)
							}
							got, err := lw.ListWithContext(ctx(t), metav1.ListOptions{})
							if err != nil {
								t.Fatal(err)
							}
							if len(want.Items) == 0 {
								t.Fatal("the server lists nothing: the test would prove nothing")
							}
							mustEqual(t, "list", fix(want), got)

							pages := 0
							for opts := (metav1.ListOptions{Limit: 2}); ; pages++ {
								want, err := mr.List(ctx(t), opts)
								if err != nil {
									t.Fatal(err)
								}
								got, err := lw.ListWithContext(ctx(t), opts)
								if err != nil {
									t.Fatal(err)
								}
								mustEqual(t, fmt.Sprintf("page %d", pages), fix(want), got)
								if opts.Continue = want.Continue; opts.Continue == "" {
									break
								}
							}
							if pages == 0 {
								t.Fatal("the list had one page: paging untested")
							}

							rv := want.ResourceVersion
							ww, err := mr.Watch(ctx(t), metav1.ListOptions{ResourceVersion: rv})
							if err != nil {
								t.Fatal(err)
							}
							gw, err := lw.WatchWithContext(ctx(t), metav1.ListOptions{ResourceVersion: rv})
							if err != nil {
								t.Fatal(err)
							}
							round++
							change(gvr, round)
							wantEv, gotEv := collect(t, ww, 3), collect(t, gw, 3)
							ww.Stop()
							gw.Stop()
							for _, ev := range wantEv {
								fix(ev.Object)
							}
							mustEqual(t, "watch", wantEv, gotEv)

							wl := metav1.ListOptions{SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
							ww, err = mr.Watch(ctx(t), wl)
							if err != nil {
								t.Fatal(err)
							}
							gw, err = lw.WatchWithContext(ctx(t), wl)
							if err != nil {
								t.Fatal(err)
							}
							items, _ := mr.List(ctx(t), metav1.ListOptions{})
							wantEv, gotEv = collect(t, ww, len(items.Items)+1), collect(t, gw, len(items.Items)+1)
							ww.Stop()
							gw.Stop()
							last := gotEv[len(gotEv)-1]
							if last.Type != watch.Bookmark || last.Object.(*metav1.PartialObjectMetadata).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
								t.Fatalf("WatchList ended with %v %#v, want the initial-events-end bookmark", last.Type, last.Object)
							}
							for _, ev := range wantEv {
								fix(ev.Object)
							}
							mustEqual(t, "WatchList", wantEv, gotEv)
						}
					})
				}
			}
		}
	}
}

// jsonOnly removes the protobuf clause from a request's Accept header.
type jsonOnly struct{ rt http.RoundTripper }

func (j jsonOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	accept := r.Header.Get("Accept")
	if _, rest, ok := strings.Cut(accept, "application/vnd.kubernetes.protobuf;"); ok {
		r = r.Clone(r.Context())
		_, json, _ := strings.Cut(rest, ",")
		r.Header.Set("Accept", json)
	}
	return j.rt.RoundTrip(r)
}

// TestMetadataDiet: with the diet's drop, managedFields are cut from the
// bytes before decoding — so entries the decoder would refuse go unnoticed
// (doc.go), in protobuf and JSON, lists and watches, where without the drop
// wire and the metadata client fail alike — and interning makes the
// metadata strings repeated across objects one copy.
func TestMetadataDiet(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range []string{mtProtobuf, mtJSON} {
		ct := map[string]wire.ContentType{mtProtobuf: wire.Protobuf, mtJSON: wire.JSON}[mt]
		// Two objects whose managedFields' first entry is not decodable.
		list, stream := badManagedFields(t, mt, 2)
		srv.set(list, stream, mt)
		for _, workers := range []int{1, 3} {
			lw := newMetaLW(t, cfg, podsGVR, "", workers == 3, wire.WithWorkers(workers), wire.WithContentType(ct), wire.WithDropManagedFields())
			l, err := lw.ListWithContext(ctx(t), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("%s, workers=%d: list with the drop: %v", mt, workers, err)
			}
			if items := l.(*metav1.PartialObjectMetadataList).Items; len(items) != 2 || items[0].Name != "a-0" || items[1].ManagedFields != nil {
				t.Fatalf("%s: list with the drop: %+v", mt, items)
			}
			w, err := lw.WatchWithContext(ctx(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if evs := drainAll(w); len(evs) != 2 || evs[1].Type != watch.Added || evs[1].Object.(*metav1.PartialObjectMetadata).Name != "a-1" {
				t.Fatalf("%s: watch with the drop: %v", mt, evs)
			}

			plain := newMetaLW(t, cfg, podsGVR, "", false, wire.WithWorkers(workers), wire.WithContentType(ct))
			if _, err := plain.ListWithContext(ctx(t), metav1.ListOptions{}); err == nil {
				t.Fatalf("%s: list without the drop decoded bad managedFields", mt)
			}
			if _, err := mc.Resource(podsGVR).List(ctx(t), metav1.ListOptions{}); err == nil {
				t.Fatalf("%s: the metadata client decoded bad managedFields", mt)
			}
			w, err = plain.WatchWithContext(ctx(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if evs := drainAll(w); len(evs) != 1 || evs[0].Type != watch.Error {
				t.Fatalf("%s: watch without the drop: %v, want one ERROR event", mt, evs)
			}
		}
	}

	s := startSim(t, 8, apisim.Config{})
	for _, diet := range []bool{false, true} {
		opts := []wire.Option{wire.WithWorkers(1)}
		if diet {
			opts = append(opts, wire.WithDiet())
		}
		lw := newMetaLW(t, s.RESTConfig(), podsGVR, "ns-1", false, opts...)
		l, err := lw.ListWithContext(ctx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		items := l.(*metav1.PartialObjectMetadataList).Items
		if len(items) < 2 {
			t.Fatalf("%d pods in ns-1", len(items))
		}
		a, b := items[0], items[1]
		shared := unsafe.StringData(a.Namespace) == unsafe.StringData(b.Namespace) &&
			unsafe.StringData(a.Labels["app.kubernetes.io/managed-by"]) == unsafe.StringData(b.Labels["app.kubernetes.io/managed-by"])
		if shared != diet || (len(a.ManagedFields) == 0) != diet {
			t.Errorf("diet %v: strings shared %v, managedFields %d", diet, shared, len(a.ManagedFields))
		}
	}
}

// badManagedFields returns a PartialObjectMetadataList body and a watch
// stream, in mt, of n objects a-0… whose first managedFields entry does not
// decode: in protobuf its manager is a varint where a string belongs, in
// JSON a number.
func badManagedFields(t *testing.T, mt string, n int) (list, stream []byte) {
	t.Helper()
	l := &metav1.PartialObjectMetadataList{}
	var evs []watch.Event
	for i := range n {
		p := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("a-", i), Namespace: "ns",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "MANAGER"}}}}
		l.Items = append(l.Items, p)
		evs = append(evs, watch.Event{Type: watch.Added, Object: &p})
	}
	good := "MANAGER"
	bad := func(b []byte) []byte {
		if mt == mtJSON {
			return bytes.ReplaceAll(b, []byte(`"manager":"`+good+`"`), []byte(`"manager":7`))
		}
		// ManagedFieldsEntry's manager (field 1, bytes) becomes field 1
		// as a varint of the same length, which its decoder refuses
		// ("wrong wireType").
		entry := append([]byte{0x0a, byte(len(good))}, good...)
		broken := append([]byte{0x08}, bytes.Repeat([]byte{0xff}, len(good))...)
		broken = append(broken, 0x7f)
		if len(broken) != len(entry) {
			t.Fatal("broken entry of another length")
		}
		return bytes.ReplaceAll(b, entry, broken)
	}
	list, stream = bad(encodeMeta(t, mt, metav1.SchemeGroupVersion, l)), bad(encodeMetaEvents(t, mt, evs))
	if bytes.Contains(list, []byte(good)) || bytes.Contains(stream, []byte(good)) {
		t.Fatal("the managedFields were not broken")
	}
	return list, stream
}
