package compact

import (
	"fmt"
	"math/rand"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
)

func mustNew(t testing.TB, example kruntime.Object, cfg Config) *Codec {
	t.Helper()
	c, err := New(example, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip encodes obj, checks that it became an Object with obj's key and
// resource version, decodes it and returns the result.
func roundTrip(t *testing.T, c *Codec, obj kruntime.Object) kruntime.Object {
	t.Helper()
	stored, err := c.Encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := stored.(*Object)
	if !ok {
		t.Fatalf("%T not encoded (stored as %T)", obj, stored)
	}
	m, _ := meta.Accessor(obj)
	key, _ := cache.MetaNamespaceKeyFunc(obj)
	if o.Key() != key || o.ResourceVersion() != m.GetResourceVersion() {
		t.Fatalf("Object key %q rv %q, want %q %q", o.Key(), o.ResourceVersion(), key, m.GetResourceVersion())
	}
	if k, err := cache.MetaNamespaceKeyFunc(o); err != nil || k != key {
		t.Fatalf("key function on the Object: %q, %v; want %q", k, err, key)
	}
	back, err := c.Decode(o)
	if err != nil {
		t.Fatal(err)
	}
	return back.(kruntime.Object)
}

// TestRoundTrip: every object type of client-go's scheme, filled at random,
// decodes to an object semantically equal to the one encoded, through
// protobuf, whatever the template it shares with the objects before it.
func TestRoundTrip(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(1), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
	types := 0
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == kruntime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		example, ok := reflect.New(typ).Interface().(kruntime.Object)
		if _, err := meta.Accessor(example); !ok || err != nil {
			continue
		}
		types++
		t.Run(gvk.String(), func(t *testing.T) {
			c := mustNew(t, example, Config{Decoded: 1})
			if _, ok := c.format.(protoFormat); !ok {
				t.Fatalf("format %T, want protobuf", c.format)
			}
			for i := range 12 {
				obj := reflect.New(typ).Interface().(kruntime.Object)
				f.Fill(obj)
				m, _ := meta.Accessor(obj)
				m.SetNamespace([]string{"a", "b"}[i%2]) // two templates, shared
				m.SetName(fmt.Sprintf("o-%d", i))
				m.SetGenerateName("")
				m.SetOwnerReferences(nil)
				if i%3 == 0 {
					obj.GetObjectKind().SetGroupVersionKind(gvk)
				} else {
					obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
				}
				back := roundTrip(t, c, obj)
				if !apiequality.Semantic.DeepEqual(obj, back) {
					t.Fatalf("object %d does not survive:\n%#v\n%#v", i, obj, back)
				}
			}
			if st := c.Stats(); st.Unencoded != 0 || st.Encoded != 12 {
				t.Errorf("stats %+v", st)
			}
		})
	}
	if types < 50 {
		t.Errorf("only %d types in client-go's scheme", types)
	}
}

// TestRoundTripUnstructured: JSON keeps unstructured content: strings,
// booleans, int64 and float64 numbers, nulls, nested maps and slices.
func TestRoundTripUnstructured(t *testing.T) {
	c := mustNew(t, &unstructured.Unstructured{}, Config{})
	r := rand.New(rand.NewSource(2))
	var value func(depth int) any
	value = func(depth int) any {
		switch k := r.Intn(8); {
		case k == 0:
			return fmt.Sprintf("s%d\x00\"é", r.Intn(100))
		case k == 1:
			return r.Int63() - r.Int63()
		case k == 2:
			return r.Float64()*1e6 + 0.5
		case k == 3:
			return r.Intn(2) == 0
		case k == 4 || depth > 3:
			return nil
		case k == 5:
			s := make([]any, r.Intn(4))
			for i := range s {
				s[i] = value(depth + 1)
			}
			return s
		default:
			m := map[string]any{}
			for range r.Intn(4) {
				m[fmt.Sprintf("k%d", r.Intn(10))] = value(depth + 1)
			}
			return m
		}
	}
	for i := range 200 {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": value(0), "status": map[string]any{"n": int64(i)}}}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		u.SetNamespace("ns")
		u.SetName(fmt.Sprintf("w-%d", i))
		u.SetResourceVersion(fmt.Sprint(i))
		back := roundTrip(t, c, u)
		if !reflect.DeepEqual(u, back) {
			t.Fatalf("object %d does not survive:\n%#v\n%#v", i, u.Object, back.(*unstructured.Unstructured).Object)
		}
	}
}

// plain is a typed object without protobuf code: JSON.
type plain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              map[string]int `json:"spec"`
}

