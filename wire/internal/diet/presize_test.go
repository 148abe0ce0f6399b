package diet

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/wire/internal/pbwire"
)

// TestUnmarshalPodExactSizes: a realistic pod decodes to the plain decode,
// with every slice unmarshalPod sizes at its exact length (what saves the
// growth and the compaction), and no compaction left to do.
func TestUnmarshalPodExactSizes(t *testing.T) {
	src := apisim.NewPod("ns", "p", 3, apisim.PodOptions{ManagedFields: true})
	raw, err := src.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var want corev1.Pod
	if err := want.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
	var got corev1.Pod
	if err := unmarshalPod(&got, raw, metaStrings{}); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(&want, &got) {
		t.Fatalf("differs from the plain decode:\n%s", cmp.Diff(&want, &got))
	}
	exact := func(name string, length, capacity int) {
		t.Helper()
		if length != capacity {
			t.Errorf("%s: len %d, cap %d", name, length, capacity)
		}
	}
	s, st := &got.Spec, &got.Status
	if len(s.Containers) < 2 || len(s.Volumes) == 0 || len(st.Conditions) == 0 || len(got.ManagedFields) == 0 {
		t.Fatalf("apisim's pod lacks the lists this test checks: %d containers, %d volumes, %d conditions, %d managedFields",
			len(s.Containers), len(s.Volumes), len(st.Conditions), len(got.ManagedFields))
	}
	exact("ownerReferences", len(got.OwnerReferences), cap(got.OwnerReferences))
	exact("managedFields", len(got.ManagedFields), cap(got.ManagedFields))
	exact("volumes", len(s.Volumes), cap(s.Volumes))
	exact("containers", len(s.Containers), cap(s.Containers))
	exact("tolerations", len(s.Tolerations), cap(s.Tolerations))
	for i := range s.Containers {
		c := &s.Containers[i]
		exact("env", len(c.Env), cap(c.Env))
		exact("volumeMounts", len(c.VolumeMounts), cap(c.VolumeMounts))
		exact("ports", len(c.Ports), cap(c.Ports))
	}
	exact("conditions", len(st.Conditions), cap(st.Conditions))
	exact("containerStatuses", len(st.ContainerStatuses), cap(st.ContainerStatuses))
	if allocs := testing.AllocsPerRun(10, func() { compactPod(&got) }); allocs != 0 {
		t.Errorf("compaction after unmarshalPod allocates %v times", allocs)
	}
}

// TestUnmarshalPodShapes: random pods whose spec and top-level fields come
// in a random order (containers among the other fields, interleaved with
// init containers), repeated top-level messages and truncated bytes decode
// through ProtoPod as the plain unmarshal does: both fail alike or give
// equal pods, and so does DecodePod (the path without the diet). The
// first four shapes (the last with the metadata's fields shuffled, labels
// and annotations among the rest) are also decoded by unmarshalPod alone,
// with and without interning the maps, which must not need the fallback
// for them.
func TestUnmarshalPodShapes(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		r := rand.New(rand.NewSource(seed))
		f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
		var p corev1.Pod
		f.Fill(&p)
		p.TypeMeta = metav1.TypeMeta{}
		raw, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		shapes := [][]byte{raw, shuffled(t, r, raw, 2), shuffled(t, r, raw, 0), shuffled(t, r, raw, 1)}
		shapes = append(shapes, append(bytes.Clone(raw), raw...)) // every top-level message twice
		shapes = append(shapes, raw[:r.Intn(len(raw)+1)])
		for k, b := range shapes {
			var want corev1.Pod
			werr := want.Unmarshal(b)
			d := withoutVersions(Config{Intern: true, Compact: true, Share: true})
			got, err := d.ProtoPod(bytes.Clone(b))
			if (err != nil) != (werr != nil) || (err != nil && err.Error() != werr.Error()) {
				t.Fatalf("seed %d shape %d: error %v, plain %v", seed, k, err, werr)
			}
			if err == nil && !apiequality.Semantic.DeepEqual(&want, got) {
				t.Fatalf("seed %d shape %d differs from the plain decode:\n%s", seed, k, cmp.Diff(&want, got))
			}
			var plain corev1.Pod // the path without the diet
			if err := DecodePod(&plain, b); (err != nil) != (werr != nil) || (err != nil && err.Error() != werr.Error()) {
				t.Fatalf("seed %d shape %d: DecodePod error %v, plain %v", seed, k, err, werr)
			} else if err == nil && !apiequality.Semantic.DeepEqual(&want, &plain) {
				t.Fatalf("seed %d shape %d: DecodePod differs from the plain decode:\n%s", seed, k, cmp.Diff(&want, &plain))
			}
			if k < 4 { // the shapes unmarshalPod decodes itself, without the fallback
				for _, ms := range []metaStrings{{}, {t: new(interner), annotationValues: true}, {t: new(interner)}} {
					var direct corev1.Pod
					if err := unmarshalPod(&direct, b, ms); err != nil {
						t.Fatalf("seed %d shape %d, interning %v: unmarshalPod: %v", seed, k, ms.t != nil, err)
					}
					if !apiequality.Semantic.DeepEqual(&want, &direct) {
						t.Fatalf("seed %d shape %d, interning %v: unmarshalPod differs from the plain decode:\n%s", seed, k, ms.t != nil, cmp.Diff(&want, &direct))
					}
				}
			}
		}
	}
}

