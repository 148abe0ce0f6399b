package wire

import (
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/watch"

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
// managedFields; strings may be shared but maps and slices never are,
// unless WithSharedValues asks for it.
func TestDietSharing(t *testing.T) {
	resetFrontCache()
	for _, f := range formats {
		stream := encodeWatch(t, f, twins(), podGV)
		plain := wireWatch(testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, WithContentType(f.contentType())), stream)
		for _, shared := range []bool{false, true} {
			opts := []Option{WithContentType(f.contentType()), WithDiet()}
			if shared {
				opts = append(opts, WithSharedValues())
			}
			got := wireWatch(testLW(t, Resource{GVR: benchPodsGVR, Object: &corev1.Pod{}}, opts...), stream)
			for i := range got {
				want := plain[i].Object.(*corev1.Pod).DeepCopy()
				want.ManagedFields = nil
				if !apiequality.Semantic.DeepEqual(want, got[i].Object) {
					t.Fatalf("%s shared=%v: pod %d differs from the plain decode", f, shared, i)
				}
			}
			a, b := got[0].Object.(*corev1.Pod), got[1].Object.(*corev1.Pod)
			sameRes := mapPtr(a.Spec.Containers[0].Resources.Requests) == mapPtr(b.Spec.Containers[0].Resources.Requests)
			sameSel := mapPtr(a.Spec.NodeSelector) == mapPtr(b.Spec.NodeSelector)
			sameTol := &a.Spec.Tolerations[0] == &b.Spec.Tolerations[0]
			sameProbe := a.Spec.Containers[0].LivenessProbe == b.Spec.Containers[0].LivenessProbe
			if got := sameRes && sameSel && sameTol && sameProbe; got != shared {
				t.Fatalf("%s shared=%v: resources %v, node selector %v, tolerations %v, probe %v shared", f, shared, sameRes, sameSel, sameTol, sameProbe)
			}
			if mapPtr(a.Labels) == mapPtr(b.Labels) || &a.Spec.Containers[0] == &b.Spec.Containers[0] {
				t.Fatalf("%s: labels or containers shared", f)
			}
			if f == formatProtobuf && unsafeStringData(a.Spec.Containers[0].Image) != unsafeStringData(b.Spec.Containers[0].Image) {
				t.Fatalf("image strings not interned")
			}
		}
	}
}

func unsafeStringData(s string) *byte { return unsafe.StringData(s) }
