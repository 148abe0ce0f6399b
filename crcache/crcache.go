package crcache

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// ErrNewInformerSet is returned by New for cache.Options whose NewInformer
// is set: crcache builds the informers itself (pass pipeline options with
// WithPipelineOptions).
var ErrNewInformerSet = errors.New("crcache: cache.Options.NewInformer is set; crcache builds the informers (use NewFunc with WithPipelineOptions)")

var errNilConfig = errors.New("crcache: nil rest.Config")

// Option configures the caches a NewFunc builds.
type Option func(*config)

type config struct {
	pipeline []pipeline.Option
	wire     []wire.Option // after wire.WithDiet()
	noWire   bool
	// built, if set, is called with every informer built (tests).
	built func(*pipeline.Informer, runtime.Object)
}

// WithPipelineOptions passes opts (shards, full-ring policy, observer, …)
// to every informer, after its name (so a pipeline.WithName names them all).
// Options accumulate over calls.
func WithPipelineOptions(opts ...pipeline.Option) Option {
	return func(c *config) { c.pipeline = append(c.pipeline, opts...) }
}

// WithWireOptions passes opts to every informer's wire ListerWatcher, after
// the default wire.WithDiet() and the content type of controller-runtime's
// requests: wire.WithoutDiet() turns the diet off, wire.WithWorkers sets the
// decoders, wire.WithContentType overrides the content type. Set selectors
// in cache.Options: wire.WithLabelSelector and WithFieldSelector would
// replace, in every informer, the ones controller-runtime computes. Options
// accumulate over calls.
func WithWireOptions(opts ...wire.Option) Option {
	return func(c *config) { c.wire = append(c.wire, opts...) }
}

// WithoutWire lists and watches through controller-runtime's own
// list/watch (client-go's decoding, full objects), still on our informer;
// Stats().ListerWatcher says "controller-runtime list/watch (WithoutWire)".
func WithoutWire() Option { return func(c *config) { c.noWire = true } }

// New is a cache.NewCacheFunc: controller-runtime's cache, configured by
// opts as usual, whose informers are shardinformer's and list and watch
// through package wire with its memory diet (wire.WithDiet). It is
// NewFunc() with no options:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{NewCache: crcache.New})
//
// opts.NewInformer must be nil (ErrNewInformerSet).
func New(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return defaultNew(config, opts)
}

var defaultNew = must(NewFunc())

func must(f cache.NewCacheFunc, err error) cache.NewCacheFunc {
	if err != nil {
		panic(err)
	}
	return f
}

// NewFunc returns New with options. It fails on invalid pipeline or wire
// options, so the informers it builds never do; a wire option valid but
// refused for one kind of object (CBOR for metadata-only objects) makes
// that informer fall back (see Fallbacks in the package documentation).
func NewFunc(opts ...Option) (cache.NewCacheFunc, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	newInformer, err := informers.NewInformerFunc(c.pipeline...)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	if _, err := wire.NewForConfig(&rest.Config{Host: "http://localhost"}, wire.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Object: &corev1.Pod{}}, append([]wire.Option{wire.WithDiet()}, c.wire...)...); err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	return func(restConfig *rest.Config, opts cache.Options) (cache.Cache, error) {
		b, err := c.newBuilder(restConfig, &opts, newInformer)
		if err != nil {
			return nil, err
		}
		opts.NewInformer = b.build
		return cache.New(restConfig, opts)
	}, nil
}

// newBuilder returns the builder of one cache and sets in opts the scheme
// and the probing HTTP client controller-runtime is to use.
func (c *config) newBuilder(restConfig *rest.Config, opts *cache.Options, newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer) (*builder, error) {
	if restConfig == nil {
		return nil, errNilConfig
	}
	if opts.NewInformer != nil {
		return nil, ErrNewInformerSet
	}
	b := &builder{
		config:      restConfig,
		scheme:      opts.Scheme,
		httpClient:  opts.HTTPClient,
		newInformer: newInformer,
		wire:        c.wire,
		noWire:      c.noWire,
		built:       c.built,
	}
	if b.scheme == nil {
		b.scheme = scheme.Scheme // controller-runtime's default too
	}
	if b.httpClient == nil { // as controller-runtime defaults it
		cfg := rest.CopyConfig(restConfig)
		if cfg.UserAgent == "" {
			cfg.UserAgent = rest.DefaultKubernetesUserAgent()
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("crcache: could not create HTTP client from config: %w", err)
		}
		b.httpClient = hc
	}
	base, _, err := rest.DefaultServerUrlFor(restConfig)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	b.base = base
	b.codecs = serializer.NewCodecFactory(b.scheme)
	opts.Scheme = b.scheme
	opts.HTTPClient = probingClient(b.httpClient)
	return b, nil
}

