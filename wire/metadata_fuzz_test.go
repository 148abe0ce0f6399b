package wire_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"

	"github.com/shardinformer/shardinformer/wire"
)

// The metadata fuzz targets serve arbitrary bytes over HTTP as a list body
// or a watch stream, in protobuf or JSON, to client-go's metadata client
// and to wire's metadata mode, and compare what each returns.

const metaFuzzMaxFrame = 1 << 16

// metaFuzz is the server and clients of one fuzz target.
type metaFuzz struct {
	srv *canned
	mc  metadata.Interface
	lws map[[2]int]*wire.ListerWatcher // by content type, workers
}

func newMetaFuzz(f *testing.F) *metaFuzz {
	srv, cfg := newCanned(f)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		f.Fatal(err)
	}
	m := &metaFuzz{srv: srv, mc: mc, lws: map[[2]int]*wire.ListerWatcher{}}
	for _, ct := range []wire.ContentType{wire.Protobuf, wire.JSON} {
		for workers := 1; workers <= 4; workers++ {
			m.lws[[2]int{int(ct), workers}] = newMetaLW(f, cfg, podsGVR, "", workers%2 == 0,
				wire.WithContentType(ct), wire.WithWorkers(workers), wire.WithWindow(workers), wire.WithMaxFrameSize(metaFuzzMaxFrame))
		}
	}
	return m
}

// checkList compares the metadata client's and wire's list of body: if
// the client fails, wire fails; if wire succeeds, the client succeeds with
// an equal list; wire refuses what the client decodes only where doc.go
// says so.
func (m *metaFuzz) checkList(t *testing.T, ct wire.ContentType, body []byte, workers int) {
	magic := bytes.HasPrefix(body, []byte("k8s\x00"))
	if ct == wire.Protobuf && !magic || ct == wire.JSON && magic {
		return // wire reads the format the body starts with (Sniffing)
	}
	m.srv.set(body, nil, mediaType(ct))
	want, werr := m.mc.Resource(podsGVR).List(t.Context(), metav1.ListOptions{})
	got, gerr := m.lws[[2]int{int(ct), workers}].ListWithContext(t.Context(), metav1.ListOptions{})
	switch {
	case werr != nil && gerr == nil:
		t.Fatalf("the metadata client failed (%v), wire decoded %#v", werr, got)
	case gerr == nil && !apiequality.Semantic.DeepEqual(want, got):
		t.Fatalf("lists differ (-client-go +wire):\n%s", cmp.Diff(want, got))
	case werr == nil && gerr != nil && !documentedRefusal(gerr):
		t.Fatalf("wire failed (%v), the metadata client decoded %d items", gerr, len(want.Items))
	}
}

