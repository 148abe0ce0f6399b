package apisim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// everyResource fills a server with objects of every resource and returns
// each resource's store-side driver.
func everyResource(t testing.TB, s *Server, n int) map[schema.GroupVersionResource]serverSide {
	t.Helper()
	out := map[schema.GroupVersionResource]serverSide{
		PodsResource: drive(s.Pods(), func(ns, name string, seed int64) *corev1.Pod {
			return NewPod(ns, name, seed, PodOptions{ManagedFields: seed%2 == 0})
		}),
	}
	for _, rc := range resourceCases {
		out[rc.gvr] = rc.server(s)
	}
	for gvr, srv := range out {
		if err := srv.load(n, 3); err != nil {
			t.Fatalf("%s: %v", gvr.Resource, err)
		}
	}
	return out
}

// wantMetadata returns the PartialObjectMetadata the API server would send
// for every object of gvr in the store, by namespace/name.
func wantMetadata(s *Server, gvr schema.GroupVersionResource) map[string]metav1.ObjectMeta {
	res := s.reg.lookup(gvr.Group, gvr.Version, gvr.Resource)
	out := map[string]metav1.ObjectMeta{}
	for _, o := range s.st.list(res, "") {
		m, _ := meta.Accessor(o)
		out[o.GetNamespace()+"/"+o.GetName()] = meta.AsPartialObjectMetadata(m).ObjectMeta
	}
	return out
}

func checkMetadata(t *testing.T, what string, got []metav1.PartialObjectMetadata, want map[string]metav1.ObjectMeta) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d", what, len(got), len(want))
	}
	for _, p := range got {
		w, ok := want[p.Namespace+"/"+p.Name]
		if !ok || !apiequality.Semantic.DeepEqual(p.ObjectMeta, w) {
			t.Fatalf("%s: %s/%s metadata differs from the stored object's:\n got %+v\nwant %+v", what, p.Namespace, p.Name, p.ObjectMeta, w)
		}
	}
}

