package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"

	"github.com/google/go-cmp/cmp"
	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/wire/internal/cborwire"
	"github.com/shardinformer/shardinformer/wire/internal/jsonwire"
	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

var podGV = schema.GroupVersion{Version: "v1"}

// seedPods are small realistic pods for seed corpora.
func seedPods() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range 3 {
		p := apisim.NewPod("ns", fmt.Sprintf("p-%d", i), int64(i), apisim.PodOptions{ManagedFields: i != 1})
		out = append(out, p)
	}
	return out
}

func seedEvents() []watch.Event {
	var evs []watch.Event
	for i, p := range seedPods() {
		evs = append(evs, watch.Event{Type: []watch.EventType{watch.Added, watch.Modified, watch.Deleted}[i%3], Object: p})
	}
	bm := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	evs = append(evs, watch.Event{Type: watch.Bookmark, Object: bm})
	evs = append(evs, watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}})
	return evs
}

func seedList(t testing.TB, f format) []byte {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "c"}}
	for _, p := range seedPods() {
		l.Items = append(l.Items, *p)
	}
	return encodeObject(t, f, l, podGV)
}

// watchOutcome is what a consumer of a watch sees: the events, and whether
// the stream ended with an ERROR event the client made up.
type watchOutcome struct {
	events      []watch.Event
	clientError string // message of the client's ERROR event, "" if it closed quietly
}

func outcome(evs []watch.Event) watchOutcome {
	var o watchOutcome
	if n := len(evs); n > 0 {
		if s, ok := evs[n-1].Object.(*metav1.Status); ok && evs[n-1].Type == watch.Error && isClientError(s) {
			o.clientError = s.Message
			evs = evs[:n-1]
		}
	}
	o.events = evs
	return o
}

// isClientError reports whether s is the Status a watch decoder reports for
// a stream it could not decode (not one the server sent).
func isClientError(s *metav1.Status) bool {
	return s.Details != nil && len(s.Details.Causes) > 0 && s.Details.Causes[len(s.Details.Causes)-1].Type == "ClientWatchDecoding"
}

// checkWatch compares wire's and client-go's watch over the same bytes:
// the same events, and both ending quietly or both with a client ERROR.
// Exceptions: wire refuses a frame whose length prefix (protobuf) or a
// string or container head (CBOR) says it exceeds the maximum before
// reading it, while client-go reads up to 16 MiB of it first and, if the
// stream ends sooner, closes quietly; and client-go's CBOR framer (a
// fxamacker/cbor decoder with its default limits) refuses an event nested
// deeper than 32 levels or with more than 131,072 array elements or map
// pairs, which wire frames and client-go's object decoder decodes.
func checkWatch(t *testing.T, f format, stream []byte, workers int) {
	if f == formatCBOR && startsLikeJSONObject(stream) {
		return // asked for CBOR, wire reads '{' as the JSON a server without CBOR sends
	}
	lw := testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithWorkers(workers), WithWindow(workers), WithContentType(f.contentType()), WithMaxFrameSize(1<<16))
	want := outcome(drain(streamWatcher(t, f, bytes.NewReader(stream))))
	got := outcome(wireWatch(lw, stream))
	if !apiequality.Semantic.DeepEqual(want.events, got.events) {
		t.Fatalf("events differ (-client-go +wire):\n%s", cmp.Diff(want.events, got.events))
	}
	if (want.clientError == "") != (got.clientError == "") {
		if want.clientError == "" && f == formatCBOR && strings.Contains(got.clientError, "larger than the maximum frame size") {
			return
		}
		if want.clientError != "" && f == formatCBOR && len(got.events) > len(want.events) &&
			(strings.Contains(want.clientError, "exceeded max nested level") || strings.Contains(want.clientError, "exceeded max number of")) {
			return
		}
		if want.clientError == "" && f == formatProtobuf && (oversizedFrame(stream, 1<<16) || startsLikeJSON(stream)) {
			// The stream ends inside a frame whose length exceeds the
			// maximum (or starts like JSON, which wire then reads as JSON:
			// as a frame length its first byte means over 128 MiB).
			return
		}
		if want.clientError != "" && strings.Contains(want.clientError, "larger than maximum") {
			return // client-go: ErrObjectTooLarge for a frame over 16 MiB; wire's limit here is 64 KiB
		}
		t.Fatalf("end of stream differs: client-go error %q, wire error %q", want.clientError, got.clientError)
	}
}

