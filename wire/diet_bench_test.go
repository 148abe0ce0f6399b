package wire

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkDiet measures the diet's steps alone on decoded realistic pods
// (without managedFields), one interner for the run as one decoder has:
// ns per pod for each interned field class, compaction, sharing and the
// whole of WithDiet after the decode. BenchmarkHeapPerPod has what each
// saves.
func BenchmarkDiet(b *testing.B) {
	src := benchPods(1000)
	raws := make([][]byte, len(src))
	for i, p := range src {
		p.ManagedFields = nil
		raws[i], _ = p.Marshal()
	}
	cases := []struct {
		name string
		d    diet
	}{
		{"intern=default", diet{intern: true, classes: internDefault}},
		{"compact", diet{compact: true}},
		{"share", diet{share: true}},
		{"full", diet{intern: true, compact: true, share: true, classes: internDefault}},
	}
	for _, c := range internClasses {
		cases = append(cases, struct {
			name string
			d    diet
		}{"intern/class=" + c.name, diet{intern: true, classes: c.c}})
	}
	for _, v := range cases {
		b.Run("diet="+v.name, func(b *testing.B) {
			d := v.d
			d.interners = newInterners(1)
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
				d.apply(pods[j])
			}
		})
	}
}

// BenchmarkDietDecode measures decoding realistic pods (without
// managedFields) from their bytes, plainly and with WithDiet, which
// shares parts before decoding (shareproto.go): ns per pod, one interner
// for the run as one decoder has.
func BenchmarkDietDecode(b *testing.B) {
	src := benchPods(1000)
	raws := make([][]byte, len(src))
	for i, p := range src {
		p.ManagedFields = nil
		raws[i], _ = p.Marshal()
	}
	for _, v := range []struct {
		name string
		d    diet
	}{
		{"none", diet{}},
		{"full", diet{intern: true, compact: true, share: true, classes: internDefault}},
		{"full+shared-maps", diet{intern: true, compact: true, share: true, shareMaps: true, classes: internDefault}},
	} {
		b.Run("diet="+v.name, func(b *testing.B) {
			d := v.d
			d.interners = newInterners(1)
			for i := 0; i < b.N; i++ {
				raw := raws[i%len(raws)]
				if !d.on() {
					var p corev1.Pod
					if err := p.Unmarshal(raw); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, err := d.protoPod(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// internClasses are the field classes measured one by one.
var internClasses = []struct {
	name string
	c    internClass
}{
	{"meta", internMeta},
	{"annotation-values", internAnnotationValues | internMeta},
	{"spec", internSpec},
	{"containers", internContainers},
	{"env-values", internEnvValues},
	{"status", internStatus},
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
	src := benchPods(1000)
	first := make([][]byte, len(src))
	updates := map[string][][]byte{"none": first, "meta": make([][]byte, len(src)), "status": make([][]byte, len(src))}
	for i, p := range src {
		p.ManagedFields = nil
		first[i], _ = p.Marshal()
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
				d := diet{intern: true, compact: true, share: true, shareMaps: v.maps, classes: internDefault, interners: newInterners(1)}
				if v.versions {
					d.versions = newVersions()
				}
				alive := make([]runtime.Object, len(first))
				for i, raw := range first {
					var err error
					if alive[i], err = d.protoPod(raw); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					var err error // the latest version stays alive, as in a cache
					if alive[i%len(first)], err = d.protoPod(updates[change][i%len(first)]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
