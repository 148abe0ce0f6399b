package wire_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/wire"
)

// podBytes returns the protobuf bytes of 200 realistic pods, with and
// without managedFields.
func podBytes(tb testing.TB) [][]byte {
	var raws [][]byte
	for i := range 200 {
		p := apisim.NewPod(fmt.Sprintf("ns-%d", i%20), fmt.Sprintf("pod-%06d", i), int64(i), apisim.PodOptions{ManagedFields: i%2 == 0})
		b, err := p.Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		raws = append(raws, b)
	}
	return raws
}

// TestUnmarshalPod: UnmarshalPod's result and error are the generated
// unmarshaler's, for realistic pods and for every truncation of one (the
// diet's fuzz tests cover arbitrary bytes).
func TestUnmarshalPod(t *testing.T) {
	raws := podBytes(t)
	for i, b := range raws {
		var got, want corev1.Pod
		if err := wire.UnmarshalPod(&got, b); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if err := want.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(&got, &want) {
			t.Fatalf("pod %d differs from the generated unmarshaler's", i)
		}
	}
	b := raws[0]
	for n := range len(b) {
		var got, want corev1.Pod
		gerr, werr := wire.UnmarshalPod(&got, b[:n]), want.Unmarshal(b[:n])
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%d of %d bytes: error %v, the generated unmarshaler's %v", n, len(b), gerr, werr)
		}
		if werr == nil && !apiequality.Semantic.DeepEqual(&got, &want) {
			t.Fatalf("%d of %d bytes: pod differs from the generated unmarshaler's", n, len(b))
		}
	}
}

// BenchmarkUnmarshalPod decodes realistic pods (half of them with
// managedFields) with the generated unmarshaler and with UnmarshalPod.
func BenchmarkUnmarshalPod(b *testing.B) {
	raws := podBytes(b)
	for _, v := range []struct {
		name string
		f    func(*corev1.Pod, []byte) error
	}{{"generated", (*corev1.Pod).Unmarshal}, {"wire", wire.UnmarshalPod}} {
		b.Run("decoder="+v.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var p corev1.Pod
				if err := v.f(&p, raws[i%len(raws)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// ExampleUnmarshalPod decodes a pod's protobuf bytes.
func ExampleUnmarshalPod() {
	pod := apisim.NewPod("shop", "web-0", 7, apisim.PodOptions{})
	b, _ := pod.Marshal()
	var p corev1.Pod
	if err := wire.UnmarshalPod(&p, b); err != nil {
		panic(err)
	}
	fmt.Println(p.Namespace, p.Name, len(p.Spec.Containers) == len(pod.Spec.Containers))
	// Output: shop web-0 true
}
