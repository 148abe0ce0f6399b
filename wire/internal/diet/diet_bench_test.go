package diet

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardinformer/shardinformer/apisim"
)

// benchPods returns 1000 realistic pods without managedFields (the codec
// cuts them before the diet sees a pod), and their protobuf bytes.
func benchPods() ([]*corev1.Pod, [][]byte) {
	pods := make([]*corev1.Pod, 1000)
	raws := make([][]byte, len(pods))
	for i := range pods {
		pods[i] = apisim.NewPod(fmt.Sprintf("ns-%d", i%20), fmt.Sprintf("pod-%06d", i), int64(i), apisim.PodOptions{ManagedFields: true})
		pods[i].ManagedFields = nil
		raws[i], _ = pods[i].Marshal()
	}
	return pods, raws
}

// BenchmarkDiet measures the diet's steps alone on decoded realistic pods
// (without managedFields), one interner for the run as one decoder has:
// ns per pod for each interned field class, compaction, sharing and the
// whole of WithDiet after the decode. BenchmarkHeapPerPod has what each
// saves.
func BenchmarkDiet(b *testing.B) {
	_, raws := benchPods()
	cases := []struct {
		name string
		c    Config
	}{
		{"intern=default", Config{Intern: true}},
		{"compact", Config{Compact: true}},
		{"share", Config{Share: true}},
		{"full", Config{Intern: true, Compact: true, Share: true}},
	}
	for _, c := range InternClasses {
		cases = append(cases, struct {
			name string
			c    Config
		}{"intern/class=" + c.Name, Config{Intern: true, Classes: c.Class}})
	}
	for _, v := range cases {
		b.Run("diet="+v.name, func(b *testing.B) {
			d := withoutVersions(v.c)
			pods := make([]*corev1.Pod, len(raws))
			for i := 0; i < b.N; i++ {
				j := i % len(raws)
				if j == 0 {
					b.StopTimer()
					for k, raw := range raws {
						pods[k] = &corev1.Pod{}
						if err := pods[k].Unmarshal(raw); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
				d.Apply(pods[j])
			}
		})
	}
}

// BenchmarkDietDecode measures decoding realistic pods (without
// managedFields) from their bytes, plainly and with WithDiet, which
// shares parts before decoding (shareproto.go): ns per pod, one interner
// for the run as one decoder has.
func BenchmarkDietDecode(b *testing.B) {
	_, raws := benchPods()
	for _, v := range []struct {
		name string
		c    Config
	}{
		{"none", Config{}},
		{"full", Config{Intern: true, Compact: true, Share: true}},
		{"full+shared-maps", Config{Intern: true, Compact: true, Share: true, ShareMaps: true}},
	} {
		b.Run("diet="+v.name, func(b *testing.B) {
			d := withoutVersions(v.c)
			for i := 0; i < b.N; i++ {
				raw := raws[i%len(raws)]
				if !d.On() {
					var p corev1.Pod
					if err := p.Unmarshal(raw); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, err := d.ProtoPod(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUpdateDecode decodes updates of realistic pods (without
// managedFields) whose previous versions are alive, as a watch does:
// change=meta changes an annotation and the resourceVersion (what
// loadgen's churn writes), change=status a condition as well (what the
// kubelet writes); change=none is a relisted pod that did not change (the
// same bytes). versions=off is WithDiet without the table of previous
// versions, versions=on with it (versions.go); maps=shared is
// WithSharedValues.
func BenchmarkUpdateDecode(b *testing.B) {
	src, first := benchPods()
	updates := map[string][][]byte{"none": first, "meta": make([][]byte, len(src)), "status": make([][]byte, len(src))}
	for i, p := range src {
		p.ResourceVersion, p.Annotations["example.com/touched"] = "2", "yes"
		updates["meta"][i], _ = p.Marshal()
		p.Status.Conditions[0].LastTransitionTime.Time = p.Status.Conditions[0].LastTransitionTime.Add(time.Second)
		updates["status"][i], _ = p.Marshal()
	}
	for _, change := range []string{"none", "meta", "status"} {
		for _, v := range []struct {
			name           string
			versions, maps bool
		}{{"versions=off", false, false}, {"versions=on", true, false}, {"versions=on/maps=shared", true, true}} {
			b.Run("change="+change+"/"+v.name, func(b *testing.B) {
				d := New(Config{Intern: true, Compact: true, Share: true, ShareMaps: v.maps}, 1)
				if !v.versions {
					d.versions = nil
				}
				alive := make([]runtime.Object, len(first))
				for i, raw := range first {
					var err error
					if alive[i], err = d.ProtoPod(raw); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var err error // the latest version stays alive, as in a cache
					if alive[i%len(first)], err = d.ProtoPod(updates[change][i%len(first)]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
