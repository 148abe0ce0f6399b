package compact

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An Object is a metav1.Object, so that meta.Accessor returns it as it is
// rather than a metav1.ObjectMeta built for each read of a key or a
// resource version (key functions, the namespace index and the reflector
// read them on every event). Its name, namespace and resource version are
// substrings of what it holds; every other field reads as unset, since
// only Codec.Decode knows it. An Object is immutable: its setters panic.
var _ metav1.Object = (*Object)(nil)

// GetNamespace returns the object's namespace ("" for a cluster-scoped object).
func (o *Object) GetNamespace() string {
	ns, _, ok := strings.Cut(o.Key(), "/")
	if !ok {
		return ""
	}
	return ns
}

// GetName returns the object's name.
func (o *Object) GetName() string {
	if _, name, ok := strings.Cut(o.Key(), "/"); ok {
		return name
	}
	return o.Key()
}

// GetResourceVersion returns the object's resource version.
func (o *Object) GetResourceVersion() string { return o.ResourceVersion() }

// readOnlyMeta gives Object the rest of metav1.Object: fields it does not
// hold read as unset, and every setter panics with errImmutable (a cached
// object must not be modified; an Object cannot be).
type readOnlyMeta struct{}

const errImmutable = "compact: an Object is immutable; decode it (Codec.Decode) and copy the result to change it"

func (readOnlyMeta) GetGenerateName() string                       { return "" }
func (readOnlyMeta) GetUID() types.UID                             { return "" }
func (readOnlyMeta) GetGeneration() int64                          { return 0 }
func (readOnlyMeta) GetSelfLink() string                           { return "" }
func (readOnlyMeta) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (readOnlyMeta) GetDeletionTimestamp() *metav1.Time            { return nil }
func (readOnlyMeta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (readOnlyMeta) GetLabels() map[string]string                  { return nil }
func (readOnlyMeta) GetAnnotations() map[string]string             { return nil }
func (readOnlyMeta) GetFinalizers() []string                       { return nil }
func (readOnlyMeta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (readOnlyMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (readOnlyMeta) SetNamespace(string)                           { panic(errImmutable) }
func (readOnlyMeta) SetName(string)                                { panic(errImmutable) }
func (readOnlyMeta) SetGenerateName(string)                        { panic(errImmutable) }
func (readOnlyMeta) SetUID(types.UID)                              { panic(errImmutable) }
func (readOnlyMeta) SetResourceVersion(string)                     { panic(errImmutable) }
func (readOnlyMeta) SetGeneration(int64)                           { panic(errImmutable) }
func (readOnlyMeta) SetSelfLink(string)                            { panic(errImmutable) }
func (readOnlyMeta) SetCreationTimestamp(metav1.Time)              { panic(errImmutable) }
func (readOnlyMeta) SetDeletionTimestamp(*metav1.Time)             { panic(errImmutable) }
func (readOnlyMeta) SetDeletionGracePeriodSeconds(*int64)          { panic(errImmutable) }
func (readOnlyMeta) SetLabels(map[string]string)                   { panic(errImmutable) }
func (readOnlyMeta) SetAnnotations(map[string]string)              { panic(errImmutable) }
func (readOnlyMeta) SetFinalizers([]string)                        { panic(errImmutable) }
func (readOnlyMeta) SetOwnerReferences([]metav1.OwnerReference)    { panic(errImmutable) }
func (readOnlyMeta) SetManagedFields([]metav1.ManagedFieldsEntry)  { panic(errImmutable) }
