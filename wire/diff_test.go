package wire_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/randfill"

	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

// canned is an HTTP server answering every LIST with one body and every
// WATCH with another, in a given content type.
type canned struct {
	mu        sync.Mutex
	list      []byte
	watch     []byte
	mediaType string // of the bodies: mtJSON, mtProtobuf or mtCBOR
	status    int    // non-zero: answer every request with this code and body
	errBody   []byte // the body for status
	errCT     string
	requests  []string
	retryHint string
}

func newCanned(t testing.TB) (*canned, *rest.Config) {
	c := &canned{}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(srv.Close)
	return c, &rest.Config{Host: srv.URL, QPS: -1}
}

func (c *canned) set(list, watch []byte, mediaType string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list, c.watch, c.mediaType, c.status = list, watch, mediaType, 0
}

func (c *canned) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.requests = append(c.requests, r.URL.String())
	list, wb, mt, status, errBody, errCT := c.list, c.watch, c.mediaType, c.status, c.errBody, c.errCT
	retry := c.retryHint
	c.mu.Unlock()
	if status != 0 {
		if errCT != "" {
			w.Header().Set("Content-Type", errCT)
		}
		if retry != "" {
			w.Header().Set("Retry-After", retry)
		}
		w.WriteHeader(status)
		w.Write(errBody)
		return
	}
	isWatch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
	ct := mt
	switch {
	case isWatch && mt == mtProtobuf:
		ct += ";stream=watch"
	case isWatch && mt == mtCBOR:
		ct = "application/cbor-seq" // as kube-apiserver writes CBOR watches
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	if isWatch {
		w.Write(wb)
	} else {
		w.Write(list)
	}
}

// kindCase describes one resource type of the differential tests.
type kindCase struct {
	name     string
	gvr      schema.GroupVersionResource
	example  runtime.Object // nil: unstructured
	protobuf bool
	newObj   func(f *randfill.Filler, r *rand.Rand, i int) runtime.Object
	newList  func(items []runtime.Object) runtime.Object
	// newVersion, if set, returns an update of old: its spec, status or
	// labels changed, or nothing but its bytes' second sighting.
	newVersion func(f *randfill.Filler, r *rand.Rand, old runtime.Object) runtime.Object
	// reference list and watch through client-go's clients.
	list  func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (runtime.Object, error)
	watch func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (watch.Interface, error)
}

var widgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// widget is filled at random and converted to an unstructured custom
// resource.
type widget struct {
	Size     int64             `json:"size"`
	Ratio    float64           `json:"ratio,omitempty"`
	Title    string            `json:"title"`
	Tags     map[string]string `json:"tags,omitempty"`
	Parts    []widgetPart      `json:"parts,omitempty"`
	Enabled  bool              `json:"enabled"`
	Optional *string           `json:"optional,omitempty"`
}

type widgetPart struct {
	Name  string   `json:"name"`
	Count int32    `json:"count"`
	Notes []string `json:"notes"`
}

func managedFields(r *rand.Rand) []metav1.ManagedFieldsEntry {
	if r.Intn(3) == 0 {
		return nil
	}
	t := metav1.Unix(int64(r.Int31()), 0)
	return []metav1.ManagedFieldsEntry{{
		Manager: "kubelet", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &t,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:phase":{}}}`)},
	}, {
		Manager: "controller-" + strconv.Itoa(r.Intn(3)), Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:app":{}}}}`)}, Subresource: "status",
	}}
}

func typedMeta(f *randfill.Filler, r *rand.Rand, m *metav1.ObjectMeta, i int) {
	m.Namespace = "ns-" + strconv.Itoa(r.Intn(3))
	m.Name = "obj-" + strconv.Itoa(i)
	m.ManagedFields = managedFields(r)
}

