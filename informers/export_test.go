package informers

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Builtin returns the generated table's GVR and scope for an object type,
// and a new object of it.
func Builtin(t reflect.Type) (gvr schema.GroupVersionResource, namespaced bool, newObject func() runtime.Object, ok bool) {
	r, ok := resourceByType[t]
	if !ok {
		return gvr, false, nil, false
	}
	return r.gvr, r.namespaced, r.newObject, true
}
