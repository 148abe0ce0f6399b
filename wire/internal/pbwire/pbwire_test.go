package pbwire_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

func encode(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	b, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pods() []corev1.Pod {
	var out []corev1.Pod
	for i := range 4 {
		out = append(out, *apisim.NewPod("ns", "p"+string(rune('a'+i)), int64(i), apisim.PodOptions{ManagedFields: true}))
	}
	return out
}

type recorder struct {
	apiVersion, kind string
	meta             metav1.ListMeta
	items            [][]byte
	decline          bool
}

func (r *recorder) Kind(apiVersion, kind []byte) error {
	r.apiVersion, r.kind = string(apiVersion), string(kind)
	if r.decline {
		return pbwire.ErrDecline
	}
	return nil
}
func (r *recorder) ListMeta(b []byte) error { return r.meta.Unmarshal(b) }
func (r *recorder) Alloc(n int) []byte      { return make([]byte, n) }
func (r *recorder) Item(b []byte) error {
	r.items = append(r.items, b)
	return nil
}

func TestReadList(t *testing.T) {
	rem := int64(3)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "next", RemainingItemCount: &rem}, Items: pods()}
	body := encode(t, list)
	var r recorder
	if err := pbwire.ReadList(bufio.NewReaderSize(iotest.HalfReader(bytes.NewReader(body)), 16), 1<<20, &r); err != nil {
		t.Fatal(err)
	}
	if r.apiVersion != "v1" || r.kind != "PodList" {
		t.Fatalf("kind %s %s", r.apiVersion, r.kind)
	}
	if !apiequality.Semantic.DeepEqual(r.meta, list.ListMeta) {
		t.Fatalf("list meta %+v", r.meta)
	}
	if len(r.items) != len(list.Items) {
		t.Fatalf("%d items", len(r.items))
	}
	for i, b := range r.items {
		var p corev1.Pod
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(p, list.Items[i]) {
			t.Fatalf("item %d differs", i)
		}
	}
	// Truncated anywhere: an error, never a short list.
	for _, n := range []int{5, 20, len(body) / 2, len(body) - 1} {
		err := pbwire.ReadList(bufio.NewReader(bytes.NewReader(body[:n])), 1<<20, &recorder{})
		if err != io.ErrUnexpectedEOF {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
	// An item over the maximum.
	if err := pbwire.ReadList(bufio.NewReader(bytes.NewReader(body)), 1000, &recorder{}); !errors.Is(err, pbwire.ErrFrameTooLarge) {
		t.Errorf("max 1000: %v", err)
	}
}

func TestReadListDecline(t *testing.T) {
	body := encode(t, &corev1.PodList{Items: pods()})
	br := bufio.NewReader(bytes.NewReader(body))
	err := pbwire.ReadList(br, 1<<20, &recorder{decline: true})
	var nc *pbwire.NotCanonicalError
	if !errors.As(err, &nc) {
		t.Fatalf("%v", err)
	}
	rest, _ := io.ReadAll(br)
	if !bytes.Equal(append(nc.Prefix, rest...), body) {
		t.Fatal("prefix + rest is not the body")
	}
}

func TestFrameReader(t *testing.T) {
	frame := func(b []byte) []byte { return append([]byte{0, 0, 0, byte(len(b))}, b...) }
	stream := append(frame([]byte("abc")), frame(nil)...)
	fr := pbwire.NewFrameReader(bytes.NewReader(append(stream, 0, 0)), 10)
	for _, want := range []string{"abc", ""} {
		got, err := fr.Next(nil)
		if err != nil || string(got) != want {
			t.Fatalf("%q %v, want %q", got, err, want)
		}
	}
	if _, err := fr.Next(nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("partial header: %v", err)
	}
	if _, err := pbwire.NewFrameReader(bytes.NewReader(nil), 10).Next(nil); err != io.EOF {
		t.Fatalf("empty: %v", err)
	}
	if _, err := pbwire.NewFrameReader(bytes.NewReader([]byte{0, 0, 0, 5, 1}), 10).Next(nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated body: %v", err)
	}
	if _, err := pbwire.NewFrameReader(bytes.NewReader([]byte{0x7f, 0xff, 0xff, 0xff}), 10).Next(nil); !errors.Is(err, pbwire.ErrFrameTooLarge) {
		t.Fatalf("huge length: %v", err)
	}
}

func TestDropManagedFields(t *testing.T) {
	for _, p := range pods() {
		b, _ := p.Marshal()
		cut, err := pbwire.DropManagedFields(b)
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.Pod
		if err := got.Unmarshal(cut); err != nil {
			t.Fatal(err)
		}
		p.ManagedFields = nil
		if !apiequality.Semantic.DeepEqual(p, got) {
			t.Fatal("differs")
		}
		if len(cut) >= len(b) {
			t.Fatal("nothing cut")
		}
	}
}

func TestParse(t *testing.T) {
	p := pods()[0]
	env := encode(t, &p)
	apiVersion, kind, raw, ok := pbwire.ParseUnknown(env)
	if !ok || string(apiVersion) != "v1" || string(kind) != "Pod" {
		t.Fatalf("%q %q %v", apiVersion, kind, ok)
	}
	var got corev1.Pod
	if err := got.Unmarshal(raw); err != nil || got.Name != p.Name {
		t.Fatalf("raw: %v", err)
	}
	ev := &metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: env}}
	b, _ := ev.Marshal()
	typ, obj, ok := pbwire.ParseWatchEvent(b)
	if !ok || string(typ) != "ADDED" || !bytes.Equal(obj, env) {
		t.Fatalf("watch event: %q %v", typ, ok)
	}
	if _, _, ok := pbwire.ParseWatchEvent(append(b, b...)); ok {
		t.Fatal("a repeated field is not canonical")
	}
}
