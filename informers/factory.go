package informers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/informers/admissionregistration"
	"k8s.io/client-go/informers/apiserverinternal"
	"k8s.io/client-go/informers/apps"
	"k8s.io/client-go/informers/autoscaling"
	"k8s.io/client-go/informers/batch"
	"k8s.io/client-go/informers/certificates"
	"k8s.io/client-go/informers/coordination"
	"k8s.io/client-go/informers/core"
	"k8s.io/client-go/informers/discovery"
	"k8s.io/client-go/informers/events"
	"k8s.io/client-go/informers/extensions"
	"k8s.io/client-go/informers/flowcontrol"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/informers/lifecycle"
	"k8s.io/client-go/informers/networking"
	"k8s.io/client-go/informers/node"
	"k8s.io/client-go/informers/policy"
	"k8s.io/client-go/informers/rbac"
	"k8s.io/client-go/informers/resource"
	"k8s.io/client-go/informers/scheduling"
	"k8s.io/client-go/informers/storage"
	"k8s.io/client-go/informers/storagemigration"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SharedInformerFactory is client-go's factory interface: the factories of
// this package satisfy it, so code written against client-go's keeps working.
type SharedInformerFactory = informers.SharedInformerFactory

// GenericInformer is client-go's, returned by ForResource.
type GenericInformer = informers.GenericInformer

// Errors. Panics of the factory carry errors wrapping them.
var (
	// ErrNotOurs: InformerFor was given a newFunc that builds an informer
	// other than shardinformer's (client-go's, typically).
	ErrNotOurs = errors.New("informers: the factory hands out only shardinformer informers")
	// ErrNilClient: the factory was given a nil client.
	ErrNilClient = errors.New("informers: nil client")
)

// NewSharedInformerFactory is client-go's informers.NewSharedInformerFactory
// with our informers: a factory for all namespaces.
func NewSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync)
}

