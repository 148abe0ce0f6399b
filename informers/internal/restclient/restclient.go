// Package restclient finds the REST client under a client-go client, so
// that the factories can list and watch through package wire with the
// user's own connection, credentials, throttling and retries.
//
// A typed clientset exposes its per-group clients (CoreV1().RESTClient());
// the dynamic and metadata clients keep theirs in an unexported field,
// which Dynamic and Metadata read for exactly client-go's
// *dynamic.DynamicClient and *metadata.Client after checking the field's
// name and type by reflection, so a change of client-go's layout makes
// them report false rather than read the wrong memory
// (TestClientGoLayout). Fakes (client-go's fake clientset, dynamic and
// metadata fakes) have no REST client: every function reports false for
// them, and the factories fall back to the client's own list and watch.
package restclient

import (
	"reflect"
	"unsafe"

	"github.com/shardinformer/shardinformer/internal/lwdesc"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Usable reports whether rc is a REST client requests can be sent
// through: not nil, and not a nil pointer in an interface (what the fake
// clientset's RESTClient methods return).
func Usable(rc rest.Interface) bool {
	if rc == nil {
		return false
	}
	v := reflect.ValueOf(rc)
	return v.Kind() != reflect.Pointer || !v.IsNil()
}

// Dynamic returns the REST client under c if c is client-go's
// *dynamic.DynamicClient.
func Dynamic(c dynamic.Interface) (rest.Interface, bool) {
	d, ok := c.(*dynamic.DynamicClient)
	if !ok || d == nil {
		return nil, false
	}
	rc, ok := field[rest.Interface](d, "client")
	return rc, ok && Usable(rc)
}

// Metadata returns the REST client under c if c is client-go's
// *metadata.Client.
func Metadata(c metadata.Interface) (rest.Interface, bool) {
	m, ok := c.(*metadata.Client)
	if !ok || m == nil {
		return nil, false
	}
	rc, ok := field[*rest.RESTClient](m, "client")
	return rc, ok && rc != nil
}

// field reads the unexported field name of type T of the struct *p points
// to, if it has one of exactly that type.
func field[T any, S any](p *S, name string) (T, bool) {
	var zero T
	f := reflect.ValueOf(p).Elem().FieldByName(name)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() {
		return zero, false
	}
	return *(*T)(unsafe.Pointer(f.UnsafeAddr())), true
}

// Fallback returns lw, a client's own list/watch used instead of the wire
// (no REST client for it was found, or the user chose so), described by
// reason in its String (which pipeline.Stats shows): "client-go list/watch
// (reason)". It keeps lw's context methods and WatchList choice.
func Fallback(lw cache.ListerWatcher, reason string) cache.ListerWatcher {
	return lwdesc.New(lw, "client-go list/watch ("+reason+")")
}
