package apisim

import (
	"encoding/json"
	"fmt"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// TestNewPodSize: default pods are 5–18 KB of JSON like real ones, and
// managedFields makes them larger but still in range.
func TestNewPodSize(t *testing.T) {
	for _, mf := range []bool{false, true} {
		lo, hi := 1<<30, 0
		for seed := range int64(300) {
			b, err := json.Marshal(NewPod("team-payments", fmt.Sprintf("api-7d9f8b6c5d-%05d", seed), seed, PodOptions{ManagedFields: mf}))
			if err != nil {
				t.Fatal(err)
			}
			lo, hi = min(lo, len(b)), max(hi, len(b))
		}
		if lo < 5<<10 || hi > 18<<10 {
			t.Errorf("managedFields=%v: JSON sizes %d..%d, want within 5–18 KiB", mf, lo, hi)
		}
		t.Logf("managedFields=%v: JSON %d..%d bytes", mf, lo, hi)
	}
}

func TestNewPodDeterministic(t *testing.T) {
	a := NewPod("ns", "p", 7, PodOptions{ManagedFields: true})
	b := NewPod("ns", "p", 7, PodOptions{ManagedFields: true})
	if !apiequality.Semantic.DeepEqual(a, b) {
		t.Error("same seed, different pods")
	}
	if c := NewPod("ns", "p", 8, PodOptions{}); apiequality.Semantic.DeepEqual(a.Spec, c.Spec) {
		t.Error("different seeds, same spec")
	}
	p := NewPod("ns", "p", 9, PodOptions{Nodes: 1, Apps: 1})
	if p.Spec.NodeName != "node-0000" || len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" ||
		len(p.Spec.Containers) != 2 || len(p.Status.ContainerStatuses) != 2 || p.Labels["pod-template-hash"] == "" {
		t.Errorf("pod lacks expected structure: %+v", p.ObjectMeta)
	}
}