// NewFilteredSharedInformerFactory is client-go's, with our informers.
//
// Deprecated: use NewSharedInformerFactoryWithOptions, as in client-go.
func NewFilteredSharedInformerFactory(client kubernetes.Interface, defaultResync time.Duration, namespace string, tweakListOptions internalinterfaces.TweakListOptionsFunc) SharedInformerFactory {
	return NewSharedInformerFactoryWithOptions(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
}

// NewSharedInformerFactoryWithOptions is client-go's
// informers.NewSharedInformerFactoryWithOptions with our informers. Like
// client-go's it cannot return an error: it panics on a nil client or invalid
// pipeline options (New returns the error instead).
func NewSharedInformerFactoryWithOptions(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) SharedInformerFactory {
	f, err := New(client, defaultResync, options...)
	if err != nil {
		panic(err)
	}
	return f
}

// New returns a factory of shardinformer informers for client's types, with
// defaultResync for every type not in WithCustomResyncConfig. It starts
// nothing. It fails on a nil client and on invalid pipeline options, checked
// here so that no informer constructor fails later.
func New(client kubernetes.Interface, defaultResync time.Duration, options ...SharedInformerOption) (SharedInformerFactory, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	var cfg config
	for _, o := range options {
		o(&cfg)
	}
	if err := validate(cfg.pipeline); err != nil {
		return nil, err
	}
	for t := range cfg.pipelineFor {
		if err := validate(cfg.pipelineOptions(t)); err != nil {
			return nil, fmt.Errorf("WithPipelineOptionsFor(%v): %w", t, err)
		}
	}
	if !cfg.noWire {
		if err := validateWire(cfg.wireOptions()); err != nil {
			return nil, fmt.Errorf("WithWireOptions: %w", err)
		}
	}
	f := &factory{cfg: cfg, store: informers.NewSharedInformerFactoryWithOptions(client, defaultResync, cfg.lifecycle...)}
	f.generated = generatedFactory{f}
	return f, nil
}

// validate reports invalid pipeline options by building (not starting) an
// informer with them.
func validate(opts []pipeline.Option) error {
	_, err := pipeline.New(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, nil, opts...)
	return err
}

// validateWire reports invalid wire options by building (not using) a
// ListerWatcher with them.
func validateWire(opts []wire.Option) error {
	_, err := wire.NewForConfig(&rest.Config{Host: "http://localhost"}, wire.Resource{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Object: &corev1.Pod{}}, opts...)
	return err
}

// factory is a SharedInformerFactory whose informers are shardinformer's.
//
// They live in store, a client-go factory: its InformerFor keeps one informer
// per type, passes the type's resync period to the constructor and applies
// the transform; its Start, WaitForCacheSync and Shutdown run, await and
// join them with client-go's semantics, Shutdown waiting until every
// informer's RunWithContext — which waits for all of its goroutines — has
// returned. Only our informers enter store: client-go's typed accessors
// reach it through generated, which builds ours, and InformerFor panics
// before storing anything else. All methods are safe for concurrent use
// (store's lock serialises InformerFor); cfg is read-only.
type factory struct {
	cfg       config
	store     informers.SharedInformerFactory
	generated generatedFactory
	// fallback logs, once, that the client cannot serve the wire.
	fallback sync.Once
}

var _ SharedInformerFactory = (*factory)(nil)

// ours returns the factory's informer for obj's type, building it if needed.
// It panics for a type kubernetes.Interface has no list/watch client for,
// which a typed accessor cannot ask for (TestEveryTypedAccessor).
func (f *factory) ours(obj runtime.Object) cache.SharedIndexInformer {
	r, ok := resourceByType[reflect.TypeOf(obj)]
	if !ok {
		panic(fmt.Errorf("%w: %T", ErrUnknownType, obj))
	}
	return f.store.InformerFor(obj, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw, fellBack := r.listerWatcher(c, f.cfg.namespace, f.cfg.tweak, f.cfg.wireOptions(), f.cfg.noWire)
		if fellBack != nil {
			f.fallback.Do(func() {
				klog.V(2).InfoS("shardinformer factory: listing and watching through the clientset's typed clients, without the wire decoder", "reason", fellBack.Error())
			})
		}
		return pipeline.NewSharedIndexInformer(lw, r.newObject(), resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, f.cfg.pipelineOptions(r.objectType)...)
	})
}

// InformerFor returns the informer for obj's type if the factory has one
// (whatever newFunc), as client-go's does. Otherwise it builds one with
// newFunc, which must build a shardinformer informer — with
// pipeline.NewSharedIndexInformer and NewFilteredListWatch, say. If newFunc
// returns client-go's informer (or any other) InformerFor panics with an
// error wrapping ErrNotOurs and the factory keeps nothing for the type: it
// never hands out client-go's informer.
func (f *factory) InformerFor(obj runtime.Object, newFunc internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return f.store.InformerFor(obj, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		inf := newFunc(c, resync)
		if _, ok := pipeline.Unwrap(inf); !ok {
			panic(fmt.Errorf("%w: InformerFor(%T): newFunc returned %T; build it with pipeline.NewSharedIndexInformer (informers.NewFilteredListWatch gives the list/watch)", ErrNotOurs, obj, inf))
		}
		return inf
	})
}

// ForResource returns the informer of a built-in resource, as client-go's
// does; the error wraps ErrUnknownType for any other resource.
func (f *factory) ForResource(gvr schema.GroupVersionResource) (GenericInformer, error) {
	r, ok := resourceByGVR[gvr]
	if !ok {
		return nil, fmt.Errorf("%w: no informer found for %v", ErrUnknownType, gvr)
	}
	return genericInformer{informer: f.ours(r.newObject()), resource: gvr.GroupResource()}, nil
}

type genericInformer struct {
	informer cache.SharedIndexInformer
	resource schema.GroupResource
}

func (g genericInformer) Informer() cache.SharedIndexInformer { return g.informer }
func (g genericInformer) Lister() cache.GenericLister {
	return cache.NewGenericLister(g.informer.GetIndexer(), g.resource)
}

