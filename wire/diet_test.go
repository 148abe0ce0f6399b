package wire

import (
	"fmt"
	"hash/maphash"
	"math/rand"
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/shardinformer/shardinformer/apisim"
)

// twins returns two pods that differ only in name and uid.
func twins() []watch.Event {
	a := apisim.NewPod("ns", "a", 7, apisim.PodOptions{ManagedFields: true})
	b := a.DeepCopy()
	b.Name, b.UID = "b", "uid-b"
	return []watch.Event{{Type: watch.Added, Object: a}, {Type: watch.Added, Object: b}}
}

func mapPtr(m any) uintptr { return reflect.ValueOf(m).Pointer() }

// TestDietSharing: the diet's objects equal the plain decode without
// managedFields; WithDiet shares strings and the identical parts without
// maps (tolerations, probes, env, owner references) between pods, never
// maps (resources, node selector, labels) — those only with
// WithSharedValues — and never what differs between pods (containers).
func TestDietSharing(t *testing.T) {
	for _, f := range formats {
		stream := encodeWatch(t, f, twins(), podGV)
		plain := wireWatch(testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithContentType(f.contentType())), stream)
		for _, sharedMaps := range []bool{false, true} {
			opts := []Option{WithContentType(f.contentType()), WithWorkers(1), WithDiet()}
			if sharedMaps {
				opts = append(opts, WithSharedValues())
			}
			got := wireWatch(testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, opts...), stream)
			for i := range got {
				want := plain[i].Object.(*corev1.Pod).DeepCopy()
				want.ManagedFields = nil
				if !apiequality.Semantic.DeepEqual(want, got[i].Object) {
					t.Fatalf("%s sharedMaps=%v: pod %d differs from the plain decode", f, sharedMaps, i)
				}
			}
			a, b := got[0].Object.(*corev1.Pod), got[1].Object.(*corev1.Pod)
			ca, cb := &a.Spec.Containers[0], &b.Spec.Containers[0]
			if &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] || ca.LivenessProbe != cb.LivenessProbe ||
				&ca.Env[0] != &cb.Env[0] || &a.OwnerReferences[0] != &b.OwnerReferences[0] {
				t.Fatalf("%s: tolerations, probe, env or owner references not shared", f)
			}
			sameRes := mapPtr(ca.Resources.Requests) == mapPtr(cb.Resources.Requests)
			sameSel := mapPtr(a.Spec.NodeSelector) == mapPtr(b.Spec.NodeSelector)
			if sameRes != sharedMaps || sameSel != sharedMaps {
				t.Fatalf("%s sharedMaps=%v: resources %v, node selector %v shared", f, sharedMaps, sameRes, sameSel)
			}
			if mapPtr(a.Labels) == mapPtr(b.Labels) || ca == cb {
				t.Fatalf("%s: labels or containers shared", f)
			}
			if f == formatProtobuf && unsafeStringData(ca.Image) != unsafeStringData(cb.Image) {
				t.Fatalf("image strings not interned")
			}
		}
	}
}

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }

// TestInterner: canonical returns an equal string, the first copy it saw
// while that stays cached; a string that was used is not replaced by one
// miss on its slot (second chance) but is by the next one after that.
func TestInterner(t *testing.T) {
	in := new(interner)
	a := string([]byte("kube-system"))
	b := string([]byte("kube-system"))
	if got := in.canonical(a); unsafeStringData(got) != unsafeStringData(a) {
		t.Fatal("a miss did not return its own string")
	}
	if got := in.canonical(b); got != b || unsafeStringData(got) != unsafeStringData(a) {
		t.Fatal("a hit did not return the cached copy")
	}
	slot := func(s string) uint64 { return maphash.String(internSeed, s) & (internSlots - 1) }
	var rival string
	for i := 0; rival == ""; i++ {
		if s := fmt.Sprintf("rival-%d", i); slot(s) == slot(a) {
			rival = s
		}
	}
	if got := in.canonical(rival); got != rival {
		t.Fatal("canonical changed a string's value")
	}
	if got := in.canonical(b); unsafeStringData(got) != unsafeStringData(a) {
		t.Fatal("a used string lost its slot to one miss")
	}
	in.canonical(rival) // clears the second chance b's hit gave a
	if got := in.canonical(rival); unsafeStringData(got) != unsafeStringData(rival) {
		t.Fatal("rival did not replace an unused string")
	}
	if got := in.canonical(b); unsafeStringData(got) != unsafeStringData(b) {
		t.Fatal("a evicted, but b did not become the canonical copy")
	}
}

