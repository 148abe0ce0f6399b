package gvrfactory

import (
	"fmt"
	"slices"
	"sync"

	"github.com/shardinformer/shardinformer/informers/internal/restclient"
	"github.com/shardinformer/shardinformer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// DefaultWire are the wire options every factory starts from: the diet.
var DefaultWire = []wire.Option{wire.WithDiet()}

// Source says how a factory's informers reach the server: through package
// wire on the REST client under the user's client, or through the
// client's own list and watch.
type Source struct {
	// Kind names the factory in the log line ("dynamic", "metadata").
	Kind string
	// Client is the user's client (its type goes into the fallback's
	// reason).
	Client any
	// REST is the REST client found under Client; nil if it has none
	// (client-go's fakes), and the informers then fall back — unless
	// Config is set.
	REST rest.Interface
	// Config, if set, makes the wire build a REST client of its own per
	// resource (wire.NewForConfig) instead of using REST.
	Config *rest.Config
	// NoWire makes the informers use ClientListWatch (WithoutWire).
	NoWire bool
	// Wire are the user's wire options, applied after DefaultWire and
	// before the factory's tweak function.
	Wire []wire.Option
	// Namespace and Tweak are the factory's, for both paths.
	Namespace string
	Tweak     func(*metav1.ListOptions)
	// Object is wire.Resource.Object: nil for unstructured objects,
	// &metav1.PartialObjectMetadata{} for metadata only.
	Object runtime.Object
	// ClientListWatch returns the client's own list/watch of gvr, with
	// the namespace and tweak applied (ClientListWatch in this package).
	ClientListWatch func(gvr schema.GroupVersionResource) cache.ListerWatcher
}

// WireOptions are DefaultWire, the user's options and the factory's tweak
// function, in that order.
func (s Source) WireOptions() []wire.Option {
	return append(append(slices.Clone(DefaultWire), s.Wire...), wire.WithTweakListOptions(s.Tweak))
}

// ListerWatchers checks the wire options (also when the informers will not
// use them, so that a bad option fails with every client) and returns the
// function that builds the list/watch of a resource for Config: wire's,
// or the client's own wrapped by restclient.Fallback, whose String
// (pipeline's Stats().ListerWatcher) says why. Falling back for lack of a
// REST client is logged at V(2) the first time the returned function does
// it. The function is safe for concurrent use.
func (s Source) ListerWatchers() (func(schema.GroupVersionResource) (cache.ListerWatcher, error), error) {
	opts := s.WireOptions()
	// Built, never used: New checks the options and starts nothing.
	if _, err := wire.New(&rest.RESTClient{}, wire.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "checks"}, Object: s.Object}, opts...); err != nil {
		return nil, fmt.Errorf("WithWireOptions: %w", err)
	}
	if s.NoWire {
		return func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
			return restclient.Fallback(s.ClientListWatch(gvr), "WithoutWire"), nil
		}, nil
	}
	if s.Config != nil {
		return func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
			return wire.NewForConfig(s.Config, wire.Resource{GVR: gvr, Namespace: s.Namespace, Object: s.Object}, opts...)
		}, nil
	}
	if s.REST == nil {
		reason := fmt.Sprintf("%T has no REST client", s.Client)
		var once sync.Once
		return func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
			once.Do(func() {
				klog.V(2).InfoS("shardinformer "+s.Kind+" factory: listing and watching through the client, without the wire decoder", "reason", reason)
			})
			return restclient.Fallback(s.ClientListWatch(gvr), reason), nil
		}, nil
	}
	return func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
		return wire.New(s.REST, wire.Resource{GVR: gvr, Namespace: s.Namespace, Object: s.Object}, opts...)
	}, nil
}
