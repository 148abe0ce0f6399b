package diet

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/shardinformer/shardinformer/apisim"
)

// TestSharingOrderIndependent: pods share their parts when they arrive in
// any order (as a watch creates them), not only grouped by namespace (as a
// list returns them). 10k of loadgen's pods in 20 namespaces (1000
// templates, each with parts of its own: more than the smallest cache of
// shared values holds) are decoded in a random order. Once the cache has
// grown to hold them (the first half of the pods), a pod gets its owner
// references and its first container's env from an earlier pod of its
// template: at most 15% of the second half may hold arrays of their own
// (7–9% do: the parts of three templates that fall in one two-way set evict
// each other). Without the growth, 36% did (share.go has what that costs
// at 100k pods).
func TestSharingOrderIndependent(t *testing.T) {
	const n, namespaces = 10_000, 20
	raws := make([][]byte, n)
	for i := range raws {
		p := apisim.NewPod(fmt.Sprintf("loadgen-%03d", i%namespaces), fmt.Sprintf("pod-%06d", i), 1<<32+int64(i), apisim.PodOptions{})
		raws[i], _ = p.Marshal()
	}
	d := withoutVersions(Config{Intern: true, Compact: true, Share: true})
	held := map[string]map[any]bool{} // owner uid → the arrays its pods hold
	own, pods := 0, 0                 // of the second half: pods with an array of their own, pods
	for k, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		obj, err := d.ProtoPod(raws[i])
		if err != nil {
			t.Fatal(err)
		}
		p := obj.(*corev1.Pod)
		if len(p.OwnerReferences) == 0 || len(p.Spec.Containers[0].Env) == 0 {
			t.Fatalf("pod %d has no owner or no env: it does not test sharing", i)
		}
		arrays := held[string(p.OwnerReferences[0].UID)]
		if arrays == nil {
			arrays = map[any]bool{}
			held[string(p.OwnerReferences[0].UID)] = arrays
		}
		owners, env := &p.OwnerReferences[0], &p.Spec.Containers[0].Env[0]
		if k >= n/2 {
			pods++
			if !arrays[owners] || !arrays[env] {
				own++
			}
		}
		arrays[owners], arrays[env] = true, true
	}
	if len(held) < 500 {
		t.Fatalf("%d templates: too few to overflow the smallest cache", len(held))
	}
	t.Logf("%d of the last %d pods (of %d templates) hold arrays of their own", own, pods, len(held))
	if own > pods*15/100 {
		t.Errorf("%d of the last %d pods of %d templates, decoded in a random order, hold arrays of their own (owner references or env): their parts were not shared",
			own, pods, len(held))
	}
}