// shuffled returns the pod message b with the fields of its metadata or
// spec (field 1 or 2, if num is 1 or 2) or its own fields (num 0) in a
// random order.
func shuffled(t *testing.T, r *rand.Rand, b []byte, num int32) []byte {
	t.Helper()
	fields := func(b []byte) [][]byte {
		var out [][]byte
		for i := 0; i < len(b); {
			f, err := pbwire.NextField(b, i)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b[f.Start:f.End])
			i = f.End
		}
		return out
	}
	top := fields(b)
	if num == 0 {
		r.Shuffle(len(top), func(i, j int) { top[i], top[j] = top[j], top[i] })
		return bytes.Join(top, nil)
	}
	var out []byte
	for _, fb := range top {
		f, _ := pbwire.NextField(fb, 0)
		if f.Num != num || f.WireType != pbwire.WireBytes {
			out = append(out, fb...)
			continue
		}
		inner := fields(fb[f.Val:])
		r.Shuffle(len(inner), func(i, j int) { inner[i], inner[j] = inner[j], inner[i] })
		body := bytes.Join(inner, nil)
		out = append(out, fb[:f.LenAt]...)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out
}

// TestMetaMapEntries: label and annotation entries the generated
// unmarshaler reads in more ways than it writes — value before key, key or
// value missing, a field repeated inside an entry, an unknown field in an
// entry, one key in two entries (the later wins), an empty entry — decode
// with the maps interned while decoded as without; an entry whose key is
// not of wire type bytes, or that is truncated, goes to the generated
// unmarshaler (ProtoPod's fallback), whose result or error is client-go's.
func TestMetaMapEntries(t *testing.T) {
	str := func(num int, s string) []byte {
		b := binary.AppendUvarint(nil, uint64(num)<<3|2)
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	pod := func(entries ...[]byte) []byte {
		meta := metav1.ObjectMeta{Name: "p", Namespace: "ns"}
		mb, err := meta.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			mb = append(mb, e...)
		}
		return str(1, string(mb))
	}
	label := func(body []byte) []byte { return str(11, string(body)) }
	annotation := func(body []byte) []byte { return str(12, string(body)) }
	varint := []byte{1 << 3, 7} // field 1, wire type varint
	for name, b := range map[string][]byte{
		"plain":            pod(label(cat(str(1, "app"), str(2, "web"))), annotation(cat(str(1, "a"), str(2, "x")))),
		"value first":      pod(label(cat(str(2, "web"), str(1, "app")))),
		"no key":           pod(label(str(2, "web"))),
		"no value":         pod(annotation(str(1, "a"))),
		"empty entry":      pod(label(nil)),
		"repeated in one":  pod(label(cat(str(1, "a"), str(1, "b"), str(2, "x"), str(2, "y")))),
		"unknown field":    pod(label(cat(str(1, "app"), []byte{3 << 3, 42}, str(5, "?"), str(2, "web")))),
		"a key twice":      pod(label(cat(str(1, "app"), str(2, "web"))), str(3, "gen"), label(cat(str(1, "app"), str(2, "db")))),
		"key not bytes":    pod(label(cat(varint, str(2, "web")))),
		"truncated entry":  pod(label(str(1, "app"))[:4]),
		"after the others": pod(str(3, "generate-"), annotation(cat(str(1, "k"), str(2, "v"))), str(3, "again-")),
	} {
		var want corev1.Pod
		werr := want.Unmarshal(b)
		var direct corev1.Pod
		if err := unmarshalPod(&direct, b, metaStrings{t: new(interner), annotationValues: true}); err == nil {
			if werr != nil || !apiequality.Semantic.DeepEqual(&want, &direct) {
				t.Errorf("%s: unmarshalPod gives %v, %+v; plain %v, %+v", name, err, direct.ObjectMeta, werr, want.ObjectMeta)
			}
		} else if werr == nil && err != errPodShape {
			t.Errorf("%s: unmarshalPod fails with %v where the plain decode does not", name, err)
		}
		d := withoutVersions(Config{Intern: true, Compact: true, Share: true, Classes: InternAll})
		got, err := d.ProtoPod(bytes.Clone(b))
		if (err != nil) != (werr != nil) || (err != nil && err.Error() != werr.Error()) {
			t.Errorf("%s: ProtoPod error %v, plain %v", name, err, werr)
		} else if err == nil && !apiequality.Semantic.DeepEqual(&want, got) {
			t.Errorf("%s: ProtoPod differs from the plain decode:\n%s", name, cmp.Diff(&want, got))
		}
	}
}