// TestDietSharingRandom: pods made of random parts that repeat across
// them (randfill pods, each part of a container, the spec and the volumes
// copied from one of a few random pods or random itself) decode with the
// diet, with and without shared maps and for 1 and 2 workers, to the plain
// decode without managedFields — protobuf pods through sharing before
// decoding, JSON through sharing after — and parts are shared.
func TestDietSharingRandom(t *testing.T) {
	sharedEnv := 0
	for seed := int64(0); seed < 30; seed++ {
		r := rand.New(rand.NewSource(seed))
		f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
		bases := make([]*corev1.Pod, 3)
		for i := range bases {
			bases[i] = &corev1.Pod{}
			f.Fill(bases[i])
			bases[i].TypeMeta = metav1.TypeMeta{}
		}
		pick := func() *corev1.Pod { return bases[r.Intn(len(bases))] }
		events := make([]watch.Event, 12)
		for i := range events {
			p := pick().DeepCopy()
			p.Name, p.UID, p.ResourceVersion = fmt.Sprintf("pod-%d", i), types.UID(fmt.Sprint(i)), fmt.Sprint(i+1)
			if r.Intn(3) == 0 {
				p.Spec.Tolerations = pick().DeepCopy().Spec.Tolerations
			}
			if q := pick().DeepCopy(); r.Intn(3) == 0 {
				p.Spec.Affinity, p.Spec.NodeSelector, p.OwnerReferences = q.Spec.Affinity, q.Spec.NodeSelector, q.OwnerReferences
			}
			for j := range p.Spec.Volumes {
				if q := pick().DeepCopy(); j < len(q.Spec.Volumes) && r.Intn(2) == 0 {
					p.Spec.Volumes[j].VolumeSource = q.Spec.Volumes[j].VolumeSource
				}
			}
			for j := range p.Spec.Containers {
				c, q := &p.Spec.Containers[j], pick().DeepCopy()
				if j >= len(q.Spec.Containers) {
					continue
				}
				o := &q.Spec.Containers[j]
				switch r.Intn(4) {
				case 0:
					c.Env, c.Args, c.LivenessProbe = o.Env, o.Args, o.LivenessProbe
				case 1:
					c.Resources, c.SecurityContext, c.Ports = o.Resources, o.SecurityContext, o.Ports
				case 2:
					f.Fill(&c.Env)
				}
			}
			events[i] = watch.Event{Type: watch.Added, Object: p}
		}
		for _, fm := range formats {
			stream := encodeWatch(t, fm, events, podGV)
			res := Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}
			plain := wireWatch(testLW(t, res, WithContentType(fm.contentType())), stream)
			for _, shared := range []bool{false, true} {
				for workers := 1; workers <= 2; workers++ {
					opts := []Option{WithContentType(fm.contentType()), WithWorkers(workers), WithDiet()}
					if shared {
						opts = append(opts, WithSharedValues())
					}
					got := wireWatch(testLW(t, res, opts...), stream)
					if len(got) != len(plain) {
						t.Fatalf("seed %d %s: %d events, want %d", seed, fm, len(got), len(plain))
					}
					for i := range got {
						want := plain[i].Object.(*corev1.Pod).DeepCopy()
						want.ManagedFields = nil
						if !apiequality.Semantic.DeepEqual(want, got[i].Object) {
							t.Fatalf("seed %d %s shared=%v workers=%d: pod %d differs from the plain decode:\n%s", seed, fm, shared, workers, i,
								cmp.Diff(want, got[i].Object))
						}
						for k := range i {
							a, b := got[k].Object.(*corev1.Pod), got[i].Object.(*corev1.Pod)
							if len(a.Spec.Containers) > 0 && len(b.Spec.Containers) > 0 && len(a.Spec.Containers[0].Env) > 0 &&
								len(b.Spec.Containers[0].Env) > 0 && &a.Spec.Containers[0].Env[0] == &b.Spec.Containers[0].Env[0] {
								sharedEnv++
							}
						}
					}
				}
			}
		}
	}
	if sharedEnv == 0 {
		t.Fatal("no pods shared an env list: the test does not exercise sharing")
	}
}
