package diet

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/shardinformer/shardinformer/apisim"
)

// FuzzSharePod: a pod's protobuf bytes decoded with the diet — three times
// with one interner, so that the third decode finds in the cache every
// part the second one cached (on its second sighting) and cuts it from the
// bytes, and the second and third take the spec and status of the
// previous round's pod (versions.go) — decode as the plain unmarshal does:
// both fail or both give equal pods. Maps are shared for inputs of even
// length, copied for the others. The seeds (testdata/fuzz, written by
// wire's TestWriteFuzzCorpus) are small realistic pods.
func FuzzSharePod(f *testing.F) {
	for i := range 3 {
		b, err := apisim.NewPod("ns", fmt.Sprintf("p-%d", i), int64(i), apisim.PodOptions{ManagedFields: i != 1}).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var full corev1.Pod
		ferr := full.Unmarshal(b)
		d := New(Config{Intern: true, Compact: true, Share: true, ShareMaps: len(b)%2 == 0, Classes: InternAll}, 1)
		for round := range 3 {
			got, err := d.ProtoPod(bytes.Clone(b))
			if (err != nil) != (ferr != nil) {
				t.Fatalf("round %d: diet error %v, plain error %v", round, err, ferr)
			}
			if err != nil {
				if err.Error() != ferr.Error() {
					t.Fatalf("round %d: diet error %q, plain error %q", round, err, ferr)
				}
				continue
			}
			if !apiequality.Semantic.DeepEqual(&full, got) {
				t.Fatalf("round %d: diet decode differs:\n%s", round, cmp.Diff(&full, got))
			}
		}
	})
}

// FuzzDecodePodLike: a pod's bytes decoded like another pod's decode as
// the plain unmarshal does: both fail, with the same error, or both give
// equal pods. The seeds pair versions of realistic pods.
func FuzzDecodePodLike(f *testing.F) {
	for i := range 3 {
		p := apisim.NewPod("ns", fmt.Sprintf("p-%d", i), int64(i), apisim.PodOptions{ManagedFields: i != 1})
		b, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		p.Annotations["touched"] = "yes"
		p.Status.Phase = "Succeeded"
		l, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, l)
	}
	f.Fuzz(func(t *testing.T, b, likeBytes []byte) {
		var like corev1.Pod
		if like.Unmarshal(likeBytes) != nil {
			return
		}
		var full corev1.Pod
		ferr := full.Unmarshal(b)
		var got corev1.Pod
		err := DecodePodLike(&got, b, &like, likeBytes)
		if (err != nil) != (ferr != nil) || err != nil && err.Error() != ferr.Error() {
			t.Fatalf("like error %v, plain error %v", err, ferr)
		}
		if err == nil && !apiequality.Semantic.DeepEqual(&full, &got) {
			t.Fatalf("decoded like differs:\n%s", cmp.Diff(&full, &got))
		}
	})
}
