package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestMutationDetector: with KUBE_CACHE_MUTATION_DETECTOR=true, as in
// client-go's informer, a handler or a cache reader that modifies a cached
// object makes the process panic, naming the informer and showing the
// object; without a modification it runs on. Each case runs in a child
// process (client-go reads the variable once, and the panic ends the
// process).
func TestMutationDetector(t *testing.T) {
	if role := testkit.ChildRole(); role != "" {
		mutationChild(t, role)
		return
	}
	for _, role := range []string{"handler", "reader", "none"} {
		t.Run(role, func(t *testing.T) {
			out, ok := testkit.RunChild(t, role, "KUBE_CACHE_MUTATION_DETECTOR=true")
			mutated := role != "none"
			if ok == mutated {
				t.Fatalf("child %s exited ok=%v, want %v; output:\n%s", role, ok, !mutated, out)
			}
			if mutated && (!strings.Contains(out, "cache shardinformer *v1.ConfigMap modified") || !strings.Contains(out, "cm-001")) {
				t.Errorf("child %s: the panic does not name the informer and the object:\n%s", role, out)
			}
		})
	}
}

// mutationChild runs an informer whose handler or reader modifies cached
// objects in place (role "handler", "reader") or only reads them ("none"),
// for three detector periods.
func mutationChild(t *testing.T, role string) {
	c := newCluster(true)
	for _, n := range names(3) {
		c.Set(configMap("ns", n, "v"))
	}
	inf := NewSharedIndexInformer(c.ListerWatcher(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if cm := obj.(*corev1.ConfigMap); role == "handler" && cm.Name == "cm-001" {
			cm.Labels["v"] = "changed by a handler"
		}
	}})
	testkit.RunSynced(t, inf)
	for _, obj := range inf.GetIndexer().List() {
		if cm := obj.(*corev1.ConfigMap); role == "reader" && cm.Name == "cm-001" {
			cm.Data["v"] = "changed by a reader"
		}
	}
	time.Sleep(3500 * time.Millisecond) // the detector compares every second
}
