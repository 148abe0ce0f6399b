package diet

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"

	"github.com/shardinformer/shardinformer/apisim"
)

// triplets returns three pods that differ only in name and uid.
func triplets() []*corev1.Pod {
	a := apisim.NewPod("ns", "a", 7, apisim.PodOptions{ManagedFields: true})
	pods := []*corev1.Pod{a}
	for _, name := range []string{"b", "c"} {
		p := a.DeepCopy()
		p.Name, p.UID = name, types.UID("uid-"+name)
		pods = append(pods, p)
	}
	return pods
}

func mapPtr(m any) uintptr { return reflect.ValueOf(m).Pointer() }

// path is one way the codec hands a pod to the diet.
type path struct {
	name   string
	encode func(testing.TB, *corev1.Pod) []byte
	plain  func(testing.TB, []byte) *corev1.Pod           // decoded without the diet
	diet   func(testing.TB, *Applier, []byte) *corev1.Pod // decoded and put on the diet as the codec does
}

// paths are protobuf, whose bytes go to ProtoPod (shared before
// decoding), and JSON, whose decoded pods go to Apply (shared after, as are
// pods in CBOR and those decoded by client-go's decoders).
var paths = []path{{
	name:   "protobuf",
	encode: marshalPod,
	plain: func(t testing.TB, b []byte) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := p.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		return p
	},
	diet: func(t testing.TB, a *Applier, b []byte) *corev1.Pod {
		t.Helper()
		p, err := a.ProtoPod(bytes.Clone(b))
		if err != nil {
			t.Fatal(err)
		}
		return p.(*corev1.Pod)
	},
}, {
	name: "json",
	encode: func(t testing.TB, p *corev1.Pod) []byte {
		t.Helper()
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	},
	plain: jsonPod,
	diet: func(t testing.TB, a *Applier, b []byte) *corev1.Pod {
		t.Helper()
		return a.Apply(jsonPod(t, b)).(*corev1.Pod)
	},
}}

func jsonPod(t testing.TB, b []byte) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(b, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDietSharing: the diet's pods equal the plain decode; the full diet
// shares strings and the identical parts without maps (tolerations,
// probes, env, owner references) between pods — from a part's second
// sighting on: the second and third pod share, the first keeps its own —
// never maps (resources, node selector, labels) — those only with
// ShareMaps — and never what differs between pods (containers).
func TestDietSharing(t *testing.T) {
	fixHash(t)
	for _, pa := range paths {
		var raws [][]byte
		for _, p := range triplets() {
			raws = append(raws, pa.encode(t, p))
		}
		for _, sharedMaps := range []bool{false, true} {
			d := New(Config{Intern: true, Compact: true, Share: true, ShareMaps: sharedMaps}, 1)
			var got []*corev1.Pod
			for i, raw := range raws {
				got = append(got, pa.diet(t, d, raw))
				if want := pa.plain(t, raw); !apiequality.Semantic.DeepEqual(want, got[i]) {
					t.Fatalf("%s sharedMaps=%v: pod %d differs from the plain decode", pa.name, sharedMaps, i)
				}
			}
			first, a, b := got[0], got[1], got[2]
			if &first.Spec.Tolerations[0] == &a.Spec.Tolerations[0] || first.Spec.Containers[0].LivenessProbe == a.Spec.Containers[0].LivenessProbe {
				t.Fatalf("%s: a part seen once was cached", pa.name)
			}
			ca, cb := &a.Spec.Containers[0], &b.Spec.Containers[0]
			if &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] || ca.LivenessProbe != cb.LivenessProbe ||
				&ca.Env[0] != &cb.Env[0] || &a.OwnerReferences[0] != &b.OwnerReferences[0] {
				t.Fatalf("%s: tolerations, probe, env or owner references not shared", pa.name)
			}
			sameRes := mapPtr(ca.Resources.Requests) == mapPtr(cb.Resources.Requests)
			sameSel := mapPtr(a.Spec.NodeSelector) == mapPtr(b.Spec.NodeSelector)
			if sameRes != sharedMaps || sameSel != sharedMaps {
				t.Fatalf("%s sharedMaps=%v: resources %v, node selector %v shared", pa.name, sharedMaps, sameRes, sameSel)
			}
			if mapPtr(a.Labels) == mapPtr(b.Labels) || ca == cb {
				t.Fatalf("%s: labels or containers shared", pa.name)
			}
			if unsafeStringData(ca.Image) != unsafeStringData(cb.Image) {
				t.Fatalf("%s: image strings not interned", pa.name)
			}
		}
	}
}

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }

