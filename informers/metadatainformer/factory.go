package metadatainformer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardinformer/shardinformer/informers/internal/gvrfactory"
	"github.com/shardinformer/shardinformer/informers/internal/restclient"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
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
	wire      []wire.Option
	noWire    bool
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

// WithWireOptions passes opts (workers, content type, diet, …) to the wire
// ListerWatcher of every informer of the factory, after the default
// wire.WithDiet(): wire.WithoutDiet() turns the diet off, and a step given
// after it turns that step on again. The factory sets the namespace and its
// tweak function itself (the tweak last). wire.CBOR is refused: the
// metadata client has no CBOR.
func WithWireOptions(opts ...wire.Option) SharedInformerOption {
	return func(c *config) { c.wire = append(c.wire, opts...) }
}

// WithoutWire makes the factory's informers list and watch through the
// metadata client's own List and Watch, decoded by client-go, as
// client-go's factory does: for a client that does more than send requests
// through its REST client (a wrapper that records or rewrites calls). Wire
// options are still checked, and otherwise ignored.
func WithoutWire() SharedInformerOption { return func(c *config) { c.noWire = true } }

// NewSharedInformerFactory is client-go's constructor of the same name,
// building our informers: metadata-only list/watch through client's REST
// client on the wire, with the diet, for all namespaces.
func NewSharedInformerFactory(client metadata.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory is client-go's constructor of the same
// name, building our informers: metadata-only list/watch on the wire, with
// the diet, in namespace ("" is all) with tweakListOptions applied to every
// request.
func NewFilteredSharedInformerFactory(client metadata.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions is client-go's constructor of the
// same name with this package's options. It panics on a nil client or
// invalid pipeline or wire options (New returns the error).
func NewSharedInformerFactoryWithOptions(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f, err := New(client, defaultResync, options...)
	if err != nil {
		panic(err)
	}
	return f
}

// New returns a factory whose informers list and watch
// metav1.PartialObjectMetadata through the wire decoder (package wire's
// metadata mode: the metadata client's requests and objects, streamed and
// decoded on several goroutines) on the REST client under client, with
// wire.WithDiet and then WithWireOptions; with WithoutWire, or for a client
// without a REST client (client-go's fake metadata client, logged once at
// V(2)), through client's own List and Watch, decoded by client-go. It
// fails on a nil client and on invalid pipeline or wire options.
func New(client metadata.Interface, defaultResync time.Duration, options ...SharedInformerOption) (SharedInformerFactory, error) {
	if client == nil {
		return nil, errors.New("metadatainformer: nil client")
	}
	var c config
	for _, o := range options {
		o(&c)
	}
	rc, _ := restclient.Metadata(client)
	lw, err := gvrfactory.Source{
		Kind: "metadata", Client: client, REST: rc, NoWire: c.noWire, Wire: c.wire,
		Namespace: c.namespace, Tweak: c.tweak, Object: &metav1.PartialObjectMetadata{},
		ClientListWatch: func(gvr schema.GroupVersionResource) cache.ListerWatcher {
			r := client.Resource(gvr).Namespace(c.namespace)
			return gvrfactory.ClientListWatch(r.List, r.Watch, c.tweak, client)
		},
	}.ListerWatchers()
	if err != nil {
		return nil, fmt.Errorf("metadatainformer: %w", err)
	}
	f, err := gvrfactory.New(gvrfactory.Config{
		Kind:          "metadata",
		Resync:        defaultResync,
		Transform:     c.transform,
		Pipeline:      c.pipeline,
		NewObject:     func() runtime.Object { return &metav1.PartialObjectMetadata{} },
		ListerWatcher: lw,
		Lister: func(idx cache.Indexer, gvr schema.GroupVersionResource) cache.GenericLister {
			return metadatalister.NewRuntimeObjectShim(metadatalister.New(idx, gvr))
		},
	})
	if err != nil {
		return nil, err // not a nil *Factory in a non-nil interface
	}
	return f, nil
}
