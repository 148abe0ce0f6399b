package wire

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/shardinformer/shardinformer/apisim"
)

// TestWithoutDiet: WithoutDiet undoes the diet of the options before it,
// and steps after it apply.
func TestWithoutDiet(t *testing.T) {
	configure := func(opts ...Option) config {
		var c config
		for _, o := range opts {
			o(&c)
		}
		return c
	}
	if c := configure(WithDiet(), WithSharedValues(), WithoutDiet()); c.diet.On() || c.diet.Sharing() {
		t.Errorf("WithDiet, WithSharedValues, WithoutDiet: diet %+v is on", c.diet)
	}
	c := configure(WithDiet(), WithoutDiet(), WithInterning())
	if d := c.diet; !d.Intern || d.DropManagedFields || d.Compact || d.Sharing() {
		t.Errorf("WithDiet, WithoutDiet, WithInterning: diet %+v, want interning only", d)
	}
}

// TestDietThroughCodec: the codec hands every object to the diet at the
// seam (internal/diet's tests check the diet itself there): through a
// ListerWatcher, pods of one template decode with WithDiet to the plain
// decode without managedFields, and the later ones share parts without
// maps, never maps — those only with WithSharedValues — in every format;
// protobuf pods go to diet.Applier.ProtoPod, where an update takes the
// spec of its previous version. (Whether a given part is shared depends on
// the process's hash seed, which tests of the diet fix; here any of a few
// shared parts will do.)
func TestDietThroughCodec(t *testing.T) {
	base := apisim.NewPod("ns", "p", 7, apisim.PodOptions{ManagedFields: true})
	var events []watch.Event
	for i := range 6 {
		p := base.DeepCopy()
		p.Name, p.UID = fmt.Sprintf("p-%d", i), types.UID(fmt.Sprint(i))
		events = append(events, watch.Event{Type: watch.Added, Object: p})
	}
	update := events[0].Object.(*corev1.Pod).DeepCopy()
	update.ResourceVersion, update.Annotations["touched"] = "8", "yes"
	events = append(events, watch.Event{Type: watch.Modified, Object: update})
	ptr := func(v any) uintptr { return reflect.ValueOf(v).Pointer() }
	for _, f := range formats {
		res := Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}
		stream := encodeWatch(t, f, events, podGV)
		plain := wireWatch(testLW(t, res, WithContentType(f.contentType())), stream)
		for _, sharedMaps := range []bool{false, true} {
			opts := []Option{WithContentType(f.contentType()), WithWorkers(1), WithDiet()}
			if sharedMaps {
				opts = append(opts, WithSharedValues())
			}
			got := wireWatch(testLW(t, res, opts...), stream)
			if len(got) != len(plain) {
				t.Fatalf("%s: %d events, want %d", f, len(got), len(plain))
			}
			for i := range got {
				want := plain[i].Object.(*corev1.Pod).DeepCopy()
				want.ManagedFields = nil
				if !apiequality.Semantic.DeepEqual(want, got[i].Object) {
					t.Fatalf("%s sharedMaps=%v: pod %d differs from the plain decode", f, sharedMaps, i)
				}
			}
			a, b := got[4].Object.(*corev1.Pod), got[5].Object.(*corev1.Pod)
			ca, cb := &a.Spec.Containers[0], &b.Spec.Containers[0]
			if &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] && ca.LivenessProbe != cb.LivenessProbe &&
				&ca.Env[0] != &cb.Env[0] && &a.OwnerReferences[0] != &b.OwnerReferences[0] {
				t.Fatalf("%s: neither tolerations, probe, env nor owner references shared", f)
			}
			sameRes := ptr(ca.Resources.Requests) == ptr(cb.Resources.Requests)
			sameSel := ptr(a.Spec.NodeSelector) == ptr(b.Spec.NodeSelector)
			if sharedMaps != (sameRes || sameSel) {
				t.Fatalf("%s sharedMaps=%v: resources %v, node selector %v shared", f, sharedMaps, sameRes, sameSel)
			}
			if ptr(a.Labels) == ptr(b.Labels) || ca == cb {
				t.Fatalf("%s: labels or containers shared", f)
			}
			first, next := got[0].Object.(*corev1.Pod), got[6].Object.(*corev1.Pod)
			if reused := unsafe.SliceData(first.Spec.Volumes) == unsafe.SliceData(next.Spec.Volumes); reused != (f == formatProtobuf) {
				t.Fatalf("%s: the update took its previous version's spec: %v, want %v (protobuf only)", f, reused, f == formatProtobuf)
			}
		}
	}
}