// fixHash makes hashKey FNV-1a until the test ends, so that the keys that
// collide in the interner's tables are the same in every run: a test that
// asserts what is shared must not depend on the process's random seed.
func fixHash(t *testing.T) {
	fixHashTo(t, func(s string) uint64 {
		h := uint64(14695981039346656037)
		for i := range len(s) {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
		return h
	})
}

func fixHashTo(t *testing.T, f func(string) uint64) {
	prev := hashKey
	hashKey = f
	t.Cleanup(func() { hashKey = prev })
}

// TestSeenTwoWays: two parts whose hashes fall in one set of the seen
// table are both remembered, whatever their order pod after pod; a third
// in the same set pushes out the older of the two (x, stored first).
func TestSeenTwoWays(t *testing.T) {
	in := new(interner)
	x, y, z := uint64(7)<<32|2, uint64(7)<<32|4, uint64(6)<<32|8 // one set: slots 6 and 7
	for i, c := range []struct {
		h    uint64
		want bool
	}{{x, false}, {y, false}, {x, true}, {y, true}, {z, false}, {y, true}, {x, false}} {
		if got := in.seenBefore(c.h); got != c.want {
			t.Fatalf("step %d: seenBefore(%#x) = %v, want %v", i, c.h, got, c.want)
		}
	}
}

// TestInterner: canonical returns an equal string, the first copy it saw
// while that stays cached; a string that was used is not replaced by one
// miss on its slot (second chance) but is by the next one after that.
func TestInterner(t *testing.T) {
	fixHash(t)
	in := new(interner)
	a := string([]byte("kube-system"))
	b := string([]byte("kube-system"))
	if got := in.canonical(a); unsafeStringData(got) != unsafeStringData(a) {
		t.Fatal("a miss did not return its own string")
	}
	if got := in.canonical(b); got != b || unsafeStringData(got) != unsafeStringData(a) {
		t.Fatal("a hit did not return the cached copy")
	}
	slot := func(s string) uint64 { return hashKey(s) & (internSlots - 1) }
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
// diet, with and without shared maps, to the plain decode — protobuf pods
// through sharing before decoding, JSON through sharing after — and parts
// are shared. (wire's TestDifferential decodes such pods through a
// ListerWatcher, with several workers.)
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
		pods := make([]*corev1.Pod, 12)
		for i := range pods {
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
			pods[i] = p
		}
		for _, pa := range paths {
			raws := make([][]byte, len(pods))
			for i, p := range pods {
				raws[i] = pa.encode(t, p)
			}
			for _, shared := range []bool{false, true} {
				d := New(Config{Intern: true, Compact: true, Share: true, ShareMaps: shared}, 1)
				got := make([]*corev1.Pod, len(raws))
				for i, raw := range raws {
					got[i] = pa.diet(t, d, raw)
					if want := pa.plain(t, raw); !apiequality.Semantic.DeepEqual(want, got[i]) {
						t.Fatalf("seed %d %s shared=%v: pod %d differs from the plain decode:\n%s", seed, pa.name, shared, i,
							cmp.Diff(want, got[i]))
					}
					for k := range i {
						a, b := got[k], got[i]
						if len(a.Spec.Containers) > 0 && len(b.Spec.Containers) > 0 && len(a.Spec.Containers[0].Env) > 0 &&
							len(b.Spec.Containers[0].Env) > 0 && &a.Spec.Containers[0].Env[0] == &b.Spec.Containers[0].Env[0] {
							sharedEnv++
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

// dietPods decodes each of raws with d.ProtoPod and checks that it equals
// the plain unmarshal.
func dietPods(t *testing.T, d *Applier, raws [][]byte) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, len(raws))
	for i, raw := range raws {
		var want corev1.Pod
		if err := want.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		got, err := d.ProtoPod(bytes.Clone(raw))
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if !apiequality.Semantic.DeepEqual(&want, got) {
			t.Fatalf("pod %d differs from the plain decode:\n%s", i, cmp.Diff(&want, got))
		}
		out[i] = got.(*corev1.Pod)
	}
	return out
}

// withoutVersions is New(c, 1) without the table of previous versions,
// for tests and benchmarks of what pods share with other pods alone.
func withoutVersions(c Config) *Applier {
	d := New(c, 1)
	d.versions = nil
	return d
}

// cachedParts counts the values an interner caches for sharing.
func cachedParts(in *interner) int {
	n := 0
	for i := range in.shared {
		if in.shared[i].val != nil {
			n++
		}
	}
	return n
}

// TestShareSightings: a part seen once is not cached (no slot, no copy of
// its bytes, nothing shared); on its second sighting the pod's value is
// cached, and every later pod with the same bytes shares it.
func TestShareSightings(t *testing.T) {
	fixHash(t)
	base := apisim.NewPod("ns", "p", 7, apisim.PodOptions{})
	raws := make([][]byte, 5)
	for i := range raws {
		p := base.DeepCopy()
		p.Name, p.UID = fmt.Sprintf("p-%d", i), types.UID(fmt.Sprint(i))
		raws[i], _ = p.Marshal()
	}
	in := new(interner)
	d := withoutVersions(Config{Intern: true, Compact: true, Share: true})
	d.interners.put(in)
	once := dietPods(t, d, raws[:1])
	if n := cachedParts(in); n != 0 {
		t.Fatalf("%d parts cached after one sighting, want 0", n)
	}
	pods := append(once, dietPods(t, d, raws[1:])...)
	if cachedParts(in) == 0 {
		t.Fatal("nothing cached after the second sighting")
	}
	tol := func(p *corev1.Pod) *corev1.Toleration { return &p.Spec.Tolerations[0] }
	probe := func(p *corev1.Pod) *corev1.Probe { return p.Spec.Containers[0].LivenessProbe }
	if tol(pods[0]) == tol(pods[1]) || probe(pods[0]) == probe(pods[1]) {
		t.Fatal("the first sighting's parts were shared")
	}
	for i := 2; i < len(pods); i++ {
		if tol(pods[i]) != tol(pods[1]) || probe(pods[i]) != probe(pods[1]) {
			t.Fatalf("pod %d does not share the second sighting's parts", i)
		}
	}
}

// TestShareHashCollision: with every sharing key hashed alike (one set of
// the cache and one slot of the seen table for all parts), pods whose
// parts differ still decode to the plain decode and never share a part
// with different bytes; parts with equal bytes still share.
func TestShareHashCollision(t *testing.T) {
	mk := func(seed int64, tier string) []byte {
		p := apisim.NewPod("ns", fmt.Sprintf("p-%d", seed), seed, apisim.PodOptions{})
		p.Spec.Tolerations[2].Value = tier
		b, _ := p.Marshal()
		return b
	}
	// a and b differ in their tolerations (and more); each comes three
	// times, interleaved.
	a, b := mk(1, "a"), mk(2, "b")
	raws := [][]byte{a, b, a, b, a, b}
	fixHash(t)
	for _, collide := range []bool{false, true} {
		in := new(interner)
		if collide {
			fixHashTo(t, func(string) uint64 { return 42 })
		}
		d := withoutVersions(Config{Intern: true, Compact: true, Share: true, ShareMaps: true, Classes: InternAll})
		d.interners.put(in)
		pods := dietPods(t, d, raws)
		tol := func(i int) *corev1.Toleration { return &pods[i].Spec.Tolerations[0] }
		for i := range pods {
			for j := range i {
				if (i-j)%2 == 1 && tol(i) == tol(j) {
					t.Fatalf("collide=%v: pods %d and %d share tolerations that differ", collide, j, i)
				}
			}
		}
		if !collide && tol(4) != tol(2) {
			t.Fatal("equal tolerations not shared")
		}
	}
}