// decodeLike is DecodePodLike into a new pod, failing the test on an
// error.
func decodeLike(t *testing.T, b []byte, like *corev1.Pod, likeBytes []byte) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := DecodePodLike(p, b, like, likeBytes); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDecodePodLike: an older version decoded like the newer one takes its
// spec where only metadata or status changed, and its status where only
// metadata or spec did; what changed is decoded; maps are its own; every
// result equals the plain decode of its bytes; and sharing allocates less.
func TestDecodePodLike(t *testing.T) {
	newer := apisim.NewPod("ns", "p", 7, apisim.PodOptions{ManagedFields: true})
	newerBytes := marshalPod(t, newer)
	like := &corev1.Pod{}
	if err := DecodePod(like, newerBytes); err != nil {
		t.Fatal(err)
	}
	meta := newer.DeepCopy()
	meta.ResourceVersion, meta.Annotations["touched"] = "6", "yes"
	status := newer.DeepCopy()
	status.Status.Conditions[0].Reason = "Before"
	spec := newer.DeepCopy()
	spec.Spec.Containers[0].Image = "before:1"
	limits := func(p *corev1.Pod) corev1.ResourceList { return p.Spec.Containers[0].Resources.Limits }
	for _, tc := range []struct {
		name               string
		old                *corev1.Pod
		wantSpec, wantStat bool
	}{
		{"metadata changed", meta, true, true},
		{"status changed", status, true, false},
		{"spec changed", spec, false, true},
		{"same bytes", newer, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := marshalPod(t, tc.old)
			got := decodeLike(t, b, like, newerBytes)
			plain := &corev1.Pod{}
			if err := plain.Unmarshal(b); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(plain, got) {
				t.Fatalf("differs from the plain decode:\n%s", cmp.Diff(plain, got))
			}
			if same(got.Spec.Volumes, like.Spec.Volumes) != tc.wantSpec || same(got.Status.Conditions, like.Status.Conditions) != tc.wantStat {
				t.Errorf("spec shared %v (want %v), status shared %v (want %v)", same(got.Spec.Volumes, like.Spec.Volumes), tc.wantSpec,
					same(got.Status.Conditions, like.Status.Conditions), tc.wantStat)
			}
			if sameMap(limits(got), limits(like)) || sameMap(got.Annotations, like.Annotations) {
				t.Error("a map is like's")
			}
			if tc.wantSpec && !detectMutations {
				shared := testing.AllocsPerRun(20, func() { _ = DecodePodLike(&corev1.Pod{}, b, like, newerBytes) })
				whole := testing.AllocsPerRun(20, func() { _ = DecodePod(&corev1.Pod{}, b) })
				if shared >= whole/2 {
					t.Errorf("%.0f allocations sharing the spec, %.0f decoding it: want under half", shared, whole)
				}
			}
		})
	}
	t.Run("no like", func(t *testing.T) {
		b := marshalPod(t, meta)
		if got := decodeLike(t, b, nil, nil); got.Annotations["touched"] != "yes" || same(got.Spec.Volumes, like.Spec.Volumes) {
			t.Errorf("decoded like nothing: %+v", got.ObjectMeta)
		}
		if got := decodeLike(t, b, like, []byte{0xff}); same(got.Spec.Volumes, like.Spec.Volumes) {
			t.Error("shared with unreadable like bytes")
		}
	})
}
