package wire_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/wire"
)

func podEvents(n int) []watch.Event {
	var evs []watch.Event
	for i := range n {
		evs = append(evs, watch.Event{Type: watch.Added, Object: apisim.NewPod("ns", "p-"+string(rune('a'+i)), int64(i), apisim.PodOptions{ManagedFields: true})})
	}
	return evs
}

func podList(n int) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for _, ev := range podEvents(n) {
		l.Items = append(l.Items, *ev.Object.(*corev1.Pod))
	}
	return l
}

// watchResult runs a watch against the canned server and summarises what
// the consumer saw: the number of events before the end, and the ERROR
// event that ended it (nil if it closed quietly).
func watchResult(t *testing.T, open func() (watch.Interface, error)) (int, *metav1.Status) {
	t.Helper()
	w, err := open()
	if err != nil {
		t.Fatal(err)
	}
	evs := drainAll(w)
	if n := len(evs); n > 0 && evs[n-1].Type == watch.Error {
		return n - 1, evs[n-1].Object.(*metav1.Status)
	}
	return len(evs), nil
}

// TestBadWatchStreams: each malformed stream ends the watch as client-go's
// StreamWatcher ends it — the same events first, then quietly or with one
// ERROR event — with no panic and no goroutine left behind.
func TestBadWatchStreams(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	pb := encodeEvents(t, mtProtobuf, corev1.SchemeGroupVersion, podEvents(3))
	js := encodeEvents(t, mtJSON, corev1.SchemeGroupVersion, podEvents(3))
	unknownKind := bytes.Replace(encodeEvents(t, mtJSON, corev1.SchemeGroupVersion, podEvents(1)), []byte(`"kind":"Pod"`), []byte(`"kind":"Gizmo"`), 1)
	gone := encodeEvents(t, mtProtobuf, corev1.SchemeGroupVersion, append(podEvents(1), watch.Event{Type: watch.Error, Object: &metav1.Status{
		Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 5 (10)"}}))
	for _, tc := range []struct {
		name      string
		stream    []byte
		protobuf  bool
		events    int
		errSubstr string // "" if the watch closes quietly
		serverErr bool   // the ERROR event is the server's Status
	}{
		{name: "truncated frame", stream: pb[:len(pb)-100], protobuf: true, events: 2},
		{name: "truncated JSON object", stream: js[:len(js)-100], events: 2},
		{name: "truncated length prefix", stream: pb[:2], protobuf: true},
		{name: "oversized frame length", stream: append(append([]byte{}, pb[:len(pb)/3*0]...), 0x07, 0xff, 0xff, 0xff, 1, 2, 3), protobuf: true, errSubstr: "larger than the maximum frame size"},
		{name: "garbage protobuf frame", stream: []byte{0, 0, 0, 2, 0x0f, 0x0f}, protobuf: true, errSubstr: "wrong wireType"},
		// gogo reports a varint cut by the frame's end as io.ErrUnexpectedEOF,
		// which StreamWatcher treats as a truncated stream: a quiet close.
		{name: "garbage protobuf frame read as truncated", stream: []byte{0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff}, protobuf: true},
		{name: "garbage JSON", stream: []byte("{\"type\":\"ADDED\",\"object\":{} }\n}}garbage"), errSubstr: "unable to decode"},
		{name: "invalid JSON after events", stream: append(bytes.Clone(js), []byte(`{"type":"ADDED","object":{"kind":"Pod",]}}`)...), events: 3, errSubstr: "invalid character"},
		{name: "unknown kind", stream: unknownKind, errSubstr: "Gizmo"},
		{name: "410 ERROR event", stream: gone, protobuf: true, events: 1, serverErr: true},
		{name: "object without metadata", stream: []byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1"}}`), events: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(nil, tc.stream, pbOrJSON(tc.protobuf))
			ccfg := rest.CopyConfig(cfg)
			ct := wire.JSON
			if tc.protobuf {
				ccfg.ContentType = "application/vnd.kubernetes.protobuf"
				ct = wire.Protobuf
			}
			for _, workers := range []int{1, 3} {
				wantN, wantErr := watchResult(t, func() (watch.Interface, error) { return kindCases()[0].watch(ctx(t), ccfg, metav1.ListOptions{}) })
				lw := newPodLW(t, ccfg, "", wire.WithContentType(ct), wire.WithWorkers(workers), wire.WithMaxFrameSize(1<<20))
				gotN, gotErr := watchResult(t, func() (watch.Interface, error) { return lw.WatchWithContext(ctx(t), metav1.ListOptions{}) })
				if gotN != tc.events {
					t.Fatalf("workers=%d: %d events before the end, want %d", workers, gotN, tc.events)
				}
				if tc.errSubstr == "" && !tc.serverErr {
					if gotErr != nil {
						t.Fatalf("workers=%d: ERROR event %q, want a quiet close", workers, gotErr.Message)
					}
				} else if gotErr == nil {
					t.Fatalf("workers=%d: closed quietly, want an ERROR event", workers)
				} else if !strings.Contains(gotErr.Message, tc.errSubstr) {
					t.Fatalf("workers=%d: ERROR %q, want it to mention %q", workers, gotErr.Message, tc.errSubstr)
				}
				if tc.serverErr && (gotErr.Code != 410 || gotErr.Reason != metav1.StatusReasonExpired) {
					t.Fatalf("server's 410 became %+v", gotErr)
				}
				// client-go's outcome, except where doc.go says wire differs:
				// client-go reads a frame up to 16 MiB before refusing it.
				if tc.name != "oversized frame length" {
					if wantN != gotN || (wantErr == nil) != (gotErr == nil) {
						t.Fatalf("workers=%d: client-go saw %d events and error %v; wire %d and %v", workers, wantN, wantErr, gotN, gotErr)
					}
				}
			}
		})
	}
}

// TestOversizedFrameAllocatesNothing: a frame claiming 128 MiB is refused
// without allocating its size.
func TestOversizedFrameAllocatesNothing(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	srv.set(nil, []byte{0x07, 0xff, 0xff, 0xff, 1}, mtProtobuf)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	lw := newPodLW(t, cfg, "", wire.WithWorkers(2))
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, st := watchResult(t, func() (watch.Interface, error) { return lw.WatchWithContext(ctx(t), metav1.ListOptions{}) })
	runtime.ReadMemStats(&m1)
	if st == nil || !strings.Contains(st.Message, "larger than the maximum frame size") {
		t.Fatalf("got %v", st)
	}
	if d := m1.TotalAlloc - m0.TotalAlloc; d > 8<<20 {
		t.Fatalf("allocated %d bytes", d)
	}
}

// TestBadLists: each malformed list body is an error (never a short or
// partial list), the same kind of error client-go's typed client returns
// where it returns one.
func TestBadLists(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	pb := encodeFor(t, mtProtobuf, corev1.SchemeGroupVersion, podList(4))
	js := encodeFor(t, mtJSON, corev1.SchemeGroupVersion, podList(4))
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "continue token expired"}
	for _, tc := range []struct {
		name     string
		body     []byte
		protobuf bool
		check    func(error) bool
		want     string
	}{
		{name: "truncated protobuf", body: pb[:len(pb)-50], protobuf: true, want: "unexpected EOF"},
		{name: "truncated JSON", body: js[:len(js)-50], want: "unexpected EOF"},
		{name: "oversized item", body: pb, protobuf: true, want: "larger than the maximum frame size"},
		{name: "garbage", body: []byte("k8s\x00\xff\xff\xff"), protobuf: true, want: "proto"},
		{name: "invalid JSON", body: bytes.Replace(js, []byte(`"items":[{`), []byte(`"items":[{,`), 1), want: "invalid character"},
		{name: "unknown kind", body: bytes.Replace(js, []byte(`"kind":"PodList"`), []byte(`"kind":"GizmoList"`), 1), want: "GizmoList"},
		{name: "Status body", body: encodeFor(t, mtJSON, schema.GroupVersion{Version: "v1"}, status), check: apierrors.IsResourceExpired},
		{name: "Status body protobuf", body: encodeFor(t, mtProtobuf, schema.GroupVersion{Version: "v1"}, status), protobuf: true, check: apierrors.IsResourceExpired},
		{name: "empty body", body: nil, want: "0-length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.set(tc.body, nil, pbOrJSON(tc.protobuf))
			ccfg := rest.CopyConfig(cfg)
			ct := wire.JSON
			if tc.protobuf {
				ccfg.ContentType = "application/vnd.kubernetes.protobuf"
				ct = wire.Protobuf
			}
			max := 1 << 20
			if tc.name == "oversized item" {
				max = 4096
			}
			for _, workers := range []int{1, 3} {
				lw := newPodLW(t, ccfg, "", wire.WithContentType(ct), wire.WithWorkers(workers), wire.WithMaxFrameSize(max))
				got, err := lw.ListWithContext(ctx(t), metav1.ListOptions{})
				if err == nil {
					t.Fatalf("workers=%d: no error, list %d items", workers, len(got.(*corev1.PodList).Items))
				}
				if tc.check != nil && !tc.check(err) || tc.want != "" && !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("workers=%d: error %v, want %q", workers, err, tc.want)
				}
				if tc.name == "oversized item" {
					continue // client-go has no item limit
				}
				_, cerr := kindCases()[0].list(ctx(t), ccfg, metav1.ListOptions{})
				if cerr == nil {
					t.Fatalf("client-go accepted what wire refused: %v", err)
				}
				if apierrors.IsResourceExpired(cerr) != apierrors.IsResourceExpired(err) {
					t.Fatalf("client-go: %v; wire: %v", cerr, err)
				}
			}
		})
	}
}