// documentedRefusal reports whether err is one of the refusals doc.go
// lists (Requests and errors).
func documentedRefusal(err error) bool {
	for _, s := range []string{"two items members", "after its items", "larger than the maximum", "repeats field"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// checkWatch compares the metadata client's and wire's watch of stream:
// the same events, and both ending quietly or both with a client ERROR
// event — but where a frame exceeds a maximum (doc.go) or a protobuf
// stream starts like JSON (Sniffing).
func (m *metaFuzz) checkWatch(t *testing.T, ct wire.ContentType, stream []byte, workers int) {
	if ct == wire.Protobuf && len(stream) > 0 && strings.IndexByte("{ \t\r\n", stream[0]) >= 0 {
		return
	}
	m.srv.set(nil, stream, mediaType(ct))
	w, err := m.mc.Resource(podsGVR).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantEv, wantErr := clientEnd(drainAll(w))
	gw, err := m.lws[[2]int{int(ct), workers}].WatchWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gotEv, gotErr := clientEnd(drainAll(gw))
	if !apiequality.Semantic.DeepEqual(wantEv, gotEv) {
		t.Fatalf("events differ (-client-go +wire):\n%s", cmp.Diff(wantEv, gotEv))
	}
	if (wantErr == "") != (gotErr == "") {
		switch {
		case wantErr == "" && ct == wire.Protobuf && frameOver(stream, metaFuzzMaxFrame):
		case strings.Contains(wantErr, "larger than maximum"), strings.Contains(gotErr, "larger than the maximum frame size"):
		default:
			t.Fatalf("end of stream differs: client-go error %q, wire error %q", wantErr, gotErr)
		}
	}
}

// clientEnd splits off the ERROR event a watch decoder reports for a
// stream it could not decode, returning its message ("" if none).
func clientEnd(evs []watch.Event) ([]watch.Event, string) {
	if n := len(evs); n > 0 && evs[n-1].Type == watch.Error {
		if s, ok := evs[n-1].Object.(*metav1.Status); ok && s.Details != nil && len(s.Details.Causes) > 0 &&
			s.Details.Causes[len(s.Details.Causes)-1].Type == "ClientWatchDecoding" {
			return evs[:n-1], s.Message
		}
	}
	return evs, ""
}

// frameOver reports whether stream, read as length-prefixed frames, meets
// a length over max.
func frameOver(stream []byte, max int) bool {
	for len(stream) >= 4 {
		n := uint64(binary.BigEndian.Uint32(stream))
		if n > uint64(max) {
			return true
		}
		if uint64(len(stream)) < 4+n {
			return false
		}
		stream = stream[4+n:]
	}
	return false
}

// FuzzMetadataList serves arbitrary bytes as a metadata-only list body.
func FuzzMetadataList(f *testing.F) {
	for _, s := range metadataListSeeds(f) {
		f.Add(s.body, s.ct, s.workers)
	}
	m := newMetaFuzz(f)
	f.Fuzz(func(t *testing.T, body []byte, ct, w uint8) {
		m.checkList(t, wire.ContentType(ct%2), body, 1+int(w%4))
	})
}

// FuzzMetadataWatch serves arbitrary bytes as a metadata-only watch stream.
func FuzzMetadataWatch(f *testing.F) {
	for _, s := range metadataWatchSeeds(f) {
		f.Add(s.body, s.ct, s.workers)
	}
	m := newMetaFuzz(f)
	f.Fuzz(func(t *testing.T, stream []byte, ct, w uint8) {
		m.checkWatch(t, wire.ContentType(ct%2), stream, 1+int(w%4))
	})
}

// metaSeed is one seed: bytes, content type (0 protobuf, 1 JSON), workers.
type metaSeed struct {
	body        []byte
	ct, workers uint8
}

func metadataListSeeds(t testing.TB) []metaSeed {
	pb := encodeMeta(t, mtProtobuf, metav1.SchemeGroupVersion, partialList(3))
	js := encodeMeta(t, mtJSON, metav1.SchemeGroupVersion, partialList(3))
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	return []metaSeed{
		{pb, 0, 1}, {pb, 0, 2}, {pb[:len(pb)-9], 0, 3}, {pb[:12], 0, 1},
		{js, 1, 1}, {js, 1, 4}, {js[:len(js)-9], 1, 2},
		{encodeMeta(t, mtProtobuf, schema.GroupVersion{Version: "v1"}, status), 0, 1},
		{encodeMeta(t, mtJSON, schema.GroupVersion{Version: "v1"}, status), 1, 1},
		{encodeFor(t, mtJSON, podGVRVersion, podList(1)), 1, 2}, // the objects, not their metadata
		{[]byte(`{"items":[{"metadata":{"name":"a"}}],"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1"}`), 1, 1},
		{[]byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","Items":[],"items":null}`), 1, 3},
		{[]byte(`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1beta1","items":[]}`), 1, 1},
	}
}

func metadataWatchSeeds(t testing.TB) []metaSeed {
	evs := append(partialEvents(2),
		watch.Event{Type: watch.Bookmark, Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
		watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}})
	pb, js := encodeMetaEvents(t, mtProtobuf, evs), encodeMetaEvents(t, mtJSON, evs)
	return []metaSeed{
		{pb, 0, 1}, {pb, 0, 3}, {pb[:len(pb)-7], 0, 2}, {pb[:3], 0, 1}, {[]byte{0, 0, 0, 3, 1, 2, 3}, 0, 2},
		{js, 1, 1}, {js, 1, 4}, {js[:len(js)-9], 1, 2},
		{[]byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}}`), 1, 1},
		{[]byte(`{"type":"MODIFIED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1","metadata":{"name":"a"}}}`), 1, 2},
		{[]byte(`{"type":"BOGUS","object":{}}`), 1, 3},
	}
}

var podGVRVersion = schema.GroupVersion{Version: "v1"}

// TestWriteMetadataFuzzCorpus writes the metadata seed corpora to
// testdata/fuzz (with WIRE_WRITE_CORPUS=1, like TestWriteFuzzCorpus).
func TestWriteMetadataFuzzCorpus(t *testing.T) {
	if os.Getenv("WIRE_WRITE_CORPUS") != "1" {
		t.Skip("set WIRE_WRITE_CORPUS=1 to write testdata/fuzz")
	}
	for name, seeds := range map[string][]metaSeed{"FuzzMetadataList": metadataListSeeds(t), "FuzzMetadataWatch": metadataWatchSeeds(t)} {
		dir := filepath.Join("testdata", "fuzz", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\nbyte(%s)\nbyte(%s)\n", strconv.Quote(string(s.body)), strconv.QuoteRune(rune(s.ct)), strconv.QuoteRune(rune(s.workers)))
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
