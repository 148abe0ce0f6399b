package informers

import (
	"reflect"
	"slices"
	"time"

	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/tools/cache"
)

// SharedInformerOption configures a factory: the options of client-go's
// informers package under the same names, and the pipeline's.
type SharedInformerOption func(*config)

type config struct {
	namespace   string
	tweak       internalinterfaces.TweakListOptionsFunc
	lifecycle   []informers.SharedInformerOption // for the client-go factory holding our informers
	pipeline    []pipeline.Option
	pipelineFor map[reflect.Type][]pipeline.Option
	wire        []wire.Option // after defaultWire
	noWire      bool
}

// defaultWire are the wire options every factory starts from: the diet.
var defaultWire = []wire.Option{wire.WithDiet()}

// WithNamespace limits the factory's namespaced informers to namespace, as
// client-go's WithNamespace does; cluster-scoped types ignore it.
func WithNamespace(namespace string) SharedInformerOption {
	return func(c *config) { c.namespace = namespace }
}

// WithTweakListOptions applies tweak to the options of every list and watch
// request of the factory's informers (label and field selectors, …), as
// client-go's WithTweakListOptions does.
func WithTweakListOptions(tweak internalinterfaces.TweakListOptionsFunc) SharedInformerOption {
	return func(c *config) { c.tweak = tweak }
}

// WithTransform sets transform on every informer of the factory, as
// client-go's WithTransform does.
func WithTransform(transform cache.TransformFunc) SharedInformerOption {
	return func(c *config) { c.lifecycle = append(c.lifecycle, informers.WithTransform(transform)) }
}

// WithCustomResyncConfig sets the default resync period of the informers of
// the given types (keyed by example object, e.g. &corev1.Pod{}), as
// client-go's WithCustomResyncConfig does.
func WithCustomResyncConfig(resyncConfig map[metav1.Object]time.Duration) SharedInformerOption {
	return func(c *config) {
		c.lifecycle = append(c.lifecycle, informers.WithCustomResyncConfig(resyncConfig))
	}
}

// WithInformerName sets the factory's InformerName, as client-go's
// WithInformerName does; Shutdown releases it. client-go's informer metrics
// that it identifies are not produced by our informers: their metrics go
// through pipeline.WithObserver (see WithPipelineOptions).
func WithInformerName(name *cache.InformerName) SharedInformerOption {
	return func(c *config) { c.lifecycle = append(c.lifecycle, informers.WithInformerName(name)) }
}

// WithPipelineOptions passes opts (shards, full-ring policy, observer, …) to
// every informer of the factory.
func WithPipelineOptions(opts ...pipeline.Option) SharedInformerOption {
	return func(c *config) { c.pipeline = append(c.pipeline, opts...) }
}

// WithPipelineOptionsFor passes opts to the informer of obj's type only,
// after those of WithPipelineOptions (so they override them); for example a
// name, more shards for the busiest type, or the compact store for the
// largest (WithPipelineOptionsFor(&corev1.Pod{},
// pipeline.WithCompactStore(compact.Config{})); package compact's example).
func WithPipelineOptionsFor(obj runtime.Object, opts ...pipeline.Option) SharedInformerOption {
	return func(c *config) {
		if c.pipelineFor == nil {
			c.pipelineFor = map[reflect.Type][]pipeline.Option{}
		}
		t := reflect.TypeOf(obj)
		c.pipelineFor[t] = append(c.pipelineFor[t], opts...)
	}
}

// WithWireOptions passes opts (workers, content type, diet, …) to the wire
// ListerWatcher of every informer of the factory, after the default
// wire.WithDiet(): wire.WithoutDiet() turns the diet off, and a step given
// after it turns that step on again. The factory sets the namespace and its
// tweak function itself (the tweak last).
func WithWireOptions(opts ...wire.Option) SharedInformerOption {
	return func(c *config) { c.wire = append(c.wire, opts...) }
}

// WithoutWire makes the factory's informers list and watch through the
// clientset's typed clients, decoded by client-go, as client-go's factory
// does: for a clientset whose typed clients do more than send requests
// through their REST clients (a wrapper that records or rewrites calls).
func WithoutWire() SharedInformerOption { return func(c *config) { c.noWire = true } }

// wireOptions are the options of the factory's wire ListerWatchers.
func (c *config) wireOptions() []wire.Option {
	return append(append(slices.Clone(defaultWire), c.wire...), wire.WithTweakListOptions(c.tweak))
}

// pipelineOptions returns the options of the informer for type t.
func (c *config) pipelineOptions(t reflect.Type) []pipeline.Option {
	return append(c.pipeline[:len(c.pipeline):len(c.pipeline)], c.pipelineFor[t]...)
}