// builder builds the informers of one cache: its build is the cache's
// NewInformer. controller-runtime calls it under the lock of one informer
// map, and a cache has several maps (one per namespace, one per ByObject
// entry), so it may be called concurrently: every field but logged is
// read-only after New.
type builder struct {
	config      *rest.Config
	base        *url.URL // the server's URL; its path prefixes every request
	scheme      *runtime.Scheme
	codecs      serializer.CodecFactory
	httpClient  *http.Client // the configured client, without the probe
	newInformer func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer
	wire        []wire.Option // the user's, after the diet and content type
	noWire      bool
	built       func(*pipeline.Informer, runtime.Object)
	logged      sync.Map // fallback reason → struct{}: each is logged once
}

// build is the cache's NewInformer: our informer on the wire, for the
// resource, namespace and selectors lw requests, or on lw itself where the
// wire cannot serve (the reason in Stats().ListerWatcher, logged once).
func (b *builder) build(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	var use toolscache.ListerWatcher
	if b.noWire {
		use = newFallback(lw, "WithoutWire")
	} else if w, err := b.wireFor(lw, obj); err != nil {
		reason := err.Error()
		if _, seen := b.logged.LoadOrStore(reason, struct{}{}); !seen {
			klog.V(2).InfoS("crcache: informer on controller-runtime's list/watch, without the wire decoder", "type", fmt.Sprintf("%T", obj), "reason", reason)
		}
		use = newFallback(lw, reason)
	} else {
		use = w
	}
	inf := b.newInformer(use, obj, resync, indexers)
	if b.built != nil {
		ours, _ := pipeline.Unwrap(inf)
		b.built(ours, obj)
	}
	return inf
}

// wireFor returns the wire's list/watch of what lw requests, for objects
// like obj.
func (b *builder) wireFor(lw toolscache.ListerWatcher, obj runtime.Object) (*listerWatcher, error) {
	gvk, err := apiutil.GVKForObject(obj, b.scheme)
	if err != nil {
		return nil, err
	}
	t, err := probeTarget(lw, b.base)
	if err != nil {
		return nil, fmt.Errorf("controller-runtime's list/watch cannot be read: %w", err)
	}
	if t.gvr.GroupVersion() != gvk.GroupVersion() {
		return nil, fmt.Errorf("controller-runtime's list/watch requests %v for %v", t.gvr, gvk)
	}
	res := wire.Resource{GVR: t.gvr, Namespace: t.namespace}
	var rc rest.Interface
	var fixup schema.GroupVersionKind
	switch obj.(type) {
	case runtime.Unstructured:
		// Unstructured objects, as the dynamic client's: Object nil.
		rc, err = apiutil.RESTClientForGVK(gvk, false, true, b.config, b.codecs, b.httpClient)
	case *metav1.PartialObjectMetadata:
		res.Object = &metav1.PartialObjectMetadata{}
		fixup = gvk
		rc, err = metadataRESTClient(b.config, b.httpClient)
	default:
		if t := reflect.TypeOf(obj); t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("%T is not a pointer to a struct", obj)
		}
		res.Object = reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
		res.Scheme = b.scheme
		rc, err = apiutil.RESTClientForGVK(gvk, false, false, b.config, b.codecs, b.httpClient)
	}
	if err != nil {
		return nil, err
	}
	w, err := wire.New(rc, res, append([]wire.Option{wire.WithDiet(), wire.WithContentType(t.contentType)}, b.wire...)...)
	if err != nil {
		return nil, err
	}
	return &listerWatcher{ListerWatcher: w, t: t, gvk: fixup}, nil
}

// metadataRESTClient is the REST client under client-go's metadata client,
// as metadata.NewForConfigAndClient builds it: its decoders know
// meta.k8s.io's kinds and Status.
func metadataRESTClient(config *rest.Config, hc *http.Client) (rest.Interface, error) {
	cfg := metadata.ConfigFor(config)
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/this-value-should-never-be-sent" // the wire names whole paths
	return rest.RESTClientForConfigAndClient(cfg, hc)
}
