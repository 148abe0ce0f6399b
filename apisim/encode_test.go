package apisim

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func withTypeMeta(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	return p
}

// TestWireFormatMatchesAPIMachinery checks that the hand-framed watch
// events, objects and lists are byte for byte what apimachinery's
// serializers produce.
func TestWireFormatMatchesAPIMachinery(t *testing.T) {
	pods := newResourceSet().pods
	pod := NewPod("default", "web-1", 42, PodOptions{ManagedFields: true})
	pod.ResourceVersion = "12345"
	for _, tc := range []struct {
		name string
		ct   contentType
	}{{"json", ctJSON}, {"protobuf", ctProtobuf}} {
		t.Run("contentType="+tc.name, func(t *testing.T) {
			body, err := pods.codec.encode(pod, tc.ct)
			if err != nil {
				t.Fatal(err)
			}

			var got bytes.Buffer
			fw := &frameWriter{ct: tc.ct, v: pods.full, w: &got}
			if err := fw.writeEvent("MODIFIED", body); err != nil {
				t.Fatal(err)
			}
			want := referenceEvent(t, tc.ct.mediaType(), "MODIFIED", withTypeMeta(pod))
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("watch event differs:\n got %q\nwant %q", trim(got.Bytes()), trim(want))
			}

			got.Reset()
			bm := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}}
			bmBody, err := bookmarkBody(pods, pods.full, tc.ct, 7, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.writeEvent("BOOKMARK", bmBody); err != nil {
				t.Fatal(err)
			}
			if want := referenceEvent(t, tc.ct.mediaType(), "BOOKMARK", bm); !bytes.Equal(got.Bytes(), want) {
				t.Errorf("raw event differs:\n got %q\nwant %q", got.Bytes(), want)
			}

			got.Reset()
			if err := fw.writeObject(body); err != nil {
				t.Fatal(err)
			}
			wantObj := encodeObject(withTypeMeta(pod), tc.ct)
			if !bytes.Equal(bytes.TrimSuffix(got.Bytes(), []byte("\n")), wantObj) {
				t.Errorf("object differs")
			}

			// A list: decoded by client-go's decoder it equals the input, and
			// in protobuf it is byte-identical to the serializer's PodList.
			list := []*corev1.Pod{pod, NewPod("default", "web-2", 43, PodOptions{}), NewPod("kube-system", "dns", 44, PodOptions{})}
			items := make([]*object, len(list))
			for i, p := range list {
				items[i] = newObject(pods, p.DeepCopy(), uint64(100+i))
			}
			remaining := int64(5)
			meta := metav1.ListMeta{ResourceVersion: "999", Continue: "tok", RemainingItemCount: &remaining}
			got.Reset()
			for _, o := range items {
				o.encoded(encoding(tc.ct))
			}
			if err := fw.writeList(meta, items, func(i int) []byte { return items[i].encoded(encoding(tc.ct)) }); err != nil {
				t.Fatal(err)
			}
			ref := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: meta}
			for _, o := range items {
				ref.Items = append(ref.Items, *o.decoded().(*corev1.Pod))
			}
			if tc.ct == ctProtobuf {
				if want := encodeObject(ref, tc.ct); !bytes.Equal(got.Bytes(), want) {
					t.Errorf("protobuf list differs from the serializer's")
				}
			}
			dec := scheme.Codecs.UniversalDeserializer()
			obj, _, err := dec.Decode(got.Bytes(), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			decoded := obj.(*corev1.PodList)
			decoded.TypeMeta = ref.TypeMeta
			if !apiequality.Semantic.DeepEqual(decoded, ref) {
				t.Errorf("decoded list differs from input")
			}
		})
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
