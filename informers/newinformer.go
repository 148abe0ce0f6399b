package informers

import (
	"time"

	"github.com/shardinformer/shardinformer/pipeline"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// NewInformer has the signature of client-go's cache.NewSharedIndexInformer
// and builds our informer, for code that takes that constructor as a value —
// controller-runtime's cache.Options.NewInformer:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Cache: cache.Options{NewInformer: informers.NewInformer},
//	})
//
// It lists and watches through the ListerWatcher it is given: there,
// controller-runtime's, decoded as controller-runtime decodes, with full
// objects. Package crcache (manager.Options.NewCache: crcache.New) gives
// controller-runtime's caches the wire and its diet too.
//
// The informer is named after exampleObject's GroupVersionKind when it has
// one (controller-runtime sets it; its unstructured and metadata-only
// informers all share one Go type), else after its Go type.
func NewInformer(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return pipeline.NewSharedIndexInformer(lw, exampleObject, defaultEventHandlerResyncPeriod, indexers, named(exampleObject)...)
}

// NewInformerFunc returns NewInformer with opts (shards, full-ring policy,
// observer, …) passed to every informer it builds, after the name, so a
// pipeline.WithName in opts names them all alike. It fails on invalid
// options, so the informers it builds never do.
func NewInformerFunc(opts ...pipeline.Option) (func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer, error) {
	if err := validate(opts); err != nil {
		return nil, err
	}
	return func(lw cache.ListerWatcher, exampleObject runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
		return pipeline.NewSharedIndexInformer(lw, exampleObject, resync, indexers, append(named(exampleObject), opts...)...)
	}, nil
}

// named names an informer after exampleObject's GroupVersionKind, if set.
func named(exampleObject runtime.Object) []pipeline.Option {
	if exampleObject == nil {
		return nil
	}
	if gvk := exampleObject.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return []pipeline.Option{pipeline.WithName("shardinformer " + gvk.String())}
	}
	return nil
}