func (p *plain) DeepCopyObject() kruntime.Object {
	c := *p
	c.ObjectMeta = *p.ObjectMeta.DeepCopy()
	c.Spec = make(map[string]int)
	for k, v := range p.Spec {
		c.Spec[k] = v
	}
	return &c
}

func TestRoundTripOtherTypes(t *testing.T) {
	c := mustNew(t, &plain{}, Config{})
	p := &plain{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "3"}, Spec: map[string]int{"a": 1}}
	if back := roundTrip(t, c, p); !reflect.DeepEqual(p, back) {
		t.Fatalf("%#v", back)
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", ResourceVersion: "4", Labels: map[string]string{"x": "y"}}}
	pm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	c = mustNew(t, &metav1.PartialObjectMetadata{}, Config{})
	if back := roundTrip(t, c, pm); !apiequality.Semantic.DeepEqual(pm, back) {
		t.Fatalf("%#v", back)
	}
}

// TestPassThrough: what Encode cannot encode is returned as it is, never
// lost; an Object is returned as it is (idempotence); Decode returns what is
// not an Object as it is and decodes a tombstone's object.
func TestPassThrough(t *testing.T) {
	c := mustNew(t, &corev1.Pod{}, Config{})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-type"}}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p"}
	for _, in := range []any{cm, tomb, "a string", nil} { // the tombstone is not counted: never stored
		out, err := c.Encode(in)
		if err != nil || !reflect.DeepEqual(out, in) {
			t.Errorf("Encode(%T) = %T, %v; want it unchanged", in, out, err)
		}
		back, err := c.Decode(out)
		if err != nil || !reflect.DeepEqual(back, in) {
			t.Errorf("Decode(%T) = %T, %v; want it unchanged", in, back, err)
		}
	}
	if st := c.Stats(); st.Unencoded != 3 || st.Encoded != 0 {
		t.Errorf("stats %+v: want 3 unencoded (the tombstone, the string and nil are not objects of the type; the config map is another type)", st)
	}
	pod := apisim.NewPod("ns", "p", 1, apisim.PodOptions{})
	stored, _ := c.Encode(pod)
	if again, _ := c.Encode(stored); again != stored {
		t.Error("Encode of an Object is not the Object")
	}
	if again, _ := c.Transform(nil)(stored); again != stored {
		t.Error("Transform of an Object is not the Object")
	}
	back, err := c.Decode(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: stored})
	if err != nil || !apiequality.Semantic.DeepEqual(back.(cache.DeletedFinalStateUnknown).Obj, pod) {
		t.Errorf("tombstone: %v, %v", back, err)
	}
}

