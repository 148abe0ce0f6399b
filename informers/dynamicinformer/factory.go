package dynamicinformer

import (
	"context"
	"errors"
	"time"

	"github.com/shardinformer/shardinformer/informers/internal/gvrfactory"
	"github.com/shardinformer/shardinformer/wire"
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
	errWireOptions = errors.New("dynamicinformer: WithWireOptions needs NewForConfig")
	errNilConfig   = errors.New("dynamicinformer: NewForConfig: nil rest.Config")
	errNilClient   = errors.New("dynamicinformer: nil client")
)

// NewDynamicSharedInformerFactory is client-go's constructor of the same
// name, building our informers: list/watch through client for all
// namespaces.
func NewDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration) DynamicSharedInformerFactory {
	return NewFilteredDynamicSharedInformerFactory(client, defaultResync, "", nil)
}

// NewFilteredDynamicSharedInformerFactory is client-go's constructor of the
// same name, building our informers: list/watch through client in
// namespace ("" is all) with tweakListOptions applied to every request.
func NewFilteredDynamicSharedInformerFactory(client dynamic.Interface, defaultResync time.Duration, namespace string, tweakListOptions TweakListOptionsFunc) DynamicSharedInformerFactory {
	f, err := New(client, defaultResync, WithNamespace(namespace), WithTweakListOptions(tweakListOptions))
	if err != nil { // no pipeline options: only a nil client fails
		panic(err)
	}
	return f
}

// New returns a factory whose informers list and watch through client. It
// fails on a nil client, invalid pipeline options and WithWireOptions.
func New(client dynamic.Interface, defaultResync time.Duration, opts ...Option) (SharedInformerFactory, error) {
	if client == nil {
		return nil, errNilClient
	}
	c := configure(opts)
	if len(c.wire) > 0 {
		return nil, errWireOptions
	}
	return c.factory(defaultResync, func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
		r := client.Resource(gvr).Namespace(c.namespace)
		return gvrfactory.ClientListWatch(r.List, r.Watch, c.tweak, client), nil
	})
}

// NewForConfig returns a factory whose informers list and watch through the
// wire package's decoder (streaming, decoding on several goroutines; see
// package wire), as unstructured objects like the dynamic client's. cfg's
// QPS, burst, transport and timeout apply (a copy taken now). It fails on a
// nil cfg and on invalid pipeline or wire options.
func NewForConfig(cfg *rest.Config, defaultResync time.Duration, opts ...Option) (SharedInformerFactory, error) {
	if cfg == nil {
		return nil, errNilConfig
	}
	cfg = rest.CopyConfig(cfg) // later changes to the caller's do not reach the informers
	c := configure(opts)
	wireOpts := append(c.wire[:len(c.wire):len(c.wire)], wire.WithTweakListOptions(c.tweak))
	lw := func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
		return wire.NewForConfig(cfg, wire.Resource{GVR: gvr, Namespace: c.namespace}, wireOpts...)
	}
	// Check cfg and the wire options now, on a resource of any name.
	if _, err := lw(schema.GroupVersionResource{Version: "v1", Resource: "checks"}); err != nil {
		return nil, err
	}
	return c.factory(defaultResync, lw)
}

func configure(opts []Option) config {
	var c config
	for _, o := range opts {
		o(&c)
	}
	return c
}

func (c config) factory(resync time.Duration, lw func(schema.GroupVersionResource) (cache.ListerWatcher, error)) (SharedInformerFactory, error) {
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