func kindCases() []kindCase {
	return []kindCase{
		{
			name: "pods", gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, example: &corev1.Pod{}, protobuf: true,
			newObj: func(f *randfill.Filler, r *rand.Rand, i int) runtime.Object {
				p := &corev1.Pod{}
				f.Fill(p)
				p.TypeMeta = metav1.TypeMeta{}
				typedMeta(f, r, &p.ObjectMeta, i)
				return p
			},
			newVersion: func(f *randfill.Filler, r *rand.Rand, old runtime.Object) runtime.Object {
				p, fresh := old.(*corev1.Pod).DeepCopy(), &corev1.Pod{}
				f.Fill(fresh)
				switch r.Intn(4) {
				case 0:
					p.Spec = fresh.Spec
				case 1:
					p.Status = fresh.Status
				case 2:
					p.Labels, p.ResourceVersion = fresh.Labels, fresh.ResourceVersion
				}
				return p
			},
			newList: func(items []runtime.Object) runtime.Object {
				l := &corev1.PodList{}
				for _, o := range items {
					l.Items = append(l.Items, *o.(*corev1.Pod))
				}
				return l
			},
			list: func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (runtime.Object, error) {
				return clientsetFor(cfg).CoreV1().Pods("").List(ctx, opts)
			},
			watch: func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (watch.Interface, error) {
				return clientsetFor(cfg).CoreV1().Pods("").Watch(ctx, opts)
			},
		},
		{
			name: "deployments", gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, example: &appsv1.Deployment{}, protobuf: true,
			newObj: func(f *randfill.Filler, r *rand.Rand, i int) runtime.Object {
				d := &appsv1.Deployment{}
				f.Fill(d)
				d.TypeMeta = metav1.TypeMeta{}
				typedMeta(f, r, &d.ObjectMeta, i)
				return d
			},
			newList: func(items []runtime.Object) runtime.Object {
				l := &appsv1.DeploymentList{}
				for _, o := range items {
					l.Items = append(l.Items, *o.(*appsv1.Deployment))
				}
				return l
			},
			list: func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (runtime.Object, error) {
				return clientsetFor(cfg).AppsV1().Deployments("").List(ctx, opts)
			},
			watch: func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (watch.Interface, error) {
				return clientsetFor(cfg).AppsV1().Deployments("").Watch(ctx, opts)
			},
		},
		{
			name: "widgets", gvr: widgetGVR,
			newObj: func(f *randfill.Filler, r *rand.Rand, i int) runtime.Object {
				var w widget
				f.Fill(&w)
				spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&w)
				if err != nil {
					panic(err)
				}
				var m metav1.ObjectMeta
				f.Fill(&m)
				typedMeta(f, r, &m, i)
				u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
				meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m)
				if err != nil {
					panic(err)
				}
				u.Object["metadata"] = meta
				u.SetAPIVersion("example.com/v1")
				u.SetKind("Widget")
				return u
			},
			newList: func(items []runtime.Object) runtime.Object {
				l := &unstructured.UnstructuredList{Object: map[string]any{}}
				l.SetAPIVersion("example.com/v1")
				l.SetKind("WidgetList")
				for _, o := range items {
					l.Items = append(l.Items, *o.(*unstructured.Unstructured))
				}
				return l
			},
			list: func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (runtime.Object, error) {
				return dynamicFor(cfg).Resource(widgetGVR).List(ctx, opts)
			},
			watch: func(ctx context.Context, cfg *rest.Config, opts metav1.ListOptions) (watch.Interface, error) {
				return dynamicFor(cfg).Resource(widgetGVR).Watch(ctx, opts)
			},
		},
	}
}

func clientsetFor(cfg *rest.Config) *kubernetesClientset {
	cs, err := newClientset(cfg)
	if err != nil {
		panic(err)
	}
	return cs
}

func dynamicFor(cfg *rest.Config) dynamic.Interface {
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	return d
}

// Media types of the bodies the canned server serves.
const (
	mtJSON     = "application/json"
	mtProtobuf = "application/vnd.kubernetes.protobuf"
	mtCBOR     = "application/cbor"
)

// mediaType is the media type of ct's responses (protobuf for Protobuf:
// for types that have it).
func mediaType(ct wire.ContentType) string {
	return map[wire.ContentType]string{wire.Protobuf: mtProtobuf, wire.JSON: mtJSON, wire.CBOR: mtCBOR}[ct]
}