// TestObjectMeta: an Object is its own metav1.Object: the key function, the
// namespace index function and resource-version reads work on it without
// allocating, a cluster-scoped key has no namespace, fields it does not hold
// read as unset and every setter panics.
func TestObjectMeta(t *testing.T) {
	c := mustNew(t, &corev1.Pod{}, Config{})
	for _, obj := range []kruntime.Object{
		apisim.NewPod("ns", "p", 7, apisim.PodOptions{}),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cluster-scoped", ResourceVersion: "3", UID: "u", Labels: map[string]string{"a": "b"}}},
	} {
		stored, err := c.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		o := stored.(*Object)
		want, _ := meta.Accessor(obj)
		got, err := meta.Accessor(o)
		if err != nil || got != metav1.Object(o) {
			t.Fatalf("meta.Accessor(Object) = %T, %v; want the Object itself", got, err)
		}
		if got.GetNamespace() != want.GetNamespace() || got.GetName() != want.GetName() || got.GetResourceVersion() != want.GetResourceVersion() {
			t.Errorf("Object meta %q %q %q, want %q %q %q", got.GetNamespace(), got.GetName(), got.GetResourceVersion(),
				want.GetNamespace(), want.GetName(), want.GetResourceVersion())
		}
		if got.GetUID() != "" || got.GetLabels() != nil || got.GetGeneration() != 0 {
			t.Errorf("Object meta holds fields beyond name, namespace and resource version: %q %v %d", got.GetUID(), got.GetLabels(), got.GetGeneration())
		}
		if n := testing.AllocsPerRun(100, func() {
			_, _ = cache.MetaNamespaceKeyFunc(o)
			_, _ = cache.MetaNamespaceIndexFunc(o)
		}); n > 2 { // the key's concatenation and the index function's result; not an ObjectMeta each
			t.Errorf("key and namespace index functions on an Object: %v allocations, want at most 2", n)
		}
		for name, set := range map[string]func(){
			"SetName":          func() { got.SetName("x") },
			"SetLabels":        func() { got.SetLabels(nil) },
			"SetManagedFields": func() { got.SetManagedFields(nil) },
		} {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "immutable") {
						t.Errorf("%s on an Object: recovered %v, want an immutability panic", name, r)
					}
				}()
				set()
			}()
		}
	}
}

// TestDeltas: realistic pods (apisim's, as make run's) of a few templates
// are stored in a small fraction of their protobuf, and each decodes to
// itself.
func TestDeltas(t *testing.T) {
	c := mustNew(t, &corev1.Pod{}, Config{Decoded: 1})
	var proto, stored int
	var keep []any
	for i := range 600 {
		p := apisim.NewPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("pod-%d", i), int64(i), apisim.PodOptions{ManagedFields: true, Apps: 10})
		b, _ := p.Marshal()
		proto += len(b)
		o, _ := c.Encode(p)
		stored += o.(*Object).Size()
		keep = append(keep, o)
		back, err := c.Decode(o)
		if err != nil || !apiequality.Semantic.DeepEqual(back, p) {
			t.Fatalf("pod %d: %v", i, err)
		}
	}
	st := c.Stats()
	t.Logf("600 pods: %d bytes of protobuf, %d stored (%.0f a pod), %d templates", proto, stored, float64(stored)/600, st.Templates)
	if stored*5 > proto {
		t.Errorf("stored %d bytes for %d of protobuf: want at most 1/5", stored, proto)
	}
	runtime.KeepAlive(keep)
}