// FuzzProtoWatch feeds arbitrary bytes as a protobuf watch stream to
// client-go's StreamWatcher and to wire's watcher.
func FuzzProtoWatch(f *testing.F) {
	addSeeds(f, protoWatchSeeds(f))
	f.Fuzz(func(t *testing.T, stream []byte, w uint8) {
		checkWatch(t, formatProtobuf, stream, 1+int(w%4))
	})
}

// FuzzJSONWatch feeds arbitrary bytes as a JSON watch stream.
func FuzzJSONWatch(f *testing.F) {
	addSeeds(f, jsonWatchSeeds(f))
	f.Fuzz(func(t *testing.T, stream []byte, w uint8) {
		checkWatch(t, formatJSON, stream, 1+int(w%4))
	})
}

// FuzzCBORWatch feeds arbitrary bytes as a CBOR watch stream.
func FuzzCBORWatch(f *testing.F) {
	addSeeds(f, cborWatchSeeds(f))
	f.Fuzz(func(t *testing.T, stream []byte, w uint8) {
		checkWatch(t, formatCBOR, stream, 1+int(w%4))
	})
}

// checkList compares wire's and client-go's decode of a list body: if
// client-go fails, wire fails; if wire succeeds, client-go succeeds with an
// equal list. (Wire may refuse lists client-go accepts only where doc.go
// says so: a second items member, a changed kind after the items, or a
// member encoding/json would take for kind, items or metadata after the
// first item.)
func checkList(t *testing.T, f format, body []byte, workers int) {
	if f == formatCBOR && startsLikeJSONObject(body) {
		return // as in checkWatch
	}
	lw := testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithWorkers(workers), WithWindow(workers), WithContentType(f.contentType()), WithMaxFrameSize(1<<16))
	var want corev1.PodList
	werr := clientGoList(t, f, body, &want)
	got, gerr := lw.decodeList(bytes.NewReader(body))
	switch {
	case werr != nil && gerr == nil:
		t.Fatalf("client-go failed (%v), wire decoded %#v", werr, got)
	case gerr == nil && !apiequality.Semantic.DeepEqual(&want, got):
		t.Fatalf("lists differ (-client-go +wire):\n%s", cmp.Diff(&want, got))
	case werr == nil && gerr != nil:
		if !allowedRefusal(gerr) {
			t.Fatalf("wire failed (%v), client-go decoded %d items", gerr, len(want.Items))
		}
	}
}