// pbOrJSON is mtProtobuf or mtJSON.
func pbOrJSON(protobuf bool) string {
	if protobuf {
		return mtProtobuf
	}
	return mtJSON
}

// codecs are client-go's with CBOR, as a server with the
// CBORServingAndStorage gate has them.
var codecs = serializer.NewCodecFactory(scheme.Scheme, serializer.WithSerializer(cbor.NewSerializerInfo))

// nondeterministic makes encodeFor and encodeEvents encode CBOR maps
// without sorting their keys, as kube-apiserver encodes watch events (typed
// objects' fields then come in struct order: a list's items after its
// kind and apiVersion).
var nondeterministic atomic.Bool

// encodeFor encodes obj (typed or unstructured) as the API server would.
func encodeFor(t testing.TB, mt string, gv schema.GroupVersion, obj runtime.Object) []byte {
	t.Helper()
	if mt == mtCBOR {
		info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
		var enc runtime.Encoder = info.Serializer
		if nondeterministic.Load() {
			enc = runtime.UseNondeterministicEncoding(info.Serializer)
		}
		if _, ok := obj.(runtime.Unstructured); !ok {
			enc = codecs.EncoderForVersion(enc, gv)
		}
		b, err := runtime.Encode(enc, obj)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if u, ok := obj.(runtime.Unstructured); ok {
		var buf bytes.Buffer
		if err := unstructured.UnstructuredJSONScheme.Encode(u.(runtime.Object), &buf); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mt)
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, gv), obj)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}

