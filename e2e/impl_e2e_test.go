//go:build e2e

package e2e

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/wire"
)

// impl is one informer implementation (or configuration) under test. Every
// scenario runs all registered impls side by side on the same server.
type impl struct {
	name        string
	newInformer func(lw cache.ListerWatcher, indexers cache.Indexers) cache.SharedIndexInformer
	// addParallel registers a handler run by `workers` goroutines, ordered
	// per key; nil when the implementation has no such API.
	addParallel func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, workers int) (cache.ResourceEventHandlerRegistration, error)
	handlers    []handlerSpec
	// wire, if not nil, makes the informer list and watch through package
	// wire's ListerWatcher with these options (the harness adds the
	// scenario's content type); nil: client-go's typed client and decoder.
	wire []wire.Option
	// diet: wire drops managedFields, so the cache is compared with the
	// server's objects without them.
	diet bool
	// factory, if not nil, builds the informer as a user's informer factory
	// or cache does (factoryArgs); newInformer and wire are then unused.
	factory func(factoryArgs) (cache.SharedIndexInformer, error)
}

// factoryArgs is what a factory impl builds its informer from: a clientset
// on cfg, whose transport the harness taps (httpTap), the scenario's
// namespace, media type and label selector, and tweak, which applies the
// selector to a request's options.
type factoryArgs struct {
	client              kubernetes.Interface
	cfg                 *rest.Config
	ns, media, selector string
	tweak               func(*metav1.ListOptions)
}

// handlerSpec is one handler registered on an impl's informer.
type handlerSpec struct {
	name     string
	parallel int           // > 0: registered through addParallel with this many workers
	delay    time.Duration // simulated work per event
}

func clientGoInformer(lw cache.ListerWatcher, indexers cache.Indexers) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers)
}

// impls is the registry; ours_e2e_test.go adds shardinformer's variants.
// client-go+wire is client-go's informer on the wire decoder as loadgen's
// client-go+wire runs it: GOMAXPROCS workers and the diet.
var impls = []impl{{
	name:        "client-go",
	newInformer: clientGoInformer,
	handlers: []handlerSpec{
		{name: "fast"},
		{name: "slow", delay: 100 * time.Microsecond},
	},
}, {
	// client-go's typed factory: the path of the import swap, for comparison.
	name: "client-go/factory",
	factory: func(a factoryArgs) (cache.SharedIndexInformer, error) {
		return informers.NewSharedInformerFactoryWithOptions(a.client, 0, informers.WithNamespace(a.ns), informers.WithTweakListOptions(a.tweak)).Core().V1().Pods().Informer(), nil
	},
	handlers: []handlerSpec{{name: "fast"}},
}, {
	name:        "client-go+wire",
	newInformer: clientGoInformer,
	handlers:    []handlerSpec{{name: "fast"}},
	wire:        []wire.Option{wire.WithDiet()},
	diet:        true,
}}
