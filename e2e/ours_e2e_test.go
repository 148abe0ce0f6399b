//go:build e2e && !e2e_clientgo_only

package e2e

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	crcachepkg "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/crcache"
	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

func init() {
	addParallel := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, workers int) (cache.ResourceEventHandlerRegistration, error) {
		ours, _ := pipeline.Unwrap(inf) // behind client-go's typed wrapper for factory informers
		return ours.AddParallelEventHandler(h, workers)
	}
	ours := func(opts ...pipeline.Option) func(cache.ListerWatcher, cache.Indexers) cache.SharedIndexInformer {
		return func(lw cache.ListerWatcher, indexers cache.Indexers) cache.SharedIndexInformer {
			return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers, opts...)
		}
	}
	// Ours as loadgen runs it by default: on the wire with GOMAXPROCS
	// workers and the diet.
	impls = append(impls, impl{
		name:        "shardinformer",
		newInformer: ours(pipeline.WithShards(4)),
		addParallel: addParallel,
		handlers: []handlerSpec{
			{name: "serial"},
			{name: "parallel4", parallel: 4},
		},
		wire: []wire.Option{wire.WithDiet()},
		diet: true,
	})
	// Ours through the typed factory, as a user gets it after the import
	// swap: the wire on the clientset's REST client, with the diet.
	impls = append(impls, impl{
		name: "shardinformer/factory",
		factory: func(a factoryArgs) (cache.SharedIndexInformer, error) {
			f := informers.NewSharedInformerFactoryWithOptions(a.client, 0, informers.WithNamespace(a.ns), informers.WithTweakListOptions(a.tweak),
				informers.WithWireOptions(wireContent(a.media)...), informers.WithPipelineOptions(pipeline.WithShards(4)))
			return f.Core().V1().Pods().Informer(), nil
		},
		addParallel: addParallel,
		handlers: []handlerSpec{
			{name: "serial"},
			{name: "parallel4", parallel: 4},
		},
		diet: true,
	})
	// The typed factory with the compact store on pods: the cache holds
	// encoded pods, handlers and listers get decoded ones.
	impls = append(impls, impl{
		name: "shardinformer/compact",
		factory: func(a factoryArgs) (cache.SharedIndexInformer, error) {
			f := informers.NewSharedInformerFactoryWithOptions(a.client, 0, informers.WithNamespace(a.ns), informers.WithTweakListOptions(a.tweak),
				informers.WithWireOptions(wireContent(a.media)...), informers.WithPipelineOptions(pipeline.WithShards(4), pipeline.WithCompactStore(compact.Config{})))
			return f.Core().V1().Pods().Informer(), nil
		},
		addParallel: addParallel,
		handlers:    []handlerSpec{{name: "parallel4", parallel: 4}},
		diet:        true,
	})
	// Ours through controller-runtime's cache (crcache.New): the informer
	// controller-runtime builds for pods of the namespace, with the
	// scenario's selector as its default label selector; the wire's content
	// type follows the config's, as controller-runtime's client would. The
	// harness runs the informer itself (the cache is never started).
	impls = append(impls, impl{
		name: "shardinformer/controller-runtime",
		factory: func(a factoryArgs) (cache.SharedIndexInformer, error) {
			// The namespace by a field selector, which controller-runtime turns
			// into the request's namespace: DefaultNamespaces would make a
			// multi-namespace cache, whose informer aggregates (hides) ours.
			opts := crcachepkg.Options{DefaultFieldSelector: fields.OneTermEqualSelector("metadata.namespace", a.ns)}
			if a.selector != "" {
				sel, err := labels.Parse(a.selector)
				if err != nil {
					return nil, err
				}
				opts.DefaultLabelSelector = sel
			}
			newCache, err := crcache.NewFunc(crcache.WithPipelineOptions(pipeline.WithShards(4)))
			if err != nil {
				return nil, err
			}
			c, err := newCache(a.cfg, opts)
			if err != nil {
				return nil, err
			}
			inf, err := c.GetInformer(context.Background(), &corev1.Pod{})
			if err != nil {
				return nil, err
			}
			si, ok := inf.(cache.SharedInformer)
			if !ok {
				return nil, fmt.Errorf("controller-runtime's informer %T is not a SharedInformer", inf)
			}
			ours, ok := pipeline.Unwrap(si)
			if !ok {
				return nil, fmt.Errorf("controller-runtime's informer %T is not ours", inf)
			}
			return ours, nil
		},
		addParallel: addParallel,
		handlers:    []handlerSpec{{name: "serial"}},
		diet:        true,
	})
	// Tiny rings and slow handlers so that every full-ring policy is
	// actually exercised during the churn. They also cover the other
	// decoders in turn: the wire without the diet on one worker (its single
	// goroutine path) and on four (more workers than cores: reordering),
	// and client-go's decoder under our core.
	decoders := []struct {
		name string
		wire []wire.Option
	}{
		{"wire-w1", []wire.Option{wire.WithWorkers(1)}},
		{"wire-w4", []wire.Option{wire.WithWorkers(4)}},
		{"client-go-decoder", nil},
	}
	for i, p := range pipeline.FullRingPolicies() {
		d := decoders[i%len(decoders)]
		impls = append(impls, impl{
			name:        "shardinformer/ring8/" + p.String() + "/" + d.name,
			newInformer: ours(pipeline.WithShards(2), pipeline.WithRingCapacity(8), pipeline.WithFullRingPolicy(p)),
			addParallel: addParallel,
			handlers: []handlerSpec{
				{name: "slow-serial", delay: 100 * time.Microsecond},
				{name: "slow-parallel3", parallel: 3, delay: 200 * time.Microsecond},
			},
			wire: d.wire,
		})
	}
}

// wireContent returns the wire options for a scenario's media type.
func wireContent(media string) []wire.Option {
	switch media {
	case mediaJSON:
		return []wire.Option{wire.WithContentType(wire.JSON)}
	case mediaCBOR:
		return []wire.Option{wire.WithContentType(wire.CBOR)}
	}
	return nil
}
