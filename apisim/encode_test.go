package apisim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/kubernetes/scheme"
)

// referenceEvent encodes a watch event the way the API server does: the
// object with the content type's serializer, the WatchEvent with its
// stream serializer and framer.
func referenceEvent(t *testing.T, mediaType, typ string, obj k8sruntime.Object) []byte {
	t.Helper()
	info, ok := k8sruntime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatal(mediaType)
	}
	var objBuf bytes.Buffer
	if err := info.Serializer.Encode(obj, &objBuf); err != nil {
		t.Fatal(err)
	}
	raw := bytes.TrimSuffix(objBuf.Bytes(), []byte("\n"))
	var out bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&out), info.StreamSerializer.Serializer)
	if err := enc.Encode(&metav1.WatchEvent{Type: typ, Object: k8sruntime.RawExtension{Raw: raw}}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// withTypeMeta returns a copy of obj with res's kind and apiVersion.
func withTypeMeta(res *apiResource, obj Object) Object {
	cp := res.codec.deepCopy(obj)
	cp.GetObjectKind().SetGroupVersionKind(res.gvr.GroupVersion().WithKind(res.kind))
	return cp
}

// TestWireFormatMatchesAPIMachinery checks that the hand-framed watch
// events, bookmarks, objects and lists of every built-in resource are byte
// for byte what apimachinery's serializers produce, in both encodings.
func TestWireFormatMatchesAPIMachinery(t *testing.T) {
	reg := newResourceSet()
	managed := NewPod("default", "web-1", 42, PodOptions{ManagedFields: true})
	for _, tc := range []struct {
		res  *apiResource
		objs []Object
		list k8sruntime.Object
	}{
		{reg.pods, []Object{managed, NewPod("default", "web-2", 43, PodOptions{}), NewPod("kube-system", "dns", 44, PodOptions{})}, &corev1.PodList{}},
		{reg.configMaps, []Object{NewConfigMap("a", "one", 1), NewConfigMap("b", "two", 2)}, &corev1.ConfigMapList{}},
		{reg.deployments, []Object{NewDeployment("a", "one", 1), NewDeployment("b", "two", 2)}, &appsv1.DeploymentList{}},
	} {
		for _, ct := range []contentType{ctJSON, ctProtobuf} {
			t.Run(tc.res.gvr.Resource+"/contentType="+ct.mediaType(), func(t *testing.T) {
				obj := tc.res.codec.deepCopy(tc.objs[0])
				obj.SetResourceVersion("12345")
				body, err := tc.res.codec.encode(nil, obj, ct)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				fw := &frameWriter{ct: ct, v: tc.res.full, w: &got}
				if err := fw.writeEvent("MODIFIED", body); err != nil {
					t.Fatal(err)
				}
				if want := referenceEvent(t, ct.mediaType(), "MODIFIED", withTypeMeta(tc.res, obj)); !bytes.Equal(got.Bytes(), want) {
					t.Errorf("watch event differs:\n got %q\nwant %q", trim(got.Bytes()), trim(want))
				}

				got.Reset()
				bm := tc.res.codec.empty()
				bm.SetResourceVersion("7")
				bm.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
				bmBody, err := bookmarkBody(tc.res, tc.res.full, ct, 7, true)
				if err != nil {
					t.Fatal(err)
				}
				if err := fw.writeEvent("BOOKMARK", bmBody); err != nil {
					t.Fatal(err)
				}
				if want := referenceEvent(t, ct.mediaType(), "BOOKMARK", withTypeMeta(tc.res, bm)); !bytes.Equal(got.Bytes(), want) {
					t.Errorf("bookmark differs:\n got %q\nwant %q", got.Bytes(), want)
				}

				got.Reset()
				if err := fw.writeObject(body); err != nil {
					t.Fatal(err)
				}
				if want := encodeObject(withTypeMeta(tc.res, obj), ct); !bytes.Equal(bytes.TrimSuffix(got.Bytes(), newline), want) {
					t.Errorf("object differs")
				}

				items := make([]*object, len(tc.objs))
				for i, o := range tc.objs {
					items[i] = newObject(tc.res, tc.res.codec.deepCopy(o), uint64(100+i))
					items[i].encoded(encoding(ct))
				}
				remaining := int64(5)
				lm := metav1.ListMeta{ResourceVersion: "999", Continue: "tok", RemainingItemCount: &remaining,
					ShardInfo: &metav1.ShardInfo{Selector: "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"}}
				got.Reset()
				if err := fw.writeList(lm, items, func(i int) []byte { return items[i].encoded(encoding(ct)) }); err != nil {
					t.Fatal(err)
				}
				ref := tc.list.DeepCopyObject()
				ref.GetObjectKind().SetGroupVersionKind(tc.res.gvr.GroupVersion().WithKind(tc.res.kind + "List"))
				la, _ := meta.ListAccessor(ref)
				la.SetResourceVersion(lm.ResourceVersion)
				la.SetContinue(lm.Continue)
				la.SetRemainingItemCount(lm.RemainingItemCount)
				ref.(metav1.ShardedListInterface).SetShardInfo(lm.ShardInfo)
				var objs []k8sruntime.Object
				for _, o := range items {
					objs = append(objs, o.decoded())
				}
				if err := meta.SetList(ref, objs); err != nil {
					t.Fatal(err)
				}
				var want bytes.Buffer
				if err := serializerFor(ct.mediaType()).Encode(ref, &want); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("list differs from the serializer's:\n got %q\nwant %q", trim(got.Bytes()), trim(want.Bytes()))
				}
			})
		}
	}
}