// TestAPIErrors: HTTP error responses reach the reflector as the same
// errors client-go's typed client returns (type, code, reason, message),
// for LIST and WATCH.
func TestAPIErrors(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/wire")
	srv, cfg := newCanned(t)
	statusBody := func(code int32, reason metav1.StatusReason) []byte {
		return encodeFor(t, mtJSON, schema.GroupVersion{Version: "v1"}, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: code, Reason: reason, Message: "from the server"})
	}
	for _, tc := range []struct {
		name   string
		status int
		body   []byte
		ct     string
		retry  string
	}{
		{"410 Expired", 410, statusBody(410, metav1.StatusReasonExpired), "application/json", ""},
		{"429 with Status", 429, statusBody(429, metav1.StatusReasonTooManyRequests), "application/json", "0"},
		{"500 with Status", 500, statusBody(500, metav1.StatusReasonInternalError), "application/json", ""},
		{"503 plain text", 503, []byte("upstream connect error"), "text/plain", ""},
		{"502 no body", 502, nil, "", ""},
		{"403 protobuf Status", 403, encodeFor(t, mtProtobuf, schema.GroupVersion{Version: "v1"}, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: "no"}), "application/vnd.kubernetes.protobuf", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.mu.Lock()
			srv.status, srv.errBody, srv.errCT, srv.retryHint = tc.status, tc.body, tc.ct, tc.retry
			srv.mu.Unlock()
			ccfg := rest.CopyConfig(cfg)
			ccfg.ContentType = "application/vnd.kubernetes.protobuf"
			lw := newPodLW(t, ccfg, "")
			_, werr := kindCases()[0].list(ctx(t), ccfg, metav1.ListOptions{})
			_, gerr := lw.ListWithContext(ctx(t), metav1.ListOptions{})
			sameError(t, "list", werr, gerr)
			_, werr = kindCases()[0].watch(ctx(t), ccfg, metav1.ListOptions{})
			_, gerr = lw.WatchWithContext(ctx(t), metav1.ListOptions{})
			sameError(t, "watch", werr, gerr)
		})
	}
}

func sameError(t *testing.T, what string, want, got error) {
	t.Helper()
	if want == nil || got == nil {
		t.Fatalf("%s: client-go %v, wire %v", what, want, got)
	}
	var ws, gs *apierrors.StatusError
	if errors.As(want, &ws) != errors.As(got, &gs) {
		t.Fatalf("%s: client-go %T %v, wire %T %v", what, want, want, got, got)
	}
	if ws != nil {
		mustEqual(t, what+" status", ws.ErrStatus, gs.ErrStatus)
		return
	}
	if want.Error() != got.Error() {
		t.Fatalf("%s: client-go %q, wire %q", what, want, got)
	}
}
