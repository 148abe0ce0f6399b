package dynamicinformer

import (
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
	"k8s.io/client-go/tools/cache"
)

// Option configures a factory of New or NewForConfig.
type Option func(*config)

type config struct {
	namespace string
	tweak     TweakListOptionsFunc
	transform cache.TransformFunc
	pipeline  []pipeline.Option
	wire      []wire.Option
	noWire    bool
}

// WithNamespace limits the factory's informers to namespace (as
// NewFilteredDynamicSharedInformerFactory's namespace argument); "" is all.
func WithNamespace(namespace string) Option { return func(c *config) { c.namespace = namespace } }

// WithTweakListOptions applies tweak to the options of every list and watch
// request of the factory's informers (label and field selectors, …).
func WithTweakListOptions(tweak TweakListOptionsFunc) Option {
	return func(c *config) { c.tweak = tweak }
}

// WithTransform sets transform on every informer of the factory before it
// starts.
func WithTransform(transform cache.TransformFunc) Option {
	return func(c *config) { c.transform = transform }
}

// WithPipelineOptions passes opts (shards, full-ring policy, observer, …) to
// every informer of the factory, after the informer's name
// ("dynamic <resource>.<group>"), so a pipeline.WithName here overrides it.
func WithPipelineOptions(opts ...pipeline.Option) Option {
	return func(c *config) { c.pipeline = append(c.pipeline, opts...) }
}

// WithWireOptions passes opts (workers, content type, diet, …) to the wire
// ListerWatcher of every informer of the factory, after the default
// wire.WithDiet(): wire.WithoutDiet() turns the diet off, and a step given
// after it turns that step on again. The factory sets the namespace and its
// tweak function itself (the tweak last).
func WithWireOptions(opts ...wire.Option) Option {
	return func(c *config) { c.wire = append(c.wire, opts...) }
}

// WithoutWire makes the factory's informers list and watch through the
// dynamic client's own List and Watch, decoded by client-go, as client-go's
// factory does: for a client that does more than send requests through its
// REST client (a wrapper that records or rewrites calls). Wire options are
// still checked, and otherwise ignored.
func WithoutWire() Option { return func(c *config) { c.noWire = true } }