// Lifecycle: client-go's, on the informers in store.

func (f *factory) Start(stopCh <-chan struct{})         { f.store.Start(stopCh) }
func (f *factory) StartWithContext(ctx context.Context) { f.store.StartWithContext(ctx) }
func (f *factory) Shutdown()                            { f.store.Shutdown() }
func (f *factory) InformerName() *cache.InformerName    { return f.store.InformerName() }
func (f *factory) WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool {
	return f.store.WaitForCacheSync(stopCh)
}
func (f *factory) WaitForCacheSyncWithContext(ctx context.Context) cache.SyncResult {
	return f.store.WaitForCacheSyncWithContext(ctx)
}

// generatedFactory is the factory as client-go's generated typed accessors
// see it (core.New(f.generated, …)): their InformerFor passes a newFunc that
// would build client-go's informer, with the namespace and tweak they were
// given — ours, from cfg. It builds our informer for the type instead.
type generatedFactory struct{ f *factory }

func (g generatedFactory) Start(stopCh <-chan struct{})      { g.f.Start(stopCh) }
func (g generatedFactory) InformerName() *cache.InformerName { return g.f.InformerName() }
func (g generatedFactory) InformerFor(obj runtime.Object, _ internalinterfaces.NewInformerFunc) cache.SharedIndexInformer {
	return g.f.ours(obj)
}

// The typed accessors: client-go's generated groups over generatedFactory.
// A group added to client-go's interface fails to compile here (no method)
// rather than falling back to client-go's informers.

// groupArgs are the arguments of client-go's group constructors.
func (f *factory) groupArgs() (internalinterfaces.SharedInformerFactory, string, internalinterfaces.TweakListOptionsFunc) {
	return f.generated, f.cfg.namespace, f.cfg.tweak
}

func (f *factory) Admissionregistration() admissionregistration.Interface {
	return admissionregistration.New(f.groupArgs())
}
func (f *factory) Internal() apiserverinternal.Interface { return apiserverinternal.New(f.groupArgs()) }
func (f *factory) Apps() apps.Interface                  { return apps.New(f.groupArgs()) }
func (f *factory) Autoscaling() autoscaling.Interface    { return autoscaling.New(f.groupArgs()) }
func (f *factory) Batch() batch.Interface                { return batch.New(f.groupArgs()) }
func (f *factory) Certificates() certificates.Interface  { return certificates.New(f.groupArgs()) }
func (f *factory) Coordination() coordination.Interface  { return coordination.New(f.groupArgs()) }
func (f *factory) Core() core.Interface                  { return core.New(f.groupArgs()) }
func (f *factory) Discovery() discovery.Interface        { return discovery.New(f.groupArgs()) }
func (f *factory) Events() events.Interface              { return events.New(f.groupArgs()) }
func (f *factory) Extensions() extensions.Interface      { return extensions.New(f.groupArgs()) }
func (f *factory) Flowcontrol() flowcontrol.Interface    { return flowcontrol.New(f.groupArgs()) }
func (f *factory) Lifecycle() lifecycle.Interface        { return lifecycle.New(f.groupArgs()) }
func (f *factory) Networking() networking.Interface      { return networking.New(f.groupArgs()) }
func (f *factory) Node() node.Interface                  { return node.New(f.groupArgs()) }
func (f *factory) Policy() policy.Interface              { return policy.New(f.groupArgs()) }
func (f *factory) Rbac() rbac.Interface                  { return rbac.New(f.groupArgs()) }
func (f *factory) Resource() resource.Interface          { return resource.New(f.groupArgs()) }
func (f *factory) Scheduling() scheduling.Interface      { return scheduling.New(f.groupArgs()) }
func (f *factory) Storage() storage.Interface            { return storage.New(f.groupArgs()) }
func (f *factory) Storagemigration() storagemigration.Interface {
	return storagemigration.New(f.groupArgs())
}
