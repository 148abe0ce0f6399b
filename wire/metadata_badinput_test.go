package wire_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

// partialList returns the metadata of n pods as the API server lists it.
func partialList(n int) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for _, ev := range podEvents(n) {
		p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: ev.Object.(*corev1.Pod).ObjectMeta}
		l.Items = append(l.Items, *p)
	}
	return l
}

// partialEvents returns n ADDED events of pods' metadata.
func partialEvents(n int) []watch.Event {
	var evs []watch.Event
	for _, ev := range podEvents(n) {
		evs = append(evs, watch.Event{Type: watch.Added, Object: &metav1.PartialObjectMetadata{ObjectMeta: ev.Object.(*corev1.Pod).ObjectMeta}})
	}
	return evs
}

// TestMetadataBadLists: list bodies that are not a PartialObjectMetadataList
// or are malformed give what client-go's metadata client gives — the same
// list, or the same error (Status errors equal, messages equal where the
// client's decoder produced them) — never a partial list; a frame over the
// maximum is refused (the metadata client has no limit).
func TestMetadataBadLists(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pb := encodeMeta(t, mtProtobuf, metav1.SchemeGroupVersion, partialList(4))
	js := encodeMeta(t, mtJSON, metav1.SchemeGroupVersion, partialList(4))
	v1beta1 := &metav1beta1.PartialObjectMetadataList{Items: partialList(2).Items}
	failure := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "continue token expired"}
	v1 := schema.GroupVersion{Version: "v1"}
	for _, tc := range []struct {
		name     string
		body     []byte
		mt       string
		ok       bool // the metadata client decodes it
		exactMsg bool // the error message is the client's
		want     string
	}{
		// A server that ignores the transformation sends the objects: the
		// client decodes their metadata from JSON, and fails on protobuf.
		{name: "PodList JSON", body: encodeFor(t, mtJSON, corev1.SchemeGroupVersion, podList(3)), mt: mtJSON, ok: true},
		{name: "PodList protobuf", body: encodeFor(t, mtProtobuf, corev1.SchemeGroupVersion, podList(3)), mt: mtProtobuf, exactMsg: true, want: "unable to decode returned object as PartialObjectMetadataList"},
		{name: "Status JSON", body: encodeMeta(t, mtJSON, v1, failure), mt: mtJSON, exactMsg: true},
		{name: "Status protobuf", body: encodeMeta(t, mtProtobuf, v1, failure), mt: mtProtobuf, exactMsg: true},
		{name: "Success Status", body: encodeMeta(t, mtJSON, v1, &metav1.Status{Status: metav1.StatusSuccess}), mt: mtJSON, exactMsg: true, want: "unexpected object"},
		{name: "v1beta1 list", body: encodeMeta(t, mtJSON, metav1beta1.SchemeGroupVersion, v1beta1), mt: mtJSON, exactMsg: true, want: "v1beta1.PartialObjectMetadataList"},
		{name: "v1beta1 list protobuf", body: encodeMeta(t, mtProtobuf, metav1beta1.SchemeGroupVersion, v1beta1), mt: mtProtobuf, exactMsg: true, want: "v1beta1.PartialObjectMetadataList"},
		{name: "truncated protobuf", body: pb[:len(pb)-50], mt: mtProtobuf, want: "unexpected EOF"},
		{name: "truncated JSON", body: js[:len(js)-50], mt: mtJSON, want: "unexpected EOF"},
		{name: "invalid JSON item", body: bytes.Replace(js, []byte(`"items":[{`), []byte(`"items":[{,`), 1), mt: mtJSON, want: "invalid character"},
		{name: "CBOR-like body", body: append([]byte{0xd9, 0xd9, 0xf7}, js...), mt: mtJSON, want: "invalid character"},
		{name: "garbage protobuf", body: []byte("k8s\x00\xff\xff\xff"), mt: mtProtobuf, want: "proto"},
		{name: "empty body", body: nil, mt: mtJSON, want: "0-length"},
		{name: "oversized item", body: pb, mt: mtProtobuf, ok: true, want: "larger than the maximum frame size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(tc.body, nil, tc.mt)
			want, werr := mc.Resource(podsGVR).List(ctx(t), metav1.ListOptions{})
			if (werr == nil) != tc.ok {
				t.Fatalf("the metadata client: %v, %v", want, werr)
			}
			for _, workers := range []int{1, 3} {
				for _, viaClient := range []bool{false, true} {
					max := 1 << 20
					if tc.name == "oversized item" {
						max = 512
					}
					ct := wire.JSON
					if tc.mt == mtProtobuf {
						ct = wire.Protobuf
					}
					lw := newMetaLW(t, cfg, podsGVR, "", viaClient, wire.WithWorkers(workers), wire.WithContentType(ct), wire.WithMaxFrameSize(max))
					got, gerr := lw.ListWithContext(ctx(t), metav1.ListOptions{})
					switch {
					case tc.ok && tc.want == "":
						if gerr != nil {
							t.Fatalf("workers=%d: %v", workers, gerr)
						}
						mustEqual(t, "list", want, got)
					case gerr == nil:
						t.Fatalf("workers=%d: no error, list %#v", workers, got)
					case tc.want != "" && !strings.Contains(gerr.Error(), tc.want):
						t.Fatalf("workers=%d: error %v, want %q", workers, gerr, tc.want)
					case tc.exactMsg:
						sameError(t, "list", werr, gerr)
					case apierrors.IsResourceExpired(werr) != apierrors.IsResourceExpired(gerr):
						t.Fatalf("the metadata client: %v; wire: %v", werr, gerr)
					}
				}
			}
		})
	}
}

