package diet

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardinformer/shardinformer/apisim"
)

// withMutationDetection turns the checks of mutation.go on until the test
// ends (KUBE_CACHE_MUTATION_DETECTOR is read once per process).
func withMutationDetection(t *testing.T) {
	prev := detectMutations
	detectMutations = true
	t.Cleanup(func() { detectMutations = prev })
}

// mustPanic runs f and returns its panic's message; it fails the test if f
// does not panic.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("no panic")
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

// TestMutationChecks: with mutation detection on, a value the diet hands a
// pod from another object — a part shared across pods (protobuf: before
// decoding; JSON: after) or its previous version's spec or status — that
// was modified in place makes the decoder panic, naming the pod and the
// part; unmodified, the pods decode as without the checks (dietPods
// compares each with the plain decode).
func TestMutationChecks(t *testing.T) {
	withMutationDetection(t)
	fixHash(t)
	template := apisim.NewPod("ns", "a", 7, apisim.PodOptions{})
	named := func(name string) *corev1.Pod {
		p := template.DeepCopy()
		p.Name, p.UID = name, types.UID("uid-"+name)
		return p
	}

	t.Run("shared part, protobuf", func(t *testing.T) {
		d := versionsDiet(false)
		pods := dietPods(t, d, [][]byte{marshalPod(t, named("a")), marshalPod(t, named("b")), marshalPod(t, named("c"))})
		if !same(pods[1].Spec.Tolerations, pods[2].Spec.Tolerations) {
			t.Fatal("b and c do not share their tolerations")
		}
		dietPods(t, d, [][]byte{marshalPod(t, named("d"))}) // unmodified: no panic
		pods[1].Spec.Tolerations[0].Key = "modified by a handler"
		msg := mustPanic(t, func() { _, _ = d.ProtoPod(marshalPod(t, named("e"))) })
		if !strings.Contains(msg, "shared []v1.Toleration that pod ns/e") || !strings.Contains(msg, "modified by a handler") {
			t.Errorf("panic: %s", msg)
		}
	})

	t.Run("shared part, JSON", func(t *testing.T) {
		d, json := versionsDiet(false), paths[1] // decoded, then shared by Apply
		var pods []*corev1.Pod
		for _, n := range []string{"a", "b", "c"} {
			pods = append(pods, json.diet(t, d, json.encode(t, named(n))))
		}
		if !same(pods[1].Spec.Tolerations, pods[2].Spec.Tolerations) {
			t.Fatal("b and c do not share their tolerations")
		}
		pods[1].Spec.Tolerations[0].Key = "modified by a reader"
		raw := json.encode(t, named("d"))
		msg := mustPanic(t, func() { json.diet(t, d, raw) })
		if !strings.Contains(msg, "shared []v1.Toleration that pod ns/d") || !strings.Contains(msg, "modified by a reader") {
			t.Errorf("panic: %s", msg)
		}
	})

	for _, part := range []string{"spec", "status"} {
		t.Run("previous version's "+part, func(t *testing.T) {
			d := versionsDiet(false)
			v1 := named("p")
			v2 := v1.DeepCopy()
			v2.ResourceVersion = "8"
			v3 := v2.DeepCopy()
			v3.ResourceVersion = "9"
			pods := dietPods(t, d, [][]byte{marshalPod(t, v1), marshalPod(t, v2)}) // v2 takes v1's spec and status, checked
			if part == "spec" {
				pods[1].Spec.NodeName = "modified by a transform"
			} else {
				pods[1].Status.Phase = "modified by a transform"
			}
			msg := mustPanic(t, func() { _, _ = d.ProtoPod(marshalPod(t, v3)) })
			if !strings.Contains(msg, part+" of its previous version that pod ns/p") || !strings.Contains(msg, "modified by a transform") {
				t.Errorf("panic: %s", msg)
			}
		})
	}
}
