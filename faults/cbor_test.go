package faults

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
)

// cborPods encodes pods and their watch events in CBOR as the API server
// does (application/cbor objects; application/cbor-seq watch streams).
var cborPods = serializer.NewCodecFactory(scheme.Scheme, serializer.WithSerializer(cbor.NewSerializerInfo))

func cborInfo(t testing.TB) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(cborPods.SupportedMediaTypes(), "application/cbor")
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no CBOR serializer with a stream serializer")
	}
	return info
}

// cborWatchUpstream is an upstream serving a CBOR watch of n ADDED pods
// (Content-Type application/cbor-seq, as kube-apiserver answers a watch
// that accepts CBOR), then holding the stream open until the client
// leaves. apisim serves no CBOR.
func cborWatchUpstream(t *testing.T, n int) *httptest.Server {
	t.Helper()
	info := cborInfo(t)
	enc := func(obj runtime.Object, s runtime.Serializer) []byte {
		var b bytes.Buffer
		if err := cborPods.EncoderForVersion(s, corev1.SchemeGroupVersion).Encode(obj, &b); err != nil {
			t.Error(err)
		}
		return b.Bytes()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" || !strings.Contains(r.Header.Get("Accept"), "application/cbor") {
			http.Error(w, "want a CBOR watch", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", "application/cbor-seq")
		w.WriteHeader(http.StatusOK)
		fw := info.StreamSerializer.Framer.NewFrameWriter(w)
		for i := range n {
			pod := apisim.NewPod("ns", fmt.Sprintf("pod-%04d", i), int64(i), apisim.PodOptions{})
			pod.ResourceVersion = fmt.Sprint(100 + i)
			ev := &metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: enc(pod, info.Serializer)}}
			if _, err := fw.Write(enc(ev, info.StreamSerializer.Serializer)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-time.After(testkit.Guard):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWatchErrorEventCBOR: on a watch whose stream is CBOR (Content-Type
// application/cbor-seq), a 410 is an ERROR event in the stream's own
// framing — a CBOR data item holding a meta/v1 WatchEvent whose object is
// the Status in CBOR — after whole events, then the end of the stream;
// client-go's watch decoder reads the pods before it and the 410 Expired
// Status from the proxy.
func TestWatchErrorEventCBOR(t *testing.T) {
	const pods = 200
	up := cborWatchUpstream(t, pods)
	seed := testkit.FaultSeed(t)
	p := newProxy(t, &rest.Config{Host: up.URL}, Config{Seed: seed, Bytes: 64 << 10, Rules: map[Kind]Rule{Gone: {P: 1, Max: 1}},
		Eligible: func(_, _, q string) bool { return strings.Contains(q, "watch=") }})
	resp := rawGet(t, p, "/api/v1/pods?watch=true", "application/cbor")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "application/cbor-seq" {
		t.Fatalf("%d %q, want a 200 CBOR sequence", resp.StatusCode, ct)
	}
	info := cborInfo(t)
	dec := restwatch.NewDecoder(streaming.NewDecoder(info.StreamSerializer.Framer.NewFrameReader(resp.Body), info.StreamSerializer.Serializer),
		cborPods.UniversalDeserializer())
	added := 0
	var last watch.EventType
	var obj runtime.Object
	for {
		typ, o, err := dec.Decode()
		if err != nil {
			t.Fatalf("after %d ADDED events: %v", added, err)
		}
		if typ != watch.Added {
			last, obj = typ, o
			break
		}
		if pod, ok := o.(*corev1.Pod); !ok || pod.Name != fmt.Sprintf("pod-%04d", added) {
			t.Fatalf("event %d: %T %v, want pod-%04d", added, o, o, added)
		}
		added++
	}
	if last != watch.Error {
		t.Fatalf("after %d ADDED events: %v %T, want an ERROR event", added, last, obj)
	}
	err := apierrors.FromObject(obj)
	if !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), injectedMessage) {
		t.Fatalf("ERROR event %v (%T), want a 410 Expired Status from the proxy", err, obj)
	}
	if added == 0 || added >= pods {
		t.Errorf("%d ADDED events before the ERROR, want some but not all of %d (offset %d)", added, pods, draw(seed, 0, p.cfg.Rules, p.cfg.Bytes).offset)
	}
	t.Logf("%d ADDED events, then the ERROR event", added)
	if _, _, err := dec.Decode(); err != io.EOF {
		t.Errorf("after the ERROR event: %v, want the end of the stream", err)
	}
	if n := p.Stats().Injected[Gone]; n != 1 {
		t.Errorf("%d 410s injected, want 1", n)
	}
}

// TestStreamInfo: the stream framings the proxy knows by Content-Type,
// CBOR's sequence included; others are passed through untouched.
func TestStreamInfo(t *testing.T) {
	for ct, want := range map[string]string{
		"application/json": "application/json", "application/json;charset=utf-8": "application/json",
		"application/vnd.kubernetes.protobuf;stream=watch": "application/vnd.kubernetes.protobuf",
		"application/cbor-seq":                             "application/cbor", "application/cbor": "application/cbor",
		"application/yaml": "", "text/plain": "", "": "",
	} {
		info, ok := streamInfo(ct)
		if got := map[bool]string{true: info.MediaType}[ok]; got != want {
			t.Errorf("streamInfo(%q) = %q, %v; want %q", ct, info.MediaType, ok, want)
		}
	}
}
