package wire

// Reference encoders and decoders for the tests: client-go's own serializers,
// decoders and StreamWatcher, built the way rest.Request builds them.

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/klog/v2"
)

var formats = []format{formatProtobuf, formatJSON, formatCBOR}

func (f format) String() string {
	return [...]string{formatJSON: "json", formatProtobuf: "protobuf", formatCBOR: "cbor"}[f]
}

func (f format) contentType() ContentType {
	return [...]ContentType{formatJSON: JSON, formatProtobuf: Protobuf, formatCBOR: CBOR}[f]
}

// testCodecs are client-go's codecs with CBOR, as a typed clientset has them
// with client-go's ClientsAllowCBOR gate.
var testCodecs = codecFactory(scheme.Scheme)

// testLW returns a ListerWatcher for res whose client is never used.
func testLW(t testing.TB, res Resource, opts ...Option) *ListerWatcher {
	t.Helper()
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	lw, err := NewForConfig(cfg, res, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lw
}

func serializerInfo(t testing.TB, f format) runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(testCodecs.SupportedMediaTypes(), f.mediaType())
	if !ok {
		t.Fatalf("no serializer for %s", f.mediaType())
	}
	return info
}

// encodeObject encodes obj as the API server does: JSON with apiVersion and
// kind, or enveloped protobuf.
func encodeObject(t testing.TB, f format, obj runtime.Object, gv schema.GroupVersion) []byte {
	t.Helper()
	info := serializerInfo(t, f)
	b, err := runtime.Encode(testCodecs.EncoderForVersion(info.Serializer, gv), obj)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}

// encodeWatch encodes a watch stream of events as the API server does.
func encodeWatch(t testing.TB, f format, events []watch.Event, gv schema.GroupVersion) []byte {
	t.Helper()
	info := serializerInfo(t, f)
	var buf bytes.Buffer
	fw := info.StreamSerializer.Framer.NewFrameWriter(&buf)
	enc := streaming.NewEncoder(fw, info.StreamSerializer.Serializer)
	for _, ev := range events {
		objGV := gv
		if _, ok := ev.Object.(*metav1.Status); ok {
			objGV = schema.GroupVersion{Version: "v1"}
		}
		we := &metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: encodeObject(t, f, ev.Object, objGV)}}
		if err := enc.Encode(we); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// streamWatcher builds client-go's StreamWatcher over body exactly as
// rest.Request.Watch does for a typed clientset.
func streamWatcher(t testing.TB, f format, body io.Reader) watch.Interface {
	t.Helper()
	neg := runtime.NewClientNegotiator(testCodecs.WithoutConversion(), schema.GroupVersion{Version: "v1"})
	params := map[string]string{}
	if f == formatProtobuf {
		params["stream"] = "watch"
	}
	objectDecoder, streamingSerializer, framer, err := neg.StreamDecoder(f.mediaType(), params)
	if err != nil {
		t.Fatal(err)
	}
	frameReader := framer.NewFrameReader(io.NopCloser(body))
	return watch.NewStreamWatcherWithLogger(klog.Background(),
		restclientwatch.NewDecoder(streaming.NewDecoder(frameReader, streamingSerializer), objectDecoder),
		errors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding"))
}

// drain reads every event of w until it closes.
func drain(w watch.Interface) []watch.Event {
	var out []watch.Event
	for ev := range w.ResultChan() {
		out = append(out, ev)
	}
	return out
}

// wireWatch runs lw's watcher over body and returns every event.
func wireWatch(lw *ListerWatcher, body []byte) []watch.Event {
	w := lw.newWatcher(io.NopCloser(bytes.NewReader(body)))
	w.start()
	defer w.Stop()
	return drain(w)
}

// clientGoList decodes a list body as a typed clientset's List does
// (rest.Result.Into with the WithoutConversion codecs).
func clientGoList(t testing.TB, f format, body []byte, into runtime.Object) error {
	t.Helper()
	neg := runtime.NewClientNegotiator(testCodecs.WithoutConversion(), schema.GroupVersion{Version: "v1"})
	dec, err := neg.Decoder(f.mediaType(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := dec.Decode(body, nil, into)
	if err != nil || out == into {
		return err
	}
	if s, ok := out.(*metav1.Status); ok && s.Status != metav1.StatusSuccess {
		return errors.FromObject(s)
	}
	return nil
}
