package diet_test

import (
	"fmt"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardinformer/shardinformer/wire/internal/diet"
)

// A pod updated in its labels only takes its previous version's spec
// instead of decoding it: the two versions share the spec's slices.
func Example() {
	d := diet.New(diet.Config{Intern: true, Compact: true, Share: true}, 1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", ResourceVersion: "7"},
		Spec:       corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "spot", Effect: corev1.TaintEffectNoSchedule}}},
	}
	var versions []*corev1.Pod
	for _, rv := range []string{"7", "8"} {
		pod.ResourceVersion = rv
		b, err := pod.Marshal()
		if err != nil {
			panic(err)
		}
		obj, err := d.ProtoPod(b) // as the codec does for protobuf pods when sharing
		if err != nil {
			panic(err)
		}
		versions = append(versions, obj.(*corev1.Pod))
	}
	fmt.Println(d.Config.String())
	fmt.Println("spec shared:", unsafe.SliceData(versions[0].Spec.Tolerations) == unsafe.SliceData(versions[1].Spec.Tolerations))
	// Output:
	// , diet (interned, compacted, shared)
	// spec shared: true
}
