package dynamicinformer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardinformer/shardinformer/informers/internal/gvrfactory"
	"github.com/shardinformer/shardinformer/informers/internal/restclient"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// DynamicSharedInformerFactory is client-go's.
type DynamicSharedInformerFactory = dynamicinformer.DynamicSharedInformerFactory

// TweakListOptionsFunc is client-go's.
type TweakListOptionsFunc = dynamicinformer.TweakListOptionsFunc

// SharedInformerFactory is a DynamicSharedInformerFactory that can also be
// started with a context, as client-go's typed factory can.
type SharedInformerFactory interface {
	DynamicSharedInformerFactory
	StartWithContext(ctx context.Context)
}

var (
	_ dynamicinformer.DynamicSharedInformerFactory = (*gvrfactory.Factory)(nil)
	_ SharedInformerFactory                        = (*gvrfactory.Factory)(nil)
)

// ErrInvalidResource is wrapped by the panic of ForResource for a resource
// without version or resource name.
var ErrInvalidResource = gvrfactory.ErrInvalidResource

var (
	errNilConfig = errors.New("dynamicinformer: NewForConfig: nil rest.Config")
	errNilClient = errors.New("dynamicinformer: nil client")
)

// NewDynamicSharedInformerFactory is client-go's constructor of the same
// name, building our informers: list/watch through client's REST client on
// the wire, with the diet, for all namespaces.
func NewDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration) DynamicSharedInformerFactory {
	return NewFilteredDynamicSharedInformerFactory(client, defaultResync, "", nil)
}

// NewFilteredDynamicSharedInformerFactory is client-go's constructor of the
// same name, building our informers: list/watch through client's REST
// client on the wire, with the diet, in namespace ("" is all) with
// tweakListOptions applied to every request. It panics on a nil client.
func NewFilteredDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) DynamicSharedInformerFactory {
	f, err := New(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
	if err != nil { // no pipeline or wire options: only a nil client fails
		panic(err)
	}
	return f
}

// New returns a factory whose informers list and watch through the wire
// decoder (package wire: streaming, decoding on several goroutines into
// the dynamic client's unstructured objects) on the REST client under
// client, with wire.WithDiet and then WithWireOptions; with WithoutWire,
// or for a client without a REST client (client-go's fake dynamic client,
// logged once at V(2)), through client's own List and Watch, decoded by
// client-go. It fails on a nil client and on invalid pipeline or wire
// options.
func New(client dynamic.Interface, defaultResync time.Duration, opts ...Option) (SharedInformerFactory, error) {
	if client == nil {
		return nil, errNilClient
	}
	c := configure(opts)
	rc, _ := restclient.Dynamic(client)
	return c.factory(defaultResync, client, rc, nil)
}

// NewForConfig returns a factory whose informers list and watch through the
// wire decoder, as New's do, on REST clients of their own built from cfg
// (wire.NewForConfig, which also decodes CBOR; a copy of cfg taken now:
// its QPS, burst, transport and timeout apply); with WithoutWire, through
// a dynamic client for cfg. It fails on a nil or invalid cfg and on
// invalid pipeline or wire options.
func NewForConfig(cfg *rest.Config, defaultResync time.Duration, opts ...Option) (SharedInformerFactory, error) {
	if cfg == nil {
		return nil, errNilConfig
	}
	cfg = rest.CopyConfig(cfg) // later changes to the caller's do not reach the informers
	c := configure(opts)
	client, err := dynamic.NewForConfig(cfg) // for WithoutWire; checks cfg
	if err != nil {
		return nil, fmt.Errorf("dynamicinformer: %w", err)
	}
	return c.factory(defaultResync, client, nil, cfg)
}

func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}

// factory builds the factory on client, listing and watching through the
// wire on rc or on REST clients built from cfg (neither: client's own
// list/watch, as for WithoutWire).
func (c config) factory(resync time.Duration, client dynamic.Interface, rc rest.Interface, cfg *rest.Config) (SharedInformerFactory, error) {
	lw, err := gvrfactory.Source{
		Kind: "dynamic", Client: client, REST: rc, Config: cfg, NoWire: c.noWire, Wire: c.wire,
		Namespace: c.namespace, Tweak: c.tweak,
		ClientListWatch: func(gvr schema.GroupVersionResource) cache.ListerWatcher {
			r := client.Resource(gvr).Namespace(c.namespace)
			return gvrfactory.ClientListWatch(r.List, r.Watch, c.tweak, client)
		},
	}.ListerWatchers()
	if err != nil {
		return nil, fmt.Errorf("dynamicinformer: %w", err)
	}
	f, err := gvrfactory.New(gvrfactory.Config{
		Kind:          "dynamic",
		Resync:        resync,
		Transform:     c.transform,
		Pipeline:      c.pipeline,
		NewObject:     func() runtime.Object { return &unstructured.Unstructured{} },
		ListerWatcher: lw,
		Lister: func(idx cache.Indexer, gvr schema.GroupVersionResource) cache.GenericLister {
			return dynamiclister.NewRuntimeObjectShim(dynamiclister.New(idx, gvr))
		},
	})
	if err != nil {
		return nil, err // not a nil *Factory in a non-nil interface
	}
	return f, nil
}