// TestMetadataClient uses client-go's metadata client (protobuf first, as it
// asks) on every resource: list, paged list, get, watch and WatchList all
// carry exactly the objects' metadata.
func TestMetadataClient(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, Config{BookmarkInterval: -1})
	servers := everyResource(t, s, 40)
	mc, err := metadata.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for gvr, srv := range servers {
		t.Run(gvr.Resource, func(t *testing.T) {
			c := mc.Resource(gvr)
			list, err := c.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkMetadata(t, "list", list.Items, wantMetadata(s, gvr))
			if list.ResourceVersion != strconv.FormatUint(s.ResourceVersion(), 10) {
				t.Errorf("list rv %s", list.ResourceVersion)
			}
			page, err := c.Namespace("ns-0").List(ctx, metav1.ListOptions{Limit: 5})
			if err != nil || len(page.Items) != 5 || page.Continue == "" || *page.RemainingItemCount != 9 {
				t.Fatalf("page: %v %+v", err, page.ListMeta)
			}
			got, err := c.Namespace("ns-2").Get(ctx, "obj-00005", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := wantMetadata(s, gvr)["ns-2/obj-00005"]; !apiequality.Semantic.DeepEqual(got.ObjectMeta, want) {
				t.Errorf("get: %+v, want %+v", got.ObjectMeta, want)
			}

			w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			rv, err := srv.touch("ns-1", "obj-00004", "meta")
			if err != nil {
				t.Fatal(err)
			}
			ev, _ := nextEvent(t, w)
			p, ok := ev.Object.(*metav1.PartialObjectMetadata)
			if !ok || ev.Type != watch.Modified || p.Labels["touched"] != "meta" || p.ResourceVersion != strconv.FormatUint(rv, 10) {
				t.Fatalf("watch event %s %T %+v", ev.Type, ev.Object, ev.Object)
			}

			send := true
			wl, err := c.Namespace("ns-0").Watch(ctx, metav1.ListOptions{SendInitialEvents: &send,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer wl.Stop()
			var initial []metav1.PartialObjectMetadata
			for range 14 {
				ev, _ := nextEvent(t, wl)
				p, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if !ok || ev.Type != watch.Added {
					t.Fatalf("initial event %s %T", ev.Type, ev.Object)
				}
				initial = append(initial, *p)
			}
			want := wantMetadata(s, gvr)
			for k := range want {
				if k[:4] != "ns-0" {
					delete(want, k)
				}
			}
			checkMetadata(t, "initial events", initial, want)
			ev, _ = nextEvent(t, wl)
			if p, ok := ev.Object.(*metav1.PartialObjectMetadata); !ok || ev.Type != watch.Bookmark ||
				p.Annotations[metav1.InitialEventsAnnotationKey] != "true" || p.Name != "" {
				t.Fatalf("got %s %T %+v; want the initial-events-end bookmark", ev.Type, ev.Object, ev.Object)
			}
		})
	}
}

// metaRef encodes a PartialObjectMetadataList (or PartialObjectMetadata)
// with apimachinery's own serializer for mediaType.
func metaRef(t *testing.T, obj k8sruntime.Object, mediaType string) []byte {
	t.Helper()
	info, ok := k8sruntime.SerializerInfoForMediaType(metainternalversionscheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatal(mediaType)
	}
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestMetadataWire checks the metadata responses on the wire: protobuf
// lists and objects byte for byte against apimachinery's serializer, JSON
// lists decoded, v1beta1, content types, and the API server's 406s for a
// transformation the object does not allow.
func TestMetadataWire(t *testing.T) {
	for _, encodedOnly := range []bool{false, true} {
		s := startServer(t, Config{EncodedOnly: encodedOnly})
		everyResource(t, s, 12)
		if encodedOnly {
			// Full protobuf encodings first: metadata is then read from them.
			rawRequest(t, http.MethodGet, s.URL()+"/api/v1/pods", ContentTypeProtobuf)
		}
		for _, gvr := range []schema.GroupVersionResource{PodsResource, ConfigMapsResource, DeploymentsResource, WidgetsResource} {
			t.Run(fmt.Sprintf("%s/encodedOnly=%v", gvr.Resource, encodedOnly), func(t *testing.T) {
				base := s.URL() + "/api/v1/"
				if gvr.Group != "" {
					base = s.URL() + "/apis/" + gvr.Group + "/v1/"
				}
				want := wantMetadata(s, gvr)
				ref := &metav1.PartialObjectMetadataList{
					TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1"},
					ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(s.ResourceVersion(), 10)},
				}
				res := s.reg.lookup(gvr.Group, gvr.Version, gvr.Resource)
				for _, o := range s.st.list(res, "") {
					ref.Items = append(ref.Items, *partialMetadata(o))
				}

				resp := rawRequest(t, http.MethodGet, base+gvr.Resource, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
				body, _ := io.ReadAll(resp.Body)
				if ct := resp.Header.Get("Content-Type"); ct != ContentTypeProtobuf || !bytes.Equal(body, metaRef(t, ref, ContentTypeProtobuf)) {
					t.Errorf("protobuf list (%s) differs from apimachinery's encoding", ct)
				}

				resp = rawRequest(t, http.MethodGet, base+gvr.Resource, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
				body, _ = io.ReadAll(resp.Body)
				var jl metav1.PartialObjectMetadataList
				if err := json.Unmarshal(body, &jl); err != nil || resp.Header.Get("Content-Type") != ContentTypeJSON ||
					jl.Kind != "PartialObjectMetadataList" || jl.APIVersion != "meta.k8s.io/v1" || jl.Items[0].Kind != "PartialObjectMetadata" {
					t.Fatalf("JSON list: %v %q %s", err, resp.Header.Get("Content-Type"), trim(body))
				}
				checkMetadata(t, "JSON list", jl.Items, want)

				for _, ct := range []string{"application/json", ContentTypeProtobuf} {
					resp = rawRequest(t, http.MethodGet, base+"namespaces/ns-1/"+gvr.Resource, ct+";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1")
					body, _ = io.ReadAll(resp.Body)
					obj, gvk, err := metainternalversionscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
					l, ok := obj.(*metav1beta1.PartialObjectMetadataList)
					if err != nil || !ok || gvk.Version != "v1beta1" || len(l.Items) != 4 {
						t.Fatalf("v1beta1 list in %s: %v %T %v", ct, err, obj, gvk)
					}
				}

				item := ref.Items[3].DeepCopy()
				item.TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
				for _, ct := range []string{"application/json", ContentTypeProtobuf} {
					resp = rawRequest(t, http.MethodGet, base+"namespaces/"+item.Namespace+"/"+gvr.Resource+"/"+item.Name,
						ct+";as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
					body, _ = io.ReadAll(resp.Body)
					if !bytes.Equal(bytes.TrimSuffix(body, newline), bytes.TrimSuffix(metaRef(t, item, ct), newline)) {
						t.Errorf("get in %s: %s\nwant %s", ct, trim(body), trim(metaRef(t, item, ct)))
					}
				}

				getAsList := metav1.Status{Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
					Message: "you requested PartialObjectMetadataList, but the requested object is not a list (*" + res.internalType + ")"}
				if res.custom {
					getAsList = metav1.Status{Code: http.StatusInternalServerError, Message: "content is not a list"}
				}
				for _, tc := range []struct {
					path, as string
					want     metav1.Status
				}{
					{gvr.Resource, "PartialObjectMetadata", metav1.Status{Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
						Message: "you requested PartialObjectMetadata, but the requested object is a list (*" + res.internalType + "List)"}},
					{"namespaces/ns-0/" + gvr.Resource + "/obj-00000", "PartialObjectMetadataList", getAsList},
				} {
					resp = rawRequest(t, http.MethodGet, base+tc.path, "application/json;as="+tc.as+";g=meta.k8s.io;v=v1")
					body, _ = io.ReadAll(resp.Body)
					var st metav1.Status
					_ = json.Unmarshal(body, &st)
					if resp.StatusCode != int(tc.want.Code) || st.Code != tc.want.Code || st.Reason != tc.want.Reason || st.Message != tc.want.Message {
						t.Errorf("%s as %s: %d %+v; want %+v", tc.path, tc.as, resp.StatusCode, st, tc.want)
					}
				}
			})
		}
	}
}

// TestInformersOnEveryResource runs client-go's informers as controllers
// build them — the typed informer factory, the dynamic informer and the
// metadata informer — on every resource, with WatchList on and off, and
// checks that each cache follows the store through writes.
func TestInformersOnEveryResource(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("watchList=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			s := startServer(t, Config{})
			servers := everyResource(t, s, 30)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			type informed struct {
				name  string
				gvr   schema.GroupVersionResource
				inf   cache.SharedIndexInformer
				isObj func(any) bool
			}
			var all []informed
			for _, rc := range resourceCases {
				for _, f := range informerFactories(t, s, rc.gvr) {
					all = append(all, informed{f.name, rc.gvr, f.inf, f.isObj})
				}
			}
			mc, err := metadata.NewForConfig(s.RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			mf := metadatainformer.NewSharedInformerFactory(mc, 0)
			for gvr := range servers {
				all = append(all, informed{"metadata", gvr, mf.ForResource(gvr).Informer(), func(o any) bool {
					_, ok := o.(*metav1.PartialObjectMetadata)
					return ok
				}})
			}
			stop := make(chan struct{})
			defer close(stop)
			for _, x := range all {
				go x.inf.RunWithContext(ctx) // goroutine: informer under test; ends with ctx.
			}
			for _, x := range all {
				if !cache.WaitForCacheSync(stop, x.inf.HasSynced) {
					t.Fatalf("%s informer on %s did not sync", x.name, x.gvr.Resource)
				}
			}
			for gvr, srv := range servers {
				for i := range 5 {
					if err := srv.create("ns-9", fmt.Sprintf("late-%d", i), int64(i)); err != nil {
						t.Fatal(err)
					}
					if _, err := srv.touch(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("obj-%05d", i), "x"); err != nil {
						t.Fatal(err)
					}
					if err := srv.remove(fmt.Sprintf("ns-%d", (i+10)%3), fmt.Sprintf("obj-%05d", i+10)); err != nil {
						t.Fatalf("%s: %v", gvr.Resource, err)
					}
				}
			}
			for _, x := range all {
				eventually(t, x.name+" informer on "+x.gvr.Resource, func() (bool, string) {
					got := map[string]string{}
					for _, o := range x.inf.GetStore().List() {
						if !x.isObj(o) {
							return false, fmt.Sprintf("cached object is %T", o)
						}
						m, _ := meta.Accessor(o)
						got[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
					}
					return sameMap(got, servers[x.gvr].rvs(""))
				})
			}
		})
	}
}

type factoryInformer struct {
	name  string
	inf   cache.SharedIndexInformer
	isObj func(any) bool
}

// informerFactories returns informers on gvr from client-go's typed factory
// (configmaps over protobuf, deployments over JSON) and dynamic factory. The
// factories are not started: the test runs the informers.
func informerFactories(t testing.TB, s *Server, gvr schema.GroupVersionResource) []factoryInformer {
	var out []factoryInformer
	switch gvr {
	case ConfigMapsResource:
		f := informers.NewSharedInformerFactory(clientFor(t, s, ContentTypeProtobuf), 0)
		out = append(out, factoryInformer{"typed/protobuf", f.Core().V1().ConfigMaps().Informer(), func(o any) bool {
			_, ok := o.(*corev1.ConfigMap)
			return ok
		}})
	case DeploymentsResource:
		f := informers.NewSharedInformerFactory(clientFor(t, s, ContentTypeJSON), 0)
		out = append(out, factoryInformer{"typed/json", f.Apps().V1().Deployments().Informer(), func(o any) bool {
			_, ok := o.(*appsv1.Deployment)
			return ok
		}})
	}
	dc, err := dynamic.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	df := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	return append(out, factoryInformer{"dynamic", df.ForResource(gvr).Informer(), func(o any) bool {
		_, ok := o.(*unstructured.Unstructured)
		return ok
	}})
}
