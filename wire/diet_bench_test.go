package wire

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkDiet measures the diet's walk alone on decoded realistic pods
// (without managedFields): ns per pod.
func BenchmarkDiet(b *testing.B) {
	src := benchPods(1000)
	raws := make([][]byte, len(src))
	for i, p := range src {
		p.ManagedFields = nil
		raws[i], _ = p.Marshal()
	}
	for _, v := range []struct {
		name string
		d    diet
	}{{"intern", diet{intern: true, classes: internDefault}}, {"compact", diet{compact: true}}} {
		b.Run("diet="+v.name, func(b *testing.B) {
			pods := make([]*corev1.Pod, len(raws))
			for i := 0; i < b.N; i++ {
				j := i % len(raws)
				if j == 0 {
					b.StopTimer()
					for k, raw := range raws {
						pods[k] = &corev1.Pod{}
						pods[k].Unmarshal(raw)
					}
					b.StartTimer()
				}
				v.d.apply(pods[j])
			}
		})
	}
}
