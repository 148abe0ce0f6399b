package apisim

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

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

// TestNewPodReplicas: pods of one app are replicas of one template — equal
// but for what each replica has of its own — and in one namespace they have
// one owner; opts.Apps bounds the distinct app labels.
func TestNewPodReplicas(t *testing.T) {
	const apps = 7
	byApp := map[string]*corev1.Pod{}
	for seed := range int64(200) {
		p := NewPod("ns", fmt.Sprintf("p-%d", seed), seed, PodOptions{ManagedFields: true, Apps: apps})
		first, ok := byApp[p.Labels["app"]]
		if !ok {
			byApp[p.Labels["app"]] = p
			continue
		}
		if !apiequality.Semantic.DeepEqual(first.Labels, p.Labels) || !apiequality.Semantic.DeepEqual(first.Annotations, p.Annotations) ||
			!apiequality.Semantic.DeepEqual(first.OwnerReferences, p.OwnerReferences) {
			t.Fatalf("%s and %s: replicas of app %s differ in metadata", first.Name, p.Name, p.Labels["app"])
		}
		if !apiequality.Semantic.DeepEqual(templateOf(first), templateOf(p)) {
			t.Fatalf("%s and %s: replicas of app %s differ in their template", first.Name, p.Name, p.Labels["app"])
		}
		if first.Spec.Volumes[len(first.Spec.Volumes)-1].Name == p.Spec.Volumes[len(p.Spec.Volumes)-1].Name {
			t.Errorf("%s and %s share the token volume's name", first.Name, p.Name)
		}
	}
	if len(byApp) != apps {
		t.Errorf("%d distinct app labels, want %d", len(byApp), apps)
	}
	a := NewPod("ns-a", "p", 1, PodOptions{})
	b := NewPod("ns-b", "p", 1, PodOptions{})
	if a.OwnerReferences[0].UID == b.OwnerReferences[0].UID {
		t.Error("one app's ReplicaSets in two namespaces have one UID")
	}
}

// templateOf is what a pod's template fixes of its spec: the spec without
// the node and the service account token's volume (and its mounts).
func templateOf(p *corev1.Pod) corev1.PodSpec {
	s := *p.Spec.DeepCopy()
	s.NodeName = ""
	token := s.Volumes[len(s.Volumes)-1].Name
	s.Volumes = s.Volumes[:len(s.Volumes)-1]
	for i := range s.Containers {
		s.Containers[i].VolumeMounts = slices.DeleteFunc(s.Containers[i].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == token })
	}
	return s
}

// TestNewPodUnchanged: NewPod's pods are those it built before the
// replicas of a template shared their env vars' formatting (envCache): the
// protobuf of 6000 pods, over templates, namespaces and managedFields,
// hashes as it did then (computed at the commit before envCache). A change
// to NewPod's output on purpose updates the hash.
func TestNewPodUnchanged(t *testing.T) {
	h := sha256.New()
	for i := range 3000 {
		for _, mf := range []bool{false, true} {
			b, err := NewPod(fmt.Sprintf("loadgen-%03d", i%7), fmt.Sprintf("pod-%06d", i), int64(1<<32+i), PodOptions{ManagedFields: mf, Apps: 1 + i%60}).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			h.Write(b)
		}
	}
	if got, want := fmt.Sprintf("%x", h.Sum(nil)), "621f66aa1ca97c0d52256b86a149fd46532d6098a4792f26990bbfc2f06b462b"; got != want {
		t.Errorf("NewPod's pods hash to %s, want %s", got, want)
	}
}

// TestNewPodEnvPrivate: a pod's env vars are its own; changing them, in
// the pod that first built them or in a later replica, does not change the
// next replica's.
func TestNewPodEnvPrivate(t *testing.T) {
	const ns = "env-private" // a template no other test builds
	mutate := func(p *corev1.Pod) {
		for i := range p.Spec.Containers[0].Env {
			e := &p.Spec.Containers[0].Env[i]
			e.Value += "-changed"
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				e.ValueFrom.FieldRef.FieldPath = "changed"
			}
		}
	}
	first := NewPod(ns, "a", 1, PodOptions{Apps: 1})
	want := first.DeepCopy().Spec.Containers[0].Env
	mutate(first)
	for i, name := range []string{"b", "c"} {
		p := NewPod(ns, name, int64(2+i), PodOptions{Apps: 1})
		if got := p.Spec.Containers[0].Env; !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("replica %s: env vars changed with another's:\n%v\nwant\n%v", name, got, want)
		}
		mutate(p)
	}
}
