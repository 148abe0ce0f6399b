//go:build e2e

package e2e

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/wire"
)

// TestUpdatesReuseUnchangedParts: on kube-apiserver's protobuf, a pod
// update through the wire decoder with WithDiet takes the unchanged spec
// (and status) of the version before it — the update handler's old and new
// pods share the spec's map-free slices — with the maps in it the new
// pod's own; what changed is decoded. A status update keeps the spec
// shared and decodes the status.
func TestUpdatesReuseUnchangedParts(t *testing.T) {
	cl := sharedCluster(t)
	admin, err := kubernetes.NewForConfig(cl.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := "e2e-versions-" + rand.String(6)
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := newPod(ns, 0, 0)
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "example.com/tier", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if _, err := admin.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	lw, err := wire.NewForConfig(cl.RESTConfig(), wire.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: ns, Object: &corev1.Pod{}}, wire.WithDiet())
	if err != nil {
		t.Fatal(err)
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	updates := make(chan [2]*corev1.Pod, 4)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		updates <- [2]*corev1.Pod{o.(*corev1.Pod), n.(*corev1.Pod)}
	}}); err != nil {
		t.Fatal(err)
	}
	go inf.RunWithContext(t.Context())
	if !cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
	next := func() (old, cur *corev1.Pod) {
		t.Helper()
		select {
		case u := <-updates:
			return u[0], u[1]
		case <-time.After(30 * time.Second):
			t.Fatal("no update event")
		}
		return nil, nil
	}
	sharesSpec := func(old, cur *corev1.Pod) bool {
		return unsafe.SliceData(old.Spec.Tolerations) == unsafe.SliceData(cur.Spec.Tolerations)
	}
	sameMap := func(a, b corev1.ResourceList) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}

	patch := []byte(`{"metadata":{"annotations":{"example.com/touched":"yes"}}}`)
	if _, err := admin.CoreV1().Pods(ns).Patch(t.Context(), pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	old, cur := next()
	if cur.Annotations["example.com/touched"] != "yes" || !sharesSpec(old, cur) {
		t.Fatalf("annotation update: decoded %v, spec shared %v", cur.Annotations, sharesSpec(old, cur))
	}
	if sameMap(cur.Spec.Containers[0].Resources.Limits, old.Spec.Containers[0].Resources.Limits) {
		t.Fatal("annotation update: the resource limits map is the previous version's")
	}

	st := cur.DeepCopy()
	st.Status.Conditions = append(st.Status.Conditions, corev1.PodCondition{Type: "example.com/Ready", Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	if _, err := admin.CoreV1().Pods(ns).UpdateStatus(t.Context(), st, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	old, cur = next()
	if !sharesSpec(old, cur) || len(cur.Status.Conditions) != len(old.Status.Conditions)+1 {
		t.Fatalf("status update: spec shared %v, conditions %d after %d", sharesSpec(old, cur), len(cur.Status.Conditions), len(old.Status.Conditions))
	}
}