// TestTemplatesFreed: a template lives while an object refers to it.
func TestTemplatesFreed(t *testing.T) {
	c := mustNew(t, &corev1.Pod{}, Config{Decoded: 1})
	var keep []any
	for i := range 50 {
		p := apisim.NewPod(fmt.Sprintf("ns-%d", i), "p", int64(i), apisim.PodOptions{})
		o, _ := c.Encode(p)
		keep = append(keep, o)
	}
	if n := c.Stats().Templates; n != 50 {
		t.Fatalf("%d templates, want 50", n)
	}
	runtime.KeepAlive(keep)
	keep = nil
	c.cache = decodedCache{} // the decoded objects' keys refer to Objects too
	c.cache.init(1)
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats().Templates != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d templates left after their objects were dropped", c.Stats().Templates)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDecodedBounded: the codec keeps at most Config.Decoded decoded objects,
// and an object read again soon is not decoded again.
func TestDecodedBounded(t *testing.T) {
	const limit = 64
	c := mustNew(t, &corev1.Pod{}, Config{Decoded: limit})
	var objs []any
	for i := range 1000 {
		p := apisim.NewPod("ns", fmt.Sprintf("p-%d", i), int64(i), apisim.PodOptions{})
		o, _ := c.Encode(p)
		objs = append(objs, o)
		if got, _ := c.Decode(o); got != p {
			t.Fatal("an object read right after it was encoded is not the object")
		}
	}
	for _, o := range objs {
		first, _ := c.Decode(o)
		if again, _ := c.Decode(o); again != first {
			t.Fatal("an object read twice in a row was decoded twice")
		}
	}
	n := 0
	for i := range c.cache.parts {
		n += len(c.cache.parts[i].cur) + len(c.cache.parts[i].old)
	}
	if n > limit {
		t.Errorf("%d decoded objects kept, limit %d", n, limit)
	}
	if st := c.Stats(); st.Decoded < 1000-limit || st.DecodedHits < 2000 {
		t.Errorf("stats %+v", st)
	}
}

// TestPodsDecodedExactSize: pods are decoded with wire's decoder, whose
// slices are allocated at their final size (the generated unmarshaler's
// grow by doubling: the decoded garbage of every read of a pod).
func TestPodsDecodedExactSize(t *testing.T) {
	spare := func(p *corev1.Pod) (n int) {
		n += cap(p.Spec.Containers) - len(p.Spec.Containers) + cap(p.Spec.Volumes) - len(p.Spec.Volumes)
		for _, ct := range p.Spec.Containers {
			n += cap(ct.Env) - len(ct.Env) + cap(ct.VolumeMounts) - len(ct.VolumeMounts) + cap(ct.Args) - len(ct.Args)
		}
		return n
	}
	c := mustNew(t, &corev1.Pod{}, Config{Decoded: 1})
	generated := 0
	for i := range 50 {
		p := apisim.NewPod("ns", fmt.Sprintf("p-%d", i), int64(i), apisim.PodOptions{ManagedFields: true})
		b, _ := p.Marshal()
		var plain corev1.Pod
		if err := plain.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		generated += spare(&plain)
		o, _ := c.Encode(p)
		c.cache.parts = [decodedShards]decodedPart{} // forget p: decode it
		got, err := c.Decode(o)
		if err != nil {
			t.Fatal(err)
		}
		if got == p || !apiequality.Semantic.DeepEqual(got, p) {
			t.Fatalf("pod %d: decoded %p, encoded %p, equal %v", i, got, p, apiequality.Semantic.DeepEqual(got, p))
		}
		if n := spare(got.(*corev1.Pod)); n != 0 {
			t.Fatalf("pod %d decoded with %d unused slice elements", i, n)
		}
	}
	if generated == 0 {
		t.Fatal("the generated unmarshaler left no spare capacity: the test shows nothing")
	}
}

// TestDecodeLike: an update's old pod, no longer among the decoded objects
// kept, decoded like the new one shares its spec when only the status or
// metadata changed (each version its own Object), equals its plain decode,
// and is kept; with a like that is not an Object, or a type other than
// pods, it is Decode.
func TestDecodeLike(t *testing.T) {
	c := mustNew(t, &corev1.Pod{}, Config{Decoded: 2})
	v1 := apisim.NewPod("ns", "p", 3, apisim.PodOptions{ManagedFields: true})
	v2 := v1.DeepCopy()
	v2.ResourceVersion, v2.Status.Conditions[0].Reason = "2", "Later"
	old, _ := c.Encode(v1)
	cur, _ := c.Encode(v2)
	forget := func() { c.cache.parts = [decodedShards]decodedPart{} }
	forget()
	newObj, err := c.Decode(cur)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.DecodeLike(old, cur)
	if err != nil {
		t.Fatal(err)
	}
	gp, np := got.(*corev1.Pod), newObj.(*corev1.Pod)
	if !apiequality.Semantic.DeepEqual(gp, v1) || gp == v1 {
		t.Fatalf("old decoded like new: equal to v1 %v (a decode: %v)", apiequality.Semantic.DeepEqual(gp, v1), gp != v1)
	}
	if unsafe.SliceData(gp.Spec.Volumes) != unsafe.SliceData(np.Spec.Volumes) || unsafe.SliceData(gp.Status.Conditions) == unsafe.SliceData(np.Status.Conditions) {
		t.Error("want the new pod's spec and a status of its own")
	}
	if again, _ := c.Decode(old); again != got {
		t.Error("the old pod decoded like the new one is not kept")
	}
	forget()
	if got, _ := c.DecodeLike(old, v2); !apiequality.Semantic.DeepEqual(got, v1) {
		t.Error("like a decoded object (not an Object): not the plain decode")
	}
	forget()
	// The new one is decoded too when it is not kept.
	if got, _ := c.DecodeLike(old, cur); !apiequality.Semantic.DeepEqual(got, v1) {
		t.Error("like an Object not kept: not the plain decode")
	}
	cm := mustNew(t, &corev1.ConfigMap{}, Config{Decoded: 1})
	cm1 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", ResourceVersion: "1"}, Data: map[string]string{"k": "v"}}
	cm2 := cm1.DeepCopy()
	cm2.ResourceVersion = "2"
	o1, _ := cm.Encode(cm1)
	o2, _ := cm.Encode(cm2)
	cm.cache.parts = [decodedShards]decodedPart{}
	if got, err := cm.DecodeLike(o1, o2); err != nil || !apiequality.Semantic.DeepEqual(got, cm1) {
		t.Errorf("a ConfigMap decoded like another: %v, %v", got, err)
	}
}

// TestCorrupt: an Object whose bytes are damaged does not decode: an error
// naming its key, never a panic.
func TestCorrupt(t *testing.T) {
	c := mustNew(t, &corev1.Pod{}, Config{Decoded: 1})
	first, _ := c.Encode(apisim.NewPod("ns", "p-0", 0, apisim.PodOptions{Apps: 1}))
	o, _ := c.Encode(apisim.NewPod("ns", "p-1", 1, apisim.PodOptions{Apps: 1}))
	obj := o.(*Object)
	if obj.data == nil || obj.data[0] != dataDelta {
		t.Fatal("the second pod of a template is not a delta")
	}
	for i := range obj.data {
		bad := &Object{keyRV: obj.keyRV, t: obj.t, data: slices.Clone(obj.data)}
		bad.data[i] ^= 0xff
		if _, err := c.Decode(bad); err != nil && !strings.Contains(err.Error(), "ns/p-1") {
			t.Fatalf("error %v does not name the key", err)
		}
	}
	cut := &Object{keyRV: obj.keyRV, t: obj.t, data: obj.data[:len(obj.data)/2]}
	if _, err := c.Decode(cut); err == nil {
		t.Error("a truncated delta decodes")
	}
	runtime.KeepAlive(first)
}

func FuzzDecode(f *testing.F) {
	c, _ := New(&corev1.Pod{}, Config{Decoded: 1})
	first, _ := c.Encode(apisim.NewPod("ns", "p-0", 0, apisim.PodOptions{Apps: 1}))
	o, _ := c.Encode(apisim.NewPod("ns", "p-1", 1, apisim.PodOptions{Apps: 1}))
	f.Add(o.(*Object).data)
	f.Add([]byte{dataWhole, 10, 3, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		bad := &Object{keyRV: "ns/x\x001", t: first.(*Object).t, data: data}
		_, _ = c.Decode(bad) // an error or an object, no panic
	})
}

// TestConcurrent: encoders and readers on many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	c := mustNew(t, &corev1.Pod{}, Config{Decoded: 16})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				p := apisim.NewPod(fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("p-%d-%d", g, i), int64(i), apisim.PodOptions{})
				o, _ := c.Encode(p)
				for range 3 {
					back, err := c.Decode(o)
					if err != nil || back.(*corev1.Pod).Name != p.Name {
						t.Errorf("decode: %v", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		example kruntime.Object
		cfg     Config
		want    string
	}{
		{nil, Config{}, "nil example"},
		{&corev1.Pod{}, Config{Decoded: -1}, "Decoded -1"},
	} {
		if _, err := New(tc.example, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%T, %+v) = %v, want an error with %q", tc.example, tc.cfg, err, tc.want)
		}
	}
}
