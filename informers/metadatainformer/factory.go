package metadatainformer

import (
	"context"
	"errors"
	"time"

	"github.com/shardinformer/shardinformer/informers/internal/gvrfactory"
	"github.com/shardinformer/shardinformer/pipeline"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/tools/cache"
)

// TweakListOptionsFunc is client-go's.
type TweakListOptionsFunc = metadatainformer.TweakListOptionsFunc

// SharedInformerFactory is client-go's metadatainformer.SharedInformerFactory
// that can also be started with a context, as client-go's implementation
// can.
type SharedInformerFactory interface {
	metadatainformer.SharedInformerFactory
	StartWithContext(ctx context.Context)
}

var (
	_ metadatainformer.SharedInformerFactory = (*gvrfactory.Factory)(nil)
	_ SharedInformerFactory                  = (*gvrfactory.Factory)(nil)
)

// ErrInvalidResource is wrapped by the panic of ForResource for a resource
// without version or resource name.
var ErrInvalidResource = gvrfactory.ErrInvalidResource

// SharedInformerOption configures a factory: client-go's WithTransform, and
// options that client-go's metadata factory takes as constructor arguments
// or does not have.
type SharedInformerOption func(*config)

type config struct {
	namespace string
	tweak     TweakListOptionsFunc
	transform cache.TransformFunc
	pipeline  []pipeline.Option
}

// WithNamespace limits the factory's informers to namespace (as
// NewFilteredSharedInformerFactory's namespace argument); "" is all.
func WithNamespace(namespace string) SharedInformerOption {
	return func(c *config) { c.namespace = namespace }
}

// WithTweakListOptions applies tweak to the options of every list and watch
// request of the factory's informers (label and field selectors, …).
func WithTweakListOptions(tweak TweakListOptionsFunc) SharedInformerOption {
	return func(c *config) { c.tweak = tweak }
}

// WithTransform sets transform on every informer of the factory before it
// starts, as client-go's WithTransform does.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(c *config) { c.transform = transform }
}

// WithPipelineOptions passes opts (shards, full-ring policy, observer, …) to
// every informer of the factory, after the informer's name
// ("metadata <resource>.<group>"), so a pipeline.WithName here overrides it.
func WithPipelineOptions(opts ...pipeline.Option) SharedInformerOption {
	return func(c *config) { c.pipeline = append(c.pipeline, opts...) }
}

// NewSharedInformerFactory is client-go's constructor of the same name,
// building our informers: metadata-only list/watch through client for all
// namespaces.
func NewSharedInformerFactory(client metadata.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory is client-go's constructor of the same
// name, building our informers: list/watch in namespace ("" is all) with
// tweakListOptions applied to every request.
func NewFilteredSharedInformerFactory(client metadata.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions is client-go's constructor of the
// same name with this package's options. It panics on a nil client or
// invalid pipeline options (New returns the error).
func NewSharedInformerFactoryWithOptions(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f, err := New(client, defaultResync, options...)
	if err != nil {
		panic(err)
	}
	return f
}

// New returns a factory whose informers list and watch
// metav1.PartialObjectMetadata through client (the wire package does not
// decode metadata-only responses). It fails on a nil client and on invalid
// pipeline options.
func New(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) (SharedInformerFactory, error) {
	if client == nil {
		return nil, errors.New("metadatainformer: nil client")
	}
	var c config
	for _, o := range options {
		o(&c)
	}
	f, err := gvrfactory.New(gvrfactory.Config{
		Kind:      "metadata",
		Resync:    defaultResync,
		Transform: c.transform,
		Pipeline:  c.pipeline,
		NewObject: func() runtime.Object { return &metav1.PartialObjectMetadata{} },
		ListerWatcher: func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
			r := client.Resource(gvr).Namespace(c.namespace)
			return gvrfactory.ClientListWatch(r.List, r.Watch, c.tweak, client), nil
		},
		Lister: func(idx cache.Indexer, gvr schema.GroupVersionResource) cache.GenericLister {
			return metadatalister.NewRuntimeObjectShim(metadatalister.New(idx, gvr))
		},
	})
	if err != nil {
		return nil, err // not a nil *Factory in a non-nil interface
	}
	return f, nil
}