// encodeEvents encodes a watch stream.
func encodeEvents(t testing.TB, mt string, gv schema.GroupVersion, events []watch.Event) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mt)
	var buf bytes.Buffer
	var ser runtime.Encoder = info.StreamSerializer.Serializer
	if mt == mtCBOR && nondeterministic.Load() {
		ser = runtime.UseNondeterministicEncoding(info.StreamSerializer.Serializer)
	}
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), ser)
	for _, ev := range events {
		objGV := gv
		if _, ok := ev.Object.(*metav1.Status); ok {
			objGV = schema.GroupVersion{Version: "v1"}
		}
		raw := encodeFor(t, mt, objGV, ev.Object)
		if err := enc.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// clearManaged clears managedFields on every object of a list or event
// sequence, as the diet's drop does.
func clearManaged(obj runtime.Object) {
	if meta.IsListType(obj) {
		meta.EachListItem(obj, func(o runtime.Object) error { clearManaged(o); return nil })
		if ul, ok := obj.(*unstructured.UnstructuredList); ok {
			for i := range ul.Items {
				ul.Items[i].SetManagedFields(nil)
			}
		}
		return
	}
	if _, ok := obj.(*metav1.Status); ok {
		return
	}
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
}

// diffCase is one random configuration.
type diffCase struct {
	workers, window int
	diet            []wire.Option
	dietName        string
}

func randomDiffCase(r *rand.Rand) diffCase {
	c := diffCase{workers: []int{1, 2, 4, 8}[r.Intn(4)]}
	c.window = c.workers * []int{1, 2, 16}[r.Intn(3)]
	switch r.Intn(5) {
	case 1:
		c.diet, c.dietName = []wire.Option{wire.WithDropManagedFields()}, "drop"
	case 2:
		c.diet, c.dietName = []wire.Option{wire.WithDropManagedFields(), wire.WithInterning()}, "drop+intern"
	case 3:
		c.diet, c.dietName = []wire.Option{wire.WithDiet()}, "full"
	case 4:
		c.diet, c.dietName = []wire.Option{wire.WithDiet(), wire.WithSharedValues()}, "full+shared"
	}
	return c
}

// TestDifferential: for random objects of a built-in type, a second
// built-in type and an unstructured custom resource, in protobuf, JSON and
// CBOR (maps with sorted keys, and unsorted as kube-apiserver writes them),
// lists and watch streams served over HTTP decode through wire exactly as
// through client-go's typed and dynamic clients (apiequality), with the
// diet equal but for managedFields, for random workers and windows. Pod
// watches also carry updates of listed pods (spec, status or labels
// changed, or none), which the diet decodes reusing the parts that did not
// change (versions.go).
func TestDifferential(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, true) // client-go's CBOR, the reference
	for _, kc := range kindCases() {
		for _, ct := range []wire.ContentType{wire.Protobuf, wire.JSON, wire.CBOR} {
			if ct == wire.Protobuf && !kc.protobuf {
				continue
			}
			mt := mediaType(ct)
			t.Run(fmt.Sprintf("%s/%s", kc.name, ctName(ct)), func(t *testing.T) {
				ccfg := rest.CopyConfig(cfg)
				if ct != wire.JSON {
					ccfg.ContentType, ccfg.AcceptContentTypes = mt, mt
				}
				for seed := int64(0); seed < 25; seed++ {
					r := rand.New(rand.NewSource(seed))
					f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
					dc := randomDiffCase(r)
					n := r.Intn(12)
					items := make([]runtime.Object, n)
					for i := range items {
						items[i] = kc.newObj(f, r, i)
					}
					list := kc.newList(items)
					lm, _ := meta.ListAccessor(list)
					lm.SetResourceVersion(strconv.Itoa(r.Intn(1000)))
					if r.Intn(2) == 0 {
						lm.SetContinue("token-" + strconv.Itoa(r.Intn(100)))
						rem := int64(r.Intn(100))
						lm.SetRemainingItemCount(&rem)
					}
					events := make([]watch.Event, 0, 2*n+2)
					for _, o := range items {
						events = append(events, watch.Event{Type: []watch.EventType{watch.Added, watch.Modified, watch.Deleted}[r.Intn(3)], Object: o})
					}
					for _, o := range items {
						if kc.newVersion != nil && r.Intn(2) == 0 {
							events = append(events, watch.Event{Type: watch.Modified, Object: kc.newVersion(f, r, o)})
						}
					}
					if r.Intn(2) == 0 {
						bm := kc.newObj(f, r, 0)
						a, _ := meta.Accessor(bm)
						a.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
						events = append(events, watch.Event{Type: watch.Bookmark, Object: bm})
					}
					if r.Intn(3) == 0 {
						events = append(events, watch.Event{Type: watch.Error, Object: &metav1.Status{
							Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}})
					}
					nondeterministic.Store(r.Intn(2) == 0)
					srv.set(encodeFor(t, mt, kc.gvr.GroupVersion(), list), encodeEvents(t, mt, kc.gvr.GroupVersion(), events), mt)

					name := fmt.Sprintf("seed=%d/workers=%d/window=%d/diet=%s", seed, dc.workers, dc.window, dc.dietName)
					opts := append([]wire.Option{wire.WithWorkers(dc.workers), wire.WithWindow(dc.window), wire.WithContentType(ct)}, dc.diet...)
					lw, err := wire.NewForConfig(ccfg, wire.Resource{GVR: kc.gvr, Object: kc.example}, opts...)
					if err != nil {
						t.Fatal(err)
					}
					want, err := kc.list(ctx(t), ccfg, metav1.ListOptions{})
					if err != nil {
						t.Fatalf("%s: client-go list: %v", name, err)
					}
					got, err := lw.ListWithContext(ctx(t), metav1.ListOptions{})
					if err != nil {
						t.Fatalf("%s: wire list: %v", name, err)
					}
					if dc.dietName != "" {
						clearManaged(want)
					}
					mustEqual(t, name+": list", want, got)

					ww, err := kc.watch(ctx(t), ccfg, metav1.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					wantEv := drainAll(ww)
					gw, err := lw.WatchWithContext(ctx(t), metav1.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					gotEv := drainAll(gw)
					if dc.dietName != "" {
						for _, ev := range wantEv {
							clearManaged(ev.Object)
						}
					}
					if len(wantEv) != len(events) {
						t.Fatalf("%s: client-go delivered %d of %d events", name, len(wantEv), len(events))
					}
					mustEqual(t, name+": watch", wantEv, gotEv)
				}
			})
		}
	}
}

// drainAll reads every event until the watch closes.
func drainAll(w watch.Interface) []watch.Event {
	defer w.Stop()
	var out []watch.Event
	for ev := range w.ResultChan() {
		out = append(out, ev)
	}
	return out
}
