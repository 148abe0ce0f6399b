package diet

import (
	"fmt"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
)

// Mutation detection. client-go's cache mutation detector
// (KUBE_CACHE_MUTATION_DETECTOR=true; package pipeline runs it on every
// informer as client-go does) keeps a deep copy of each cached object for a
// few minutes and panics once an object differs from its copy. The diet
// hands a pod values that other objects hold too — a part shared across
// pods (share.go, shareproto.go), the spec or status of the pod's previous
// version (versions.go) — and a value modified in place through one of
// them reaches every pod given it later, also after the modified object
// has left the detector's window, and with the detector's copy of the new
// pod taken from the modified value. So with the variable set, every value
// the diet hands out is first checked: the pod is decoded whole, as
// without the diet, and each value taken from elsewhere must equal
// (apiequality.Semantic) what the pod's own bytes decode to, or the
// decoder goroutine panics, naming the pod and the part, with a diff. The
// checks double the decoding cost; like client-go's detector they are for
// tests and debugging.

// detectMutations is read once, as client-go reads it.
var detectMutations, _ = strconv.ParseBool(os.Getenv("KUBE_CACHE_MUTATION_DETECTOR"))

// checkUnmodified panics unless cached, the value the diet gives pod p for
// part, equals fresh, what p's own bytes decode to.
func checkUnmodified(p *corev1.Pod, part string, fresh, cached any) {
	if equality.Semantic.DeepEqual(fresh, cached) {
		return
	}
	panic(fmt.Sprintf("wire: a cached object was modified in place (KUBE_CACHE_MUTATION_DETECTOR): the %s that pod %s/%s was to share with objects decoded before it differs from its own bytes (left: its bytes; right: the shared value, as modified)\n%s",
		part, p.Namespace, p.Name, diff.ObjectGoPrintSideBySide(fresh, cached)))
}