// TestCustomResourceWireFormat: a custom resource's events, objects and
// lists decode, with apimachinery's unstructured scheme, to the stored
// objects, each item with its kind and apiVersion as the API server
// writes them.
func TestCustomResourceWireFormat(t *testing.T) {
	res := newResourceSet().widgets
	items := make([]*object, 3)
	for i := range items {
		w := NewWidget("ns", fmt.Sprintf("w-%d", i), int64(i))
		if err := res.codec.normalize(w); err != nil {
			t.Fatal(err)
		}
		items[i] = newObject(res, w, uint64(10+i))
	}
	var got bytes.Buffer
	fw := &frameWriter{ct: ctJSON, v: res.full, w: &got}
	if err := fw.writeObject(items[0].encoded(encJSON)); err != nil {
		t.Fatal(err)
	}
	obj, _, err := unstructured.UnstructuredJSONScheme.Decode(got.Bytes(), nil, nil)
	if err != nil || !apiequality.Semantic.DeepEqual(obj, items[0].decoded()) {
		t.Errorf("object: %v\n got %v\nwant %v", err, obj, items[0].decoded())
	}
	got.Reset()
	if err := fw.writeList(metav1.ListMeta{ResourceVersion: "12"}, items, func(i int) []byte { return items[i].encoded(encJSON) }); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Kind, APIVersion string
		Items            []map[string]any
	}
	if err := json.Unmarshal(got.Bytes(), &raw); err != nil || raw.Kind != "WidgetList" || raw.APIVersion != "example.shardinformer.io/v1" {
		t.Fatalf("list: %v %s/%s", err, raw.APIVersion, raw.Kind)
	}
	for i, it := range raw.Items {
		if it["kind"] != "Widget" || it["apiVersion"] != "example.shardinformer.io/v1" {
			t.Errorf("item %d: %v/%v", i, it["apiVersion"], it["kind"])
		}
	}
	obj, _, err = unstructured.UnstructuredJSONScheme.Decode(got.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range obj.(*unstructured.UnstructuredList).Items {
		if !apiequality.Semantic.DeepEqual(&it, items[i].decoded()) {
			t.Errorf("item %d differs", i)
		}
	}
}

func trim(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   contentType
		ok     bool
	}{
		{"", ctJSON, true},
		{"application/json", ctJSON, true},
		{"application/json, */*", ctJSON, true},
		{"application/vnd.kubernetes.protobuf, */*", ctProtobuf, true},
		{"application/vnd.kubernetes.protobuf,application/json", ctProtobuf, true},
		{"application/vnd.kubernetes.protobuf;stream=watch", ctProtobuf, true},
		{"application/vnd.kubernetes.protobuf;q=0.5, application/json;q=0.9", ctJSON, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io, application/vnd.kubernetes.protobuf", ctProtobuf, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", ctJSON, false},
		{"text/html", ctJSON, false},
		{"application/cbor", ctJSON, false},
		{"text/html, application/*;q=0.1", ctJSON, true},
	} {
		got, ok := negotiate(tc.accept, newResourceSet().pods)
		if ok != tc.ok || (ok && got.ct != tc.want) {
			t.Errorf("negotiate(%q) = %v, %v; want %v, %v", tc.accept, got, ok, tc.want, tc.ok)
		}
	}
}
