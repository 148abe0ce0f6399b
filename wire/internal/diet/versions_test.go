package diet

import (
	"fmt"
	"hash/maphash"
	"math/rand"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"

	"github.com/shardinformer/shardinformer/apisim"
)

// versionsDiet is WithDiet's diet (without drop), which has a versions
// table.
func versionsDiet(shareMaps bool) *Applier {
	return New(Config{Intern: true, Compact: true, Share: true, ShareMaps: shareMaps}, 1)
}

func marshalPod(t testing.TB, p *corev1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// same reports whether two slices share their array.
func same[T any](a, b []T) bool { return len(a) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b) }

func sameMap[K comparable, V any](a, b map[K]V) bool {
	return a != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestVersionReuse: an update takes the previous version's spec and status
// when their bytes did not change, and decodes the part that did; every
// version equals the plain decode of its bytes (dietPods); maps are the
// pod's own unless shared values are on.
func TestVersionReuse(t *testing.T) {
	for _, shareMaps := range []bool{false, true} {
		t.Run(fmt.Sprintf("shareMaps=%v", shareMaps), func(t *testing.T) {
			d := versionsDiet(shareMaps)
			v1 := apisim.NewPod("ns", "p", 7, apisim.PodOptions{})
			v2 := v1.DeepCopy()
			v2.ResourceVersion, v2.Annotations["touched"] = "2", "yes"
			v3 := v2.DeepCopy()
			v3.ResourceVersion, v3.Status.Conditions[0].Reason = "3", "Changed"
			v4 := v3.DeepCopy()
			v4.ResourceVersion, v4.Spec.Containers[0].Image = "4", "other:1"
			pods := dietPods(t, d, [][]byte{marshalPod(t, v1), marshalPod(t, v2), marshalPod(t, v3), marshalPod(t, v4)})
			p1, p2, p3, p4 := pods[0], pods[1], pods[2], pods[3]
			limits := func(p *corev1.Pod) corev1.ResourceList { return p.Spec.Containers[0].Resources.Limits }
			// v2: only metadata changed.
			if !same(p2.Spec.Volumes, p1.Spec.Volumes) || !same(p2.Status.Conditions, p1.Status.Conditions) {
				t.Fatal("v2 did not reuse v1's spec and status")
			}
			if sameMap(limits(p2), limits(p1)) != shareMaps {
				t.Fatalf("v2 shares v1's resource limits: %v, want %v", !shareMaps, shareMaps)
			}
			if !shareMaps && same(p2.Spec.Containers, p1.Spec.Containers) {
				t.Fatal("v2's containers, which hold maps, are v1's array")
			}
			if sameMap(p2.Annotations, p1.Annotations) {
				t.Fatal("v2's metadata was not decoded")
			}
			// v3: status changed, spec reused.
			if !same(p3.Spec.Volumes, p2.Spec.Volumes) || same(p3.Status.Conditions, p2.Status.Conditions) {
				t.Fatal("v3: want v2's spec and a new status")
			}
			// v4: spec changed, status reused.
			if same(p4.Spec.Volumes, p3.Spec.Volumes) || !same(p4.Status.Conditions, p3.Status.Conditions) {
				t.Fatal("v4: want a new spec and v3's status")
			}
			if p3.Spec.Containers[0].Image == p4.Spec.Containers[0].Image {
				t.Fatal("v4's image not decoded")
			}
		})
	}
}

// TestVersionsKeepNothingAlive: the table does not keep a pod in memory;
// once the pod is collected its key finds nothing, and the next version is
// decoded whole.
func TestVersionsKeepNothingAlive(t *testing.T) {
	d := versionsDiet(false)
	v1 := apisim.NewPod("ns", "p", 7, apisim.PodOptions{})
	raw := marshalPod(t, v1)
	h := keyHash(d.versions.seeds[0], []byte("ns/p"))
	pods := dietPods(t, d, [][]byte{raw})
	if p, _ := d.versions.load(h, []byte("ns"), []byte("p")); p != pods[0] {
		t.Fatal("the decoded pod is not the key's version")
	}
	pods = nil
	runtime.GC()
	runtime.GC()
	if p, _ := d.versions.load(h, []byte("ns"), []byte("p")); p != nil {
		t.Fatal("the table kept a pod alive")
	}
	dietPods(t, d, [][]byte{raw}) // decoded whole, equal to the plain decode
	runtime.KeepAlive(pods)
}

// TestVersionsKeyCollision: with every key hashed alike, pods of different
// keys replace each other's entry and never take each other's parts.
func TestVersionsKeyCollision(t *testing.T) {
	prev := keyHash
	keyHash = func(maphash.Seed, []byte) uint64 { return 42 }
	t.Cleanup(func() { keyHash = prev })
	d := versionsDiet(false)
	a := apisim.NewPod("ns", "a", 1, apisim.PodOptions{})
	b := a.DeepCopy() // same spec and status bytes, another key
	b.Name = "b"
	pods := dietPods(t, d, [][]byte{marshalPod(t, a), marshalPod(t, b), marshalPod(t, a)})
	if same(pods[1].Spec.Volumes, pods[0].Spec.Volumes) || same(pods[2].Spec.Volumes, pods[1].Spec.Volumes) {
		t.Fatal("a pod took the parts of another key's pod")
	}
	if same(pods[2].Spec.Volumes, pods[0].Spec.Volumes) {
		t.Fatal("a's entry survived b's, which hashes alike")
	}
}

// TestVersionsShapes: a pod whose metadata comes twice (merged by the
// unmarshaler) or that has no name is neither looked up nor stored;
// garbage reports the plain decode's error and stores nothing.
func TestVersionsShapes(t *testing.T) {
	d := versionsDiet(false)
	p := apisim.NewPod("ns", "p", 7, apisim.PodOptions{})
	raw := marshalPod(t, p)
	meta, err := p.ObjectMeta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	twice := append(append([]byte{0x0a}, appendUvarint(nil, uint64(len(meta)))...), meta...)
	twice = append(twice, raw...) // metadata, then the whole pod
	noName := p.DeepCopy()
	noName.Name = ""
	dietPods(t, d, [][]byte{twice, marshalPod(t, noName)})
	if _, err := d.ProtoPod([]byte{0x12, 0x05, 0x01}); err == nil {
		t.Fatal("garbage decoded")
	}
	if n := entries(d.versions); n != 0 {
		t.Fatalf("%d entries stored, want 0", n)
	}
}

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func entries(v *versions) int {
	n := 0
	for i := range v.stripes {
		s := &v.stripes[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// TestVersionsSweep: entries of collected pods are swept as new keys come
// in, so the table stays near the number of pods alive, not of keys seen.
func TestVersionsSweep(t *testing.T) {
	d := versionsDiet(false)
	base := apisim.NewPod("ns", "p", 7, apisim.PodOptions{})
	const batch, batches = 2000, 10
	for i := range batches {
		raws := make([][]byte, batch)
		for j := range raws {
			p := base.DeepCopy()
			p.Name = fmt.Sprintf("p-%d-%d", i, j)
			raws[j] = marshalPod(t, p)
		}
		for _, raw := range raws {
			if _, err := d.ProtoPod(raw); err != nil { // dropped at once
				t.Fatal(err)
			}
		}
		runtime.GC()
	}
	if n := entries(d.versions); n > 3*batch+versionStripes*sweepMin {
		t.Fatalf("%d entries after %d keys with at most %d pods alive", n, batch*batches, batch)
	}
}

// TestUnshareMaps: a shallow copy of a PodSpec and a PodStatus filled at
// random, every map and pointer set, shares none of its maps with the
// original after unshareSpecMaps and unshareStatusMaps, and equals it. A
// map-holding field added to k8s.io/api fails it until handled.
func TestUnshareMaps(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), scheme.Codecs).NilChance(0).NumElements(1, 2).
			Funcs(func(q *resource.Quantity, c randfill.Continue) {
				*q = *resource.NewQuantity(c.Int63n(1000), resource.DecimalSI)
			})
		var spec corev1.PodSpec
		var status corev1.PodStatus
		f.Fill(&spec)
		f.Fill(&status)
		s, st := spec, status
		unshareSpecMaps(&s)
		unshareStatusMaps(&st)
		for _, c := range []struct {
			name      string
			orig, cpy any
		}{{"spec", &spec, &s}, {"status", &status, &st}} {
			if !reflect.DeepEqual(c.orig, c.cpy) {
				t.Fatalf("seed %d: the %s's copy differs", seed, c.name)
			}
			orig, cpy := mapsIn(reflect.ValueOf(c.orig), "", nil), mapsIn(reflect.ValueOf(c.cpy), "", nil)
			if len(orig) < 5 {
				t.Fatalf("seed %d: only %d maps in the random %s", seed, len(orig), c.name)
			}
			for p, path := range cpy {
				if _, ok := orig[p]; ok {
					t.Errorf("seed %d: %s%s is shared", seed, c.name, path)
				}
			}
		}
	}
}

// mapsIn returns the maps reachable from v, with a path to each.
func mapsIn(v reflect.Value, path string, out map[unsafe.Pointer]string) map[unsafe.Pointer]string {
	if out == nil {
		out = map[unsafe.Pointer]string{}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			mapsIn(v.Elem(), path, out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			mapsIn(v.Field(i), path+"."+v.Type().Field(i).Name, out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			mapsIn(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Map:
		if !v.IsNil() {
			out[v.UnsafePointer()] = path
			for it := v.MapRange(); it.Next(); {
				mapsIn(it.Value(), path+"[…]", out)
			}
		}
	}
	return out
}

// TestVersionsConcurrent: decoders on several goroutines decode versions of
// the same pods at once (each version's spec, status or labels changed, or
// nothing), as a watch's workers do; every pod equals the plain decode of
// its bytes, whichever version the table held when it was looked up. Run
// under -race.
func TestVersionsConcurrent(t *testing.T) {
	const workers, keys, versionsPerKey = 4, 16, 12
	d := versionsDiet(false)
	d.interners = newInterners(workers)
	raws := make([][]byte, 0, keys*versionsPerKey)
	for k := range keys {
		p := apisim.NewPod("ns", fmt.Sprintf("p-%d", k), int64(k), apisim.PodOptions{})
		for v := range versionsPerKey {
			p = p.DeepCopy()
			p.ResourceVersion = fmt.Sprint(v)
			switch v % 4 {
			case 1:
				p.Spec.Containers[0].Image = fmt.Sprintf("image:%d", v)
			case 2:
				p.Status.Conditions[0].Reason = fmt.Sprintf("Reason%d", v)
			case 3:
				p.Labels["version"] = fmt.Sprint(v)
			}
			raws = append(raws, marshalPod(t, p))
		}
	}
	rand.New(rand.NewSource(1)).Shuffle(len(raws), func(i, j int) { raws[i], raws[j] = raws[j], raws[i] })
	var wg sync.WaitGroup
	kept := make([]*corev1.Pod, len(raws)) // every version stays alive, as handlers may hold them
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(raws); i += workers {
				var want corev1.Pod
				if err := want.Unmarshal(raws[i]); err != nil {
					t.Error(err)
					return
				}
				got, err := d.ProtoPod(raws[i])
				if err != nil {
					t.Error(err)
					return
				}
				if !apiequality.Semantic.DeepEqual(&want, got) {
					t.Errorf("version %d differs from the plain decode:\n%s", i, cmp.Diff(&want, got))
					return
				}
				kept[i] = got.(*corev1.Pod)
			}
		})
	}
	wg.Wait()
	runtime.KeepAlive(kept)
}