// allowedRefusal lists the documented cases where wire refuses a list that
// client-go decodes (see doc.go).
func allowedRefusal(err error) bool {
	for _, s := range []string{"two items members", "after its items", "larger than the maximum", "repeats field"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// FuzzProtoList feeds arbitrary bytes as a protobuf list body.
func FuzzProtoList(f *testing.F) {
	addSeeds(f, protoListSeeds(f))
	f.Fuzz(func(t *testing.T, body []byte, w uint8) {
		checkList(t, formatProtobuf, body, 1+int(w%4))
	})
}

// FuzzJSONList feeds arbitrary bytes as a JSON list body.
func FuzzJSONList(f *testing.F) {
	addSeeds(f, jsonListSeeds(f))
	f.Fuzz(func(t *testing.T, body []byte, w uint8) {
		checkList(t, formatJSON, body, 1+int(w%4))
	})
}

// FuzzCBORList feeds arbitrary bytes as a CBOR list body.
func FuzzCBORList(f *testing.F) {
	addSeeds(f, cborListSeeds(f))
	f.Fuzz(func(t *testing.T, body []byte, w uint8) {
		checkList(t, formatCBOR, body, 1+int(w%4))
	})
}

// FuzzDropManagedFieldsProto: cutting managedFields out of a pod's protobuf
// bytes decodes to the full decode with ManagedFields cleared; an excision
// error implies the full decode fails too.
func FuzzDropManagedFieldsProto(f *testing.F) {
	addSeeds(f, protoExcisionSeeds())
	f.Fuzz(func(t *testing.T, b []byte) {
		var full corev1.Pod
		ferr := full.Unmarshal(b)
		cut, err := pbwire.DropManagedFields(bytes.Clone(b))
		if err != nil {
			if ferr == nil {
				t.Fatalf("excision failed (%v) on bytes that decode", err)
			}
			return
		}
		if ferr != nil {
			return // malformed managedFields content is not looked at
		}
		var got corev1.Pod
		if err := got.Unmarshal(cut); err != nil {
			t.Fatalf("excised bytes do not decode: %v", err)
		}
		full.ManagedFields = nil
		if !apiequality.Semantic.DeepEqual(&full, &got) {
			t.Fatalf("excised decode differs:\n%s", cmp.Diff(&full, &got))
		}
	})
}

// FuzzDropManagedFieldsCBOR is the same for a pod's CBOR: the cut bytes
// decode (as client-go's CBOR decoder decodes an object) to the full
// decode with ManagedFields cleared, and hold no managedFields.
func FuzzDropManagedFieldsCBOR(f *testing.F) {
	addSeeds(f, cborExcisionSeeds(f))
	dec := testCodecs.UniversalDeserializer()
	f.Fuzz(func(t *testing.T, b []byte) {
		full, _, ferr := dec.Decode(b, nil, &corev1.Pod{})
		cut, ok := cborwire.DropManagedFields(bytes.Clone(b))
		if !ok || ferr != nil {
			return
		}
		got, _, err := dec.Decode(cut, nil, &corev1.Pod{})
		if err != nil {
			t.Fatalf("cut bytes do not decode: %v", err)
		}
		want := full.(*corev1.Pod)
		want.ManagedFields = nil
		if gp := got.(*corev1.Pod); gp.ManagedFields != nil || !apiequality.Semantic.DeepEqual(want, gp) {
			t.Fatalf("cut decode differs:\n%s", cmp.Diff(want, gp))
		}
	})
}

// FuzzDropManagedFieldsJSON is the same for a pod's JSON.
func FuzzDropManagedFieldsJSON(f *testing.F) {
	addSeeds(f, jsonExcisionSeeds(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		var full corev1.Pod
		ferr := kjson.UnmarshalCaseSensitivePreserveInts(b, &full)
		cut, _, _, ok := jsonwire.Inspect(bytes.Clone(b), true)
		if !ok || ferr != nil {
			return
		}
		var got corev1.Pod
		if err := kjson.UnmarshalCaseSensitivePreserveInts(cut, &got); err != nil {
			t.Fatalf("excised bytes do not decode: %v\n%s", err, cut)
		}
		full.ManagedFields = nil
		if !apiequality.Semantic.DeepEqual(&full, &got) {
			t.Fatalf("excised decode differs:\n%s", cmp.Diff(&full, &got))
		}
	})
}

func startsLikeJSONObject(b []byte) bool { return len(b) > 0 && b[0] == '{' }

func startsLikeJSON(b []byte) bool {
	return len(b) > 0 && strings.IndexByte("{ \t\r\n", b[0]) >= 0
}

// oversizedFrame reports whether reading stream as length-prefixed frames
// meets a length over max.
func oversizedFrame(stream []byte, max int) bool {
	for len(stream) >= 4 {
		n := binary.BigEndian.Uint32(stream)
		if uint64(n) > uint64(max) {
			return true
		}
		if uint64(len(stream)) < 4+uint64(n) {
			return false
		}
		stream = stream[4+n:]
	}
	return false
}

// Seed corpora. They are added with f.Add and also committed under
// testdata/fuzz (TestWriteFuzzCorpus writes them when WIRE_WRITE_CORPUS=1).

func protoWatchSeeds(t testing.TB) [][]any {
	stream := encodeWatch(t, formatProtobuf, seedEvents(), podGV)
	return [][]any{
		{stream, uint8(1)}, {stream[:len(stream)-7], uint8(2)}, {stream[:3], uint8(1)},
		{[]byte{0, 0, 0, 3, 1, 2, 3}, uint8(2)}, {[]byte{0, 0, 0, 0}, uint8(1)},
	}
}

func jsonWatchSeeds(t testing.TB) [][]any {
	stream := encodeWatch(t, formatJSON, seedEvents(), podGV)
	return [][]any{
		{stream, uint8(1)}, {stream[:len(stream)-9], uint8(2)},
		{[]byte(`{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a"}}} 1 [`), uint8(1)},
		{[]byte(`{"type":"BOGUS","object":{}}`), uint8(3)},
		{[]byte(`{"object":{"kind":"Pod","apiVersion":"v1"},"type":"ADDED","type":"DELETED"}`), uint8(0)},
	}
}

func protoListSeeds(t testing.TB) [][]any {
	body := seedList(t, formatProtobuf)
	return [][]any{
		{body, uint8(1)}, {body[:len(body)-5], uint8(2)}, {body[:10], uint8(1)},
		{encodeObject(t, formatProtobuf, &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}, podGV), uint8(1)},
	}
}

func jsonListSeeds(t testing.TB) [][]any {
	body := seedList(t, formatJSON)
	return [][]any{
		{body, uint8(1)}, {body[:len(body)-5], uint8(2)},
		{[]byte(`{"items":[{"metadata":{"name":"a"}}],"kind":"PodList","apiVersion":"v1"}`), uint8(1)},
		{[]byte(`{"kind":"PodList","apiVersion":"v1","KIND":"Status","items":null}`), uint8(3)},
		{[]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired"}`), uint8(1)},
	}
}

func cborWatchSeeds(t testing.TB) [][]any {
	stream := encodeWatch(t, formatCBOR, seedEvents(), podGV)
	return [][]any{
		{stream, uint8(1)}, {stream[:len(stream)-9], uint8(2)}, {stream[:2], uint8(1)},
		// an indefinite-length map; a key twice; garbage
		{[]byte("\xbf\x44type\x45ADDED\x46object\xa2\x44kind\x43Pod\x4aapiVersion\x42v1\xff"), uint8(2)},
		{[]byte("\xa2\x44type\x45ADDED\x44type\x47DELETED"), uint8(0)},
		{[]byte{0x1c, 0xff, 0x5f, 0x41}, uint8(3)},
	}
}

func cborListSeeds(t testing.TB) [][]any {
	body := seedList(t, formatCBOR)
	return [][]any{
		{body, uint8(1)}, {body[:len(body)-5], uint8(2)}, {body[:10], uint8(1)},
		// items before kind, in an indefinite array; null items; a Status
		{[]byte("\xd9\xd9\xf7\xa3\x45items\x9f\xa1\x48metadata\xa1\x44name\x41a\xff\x44kind\x47PodList\x4aapiVersion\x42v1"), uint8(1)},
		{[]byte("\xd9\xd9\xf7\xa2\x44kind\x47PodList\x45items\xf6"), uint8(3)},
		{encodeObject(t, formatCBOR, &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}, podGV), uint8(1)},
	}
}

func protoExcisionSeeds() [][]any {
	var out [][]any
	for _, p := range seedPods() {
		b, _ := p.Marshal()
		out = append(out, []any{b})
	}
	return out
}

func jsonExcisionSeeds(t testing.TB) [][]any {
	var out [][]any
	for _, p := range seedPods() {
		out = append(out, []any{encodeObject(t, formatJSON, p, podGV)})
	}
	return append(out,
		[]any{[]byte(`{"metadata":{"managedFields":[],"name":"a","managedFields":null}}`)},
		[]any{[]byte(`{"metadata":{"managed\u0046ields":[{"manager":"x"}]}}`)})
}

func cborExcisionSeeds(t testing.TB) [][]any {
	var out [][]any
	for _, p := range seedPods() {
		out = append(out, []any{encodeObject(t, formatCBOR, p, podGV)})
	}
	return append(out,
		[]any{[]byte("\xbf\x48metadata\xbf\x4dmanagedFields\x80\x44name\x41a\xff\xff")},
		[]any{[]byte("\xa1\x68metadata\xa2\x6dmanagedFields\xf6\x6dmanagedFields\x80")})
}

func addSeeds(f *testing.F, seeds [][]any) {
	for _, s := range seeds {
		f.Add(s...)
	}
}

// TestWriteFuzzCorpus writes the seed corpora to testdata/fuzz.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("WIRE_WRITE_CORPUS") != "1" {
		t.Skip("set WIRE_WRITE_CORPUS=1 to write testdata/fuzz")
	}
	for name, seeds := range map[string][][]any{
		"FuzzProtoWatch": protoWatchSeeds(t), "FuzzJSONWatch": jsonWatchSeeds(t),
		"FuzzProtoList": protoListSeeds(t), "FuzzJSONList": jsonListSeeds(t),
		"FuzzCBORWatch": cborWatchSeeds(t), "FuzzCBORList": cborListSeeds(t), "FuzzDropManagedFieldsCBOR": cborExcisionSeeds(t),
		"FuzzDropManagedFieldsProto": protoExcisionSeeds(), "FuzzDropManagedFieldsJSON": jsonExcisionSeeds(t),
		"FuzzSharePod": protoExcisionSeeds(), // the diet's, in internal/diet
	} {
		dir := filepath.Join("testdata", "fuzz", name)
		if name == "FuzzSharePod" {
			dir = filepath.Join("internal", "diet", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			var b strings.Builder
			b.WriteString("go test fuzz v1\n")
			for _, v := range s {
				switch v := v.(type) {
				case []byte:
					fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
				case uint8:
					fmt.Fprintf(&b, "byte(%s)\n", strconv.QuoteRune(rune(v)))
				}
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d", i)), []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