// TestMetadataBadWatchStreams: watch events whose object is not a
// PartialObjectMetadata, and malformed streams, end as with the metadata
// client — the same events, then the same ERROR event or a quiet close;
// a frame over the maximum ends the watch with an ERROR event.
func TestMetadataBadWatchStreams(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pb := encodeMetaEvents(t, mtProtobuf, partialEvents(3))
	js := encodeMetaEvents(t, mtJSON, partialEvents(3))
	pod := apisim.NewPod("ns", "p", 1, apisim.PodOptions{})
	withPod := func(mt string) []byte {
		return append(encodeMetaEvents(t, mt, partialEvents(1)),
			encodeEvents(t, mt, corev1.SchemeGroupVersion, []watch.Event{{Type: watch.Added, Object: pod}})...)
	}
	v1beta1 := encodeMetaEvents(t, mtJSON, nil)
	{
		p := partialEvents(1)[0].Object
		raw := encodeMeta(t, mtJSON, metav1beta1.SchemeGroupVersion, p)
		v1beta1 = append([]byte(`{"type":"ADDED","object":`), append(raw, '}', '\n')...)
	}
	list := encodeMeta(t, mtJSON, metav1.SchemeGroupVersion, partialList(1))
	for _, tc := range []struct {
		name   string
		stream []byte
		mt     string
		events int    // before the end
		errMsg string // in the ERROR event; "" for a quiet close
		exact  bool   // the ERROR event is the metadata client's too
	}{
		{name: "a Pod's event JSON", stream: withPod(mtJSON), mt: mtJSON, events: 1, errMsg: `is registered for version`, exact: true},
		{name: "a Pod's event protobuf", stream: withPod(mtProtobuf), mt: mtProtobuf, events: 1, errMsg: `is registered for version`, exact: true},
		{name: "v1beta1 object", stream: v1beta1, mt: mtJSON, events: 1},
		{name: "a list object", stream: append([]byte(`{"type":"MODIFIED","object":`), append(list, '}')...), mt: mtJSON, events: 1},
		{name: "truncated frame", stream: pb[:len(pb)-20], mt: mtProtobuf, events: 2},
		{name: "truncated JSON", stream: js[:len(js)-20], mt: mtJSON, events: 2},
		{name: "garbage protobuf frame", stream: []byte{0, 0, 0, 2, 0x0f, 0x0f}, mt: mtProtobuf, errMsg: "wrong wireType"},
		{name: "invalid JSON after events", stream: append(bytes.Clone(js), `{"type":"ADDED","object":{"kind":"PartialObjectMetadata",]}}`...), mt: mtJSON, events: 3, errMsg: "invalid character"},
		{name: "bad event type", stream: []byte(`{"type":"BOGUS","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1"}}`), mt: mtJSON, errMsg: "invalid watch event type", exact: true},
		{name: "410 ERROR event", stream: encodeMetaEvents(t, mtProtobuf, append(partialEvents(1), watch.Event{Type: watch.Error, Object: &metav1.Status{
			Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}})), mt: mtProtobuf, events: 2},
		{name: "oversized frame", stream: pb, mt: mtProtobuf, errMsg: "larger than the maximum frame size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(nil, tc.stream, tc.mt)
			w, err := mc.Resource(podsGVR).Watch(ctx(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := drainAll(w)
			for _, workers := range []int{1, 3} {
				ct := wire.JSON
				if tc.mt == mtProtobuf {
					ct = wire.Protobuf
				}
				max := 1 << 20
				if tc.name == "oversized frame" {
					max = 256
				}
				lw := newMetaLW(t, cfg, podsGVR, "", workers == 3, wire.WithWorkers(workers), wire.WithContentType(ct), wire.WithMaxFrameSize(max))
				gw, err := lw.WatchWithContext(ctx(t), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got := drainAll(gw)
				n, st := len(got), (*metav1.Status)(nil)
				if n > 0 && got[n-1].Type == watch.Error {
					if s := got[n-1].Object.(*metav1.Status); s.Code != 410 {
						n, st = n-1, s
					}
				}
				if n != tc.events {
					t.Fatalf("workers=%d: %d events before the end, want %d: %v", workers, n, tc.events, got)
				}
				switch {
				case tc.errMsg == "" && st != nil:
					t.Fatalf("workers=%d: ERROR %q, want a quiet close", workers, st.Message)
				case tc.errMsg != "" && (st == nil || !strings.Contains(st.Message, tc.errMsg)):
					t.Fatalf("workers=%d: end %v, want an ERROR event mentioning %q", workers, st, tc.errMsg)
				}
				if tc.name == "oversized frame" {
					continue // the metadata client reads frames up to 16 MiB
				}
				want := want
				if !tc.exact && st != nil {
					// A framing error's wording is wire's own.
					if len(want) != n+1 || want[n].Type != watch.Error {
						t.Fatalf("the metadata client saw %d events; wire %d events and an ERROR", len(want), n)
					}
					want, got = want[:n], got[:n]
				}
				mustEqual(t, "events", want, got)
			}
		})
	}
}

// TestMetadataAPIErrors: HTTP error responses are the metadata client's
// errors (type, code, reason, message), for LIST and WATCH.
func TestMetadataAPIErrors(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	status := func(code int32, reason metav1.StatusReason, mt string) []byte {
		return encodeMeta(t, mt, schema.GroupVersion{Version: "v1"}, &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: "from the server"})
	}
	for _, tc := range []struct {
		name   string
		status int
		body   []byte
		ct     string
	}{
		{"410 Expired", 410, status(410, metav1.StatusReasonExpired, mtJSON), mtJSON},
		{"403 protobuf Status", 403, status(403, metav1.StatusReasonForbidden, mtProtobuf), mtProtobuf},
		{"500 with Status", 500, status(500, metav1.StatusReasonInternalError, mtJSON), mtJSON},
		{"503 plain text", 503, []byte("upstream connect error"), "text/plain"},
		{"502 no body", 502, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.mu.Lock()
			srv.status, srv.errBody, srv.errCT = tc.status, tc.body, tc.ct
			srv.mu.Unlock()
			for _, viaClient := range []bool{false, true} {
				lw := newMetaLW(t, cfg, podsGVR, "", viaClient)
				_, werr := mc.Resource(podsGVR).List(ctx(t), metav1.ListOptions{})
				_, gerr := lw.ListWithContext(ctx(t), metav1.ListOptions{})
				sameError(t, "list", werr, gerr)
				_, werr = mc.Resource(podsGVR).Watch(ctx(t), metav1.ListOptions{})
				_, gerr = lw.WatchWithContext(ctx(t), metav1.ListOptions{})
				sameError(t, "watch", werr, gerr)
			}
		})
	}
}
