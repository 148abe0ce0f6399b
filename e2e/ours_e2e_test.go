//go:build e2e && !e2e_clientgo_only

package e2e

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/pipeline"
)

func init() {
	addParallel := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler, workers int) (cache.ResourceEventHandlerRegistration, error) {
		return inf.(*pipeline.Informer).AddParallelEventHandler(h, workers)
	}
	ours := func(opts ...pipeline.Option) func(cache.ListerWatcher, cache.Indexers) cache.SharedIndexInformer {
		return func(lw cache.ListerWatcher, indexers cache.Indexers) cache.SharedIndexInformer {
			return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers, opts...)
		}
	}
	impls = append(impls, impl{
		name:        "shardinformer",
		newInformer: ours(pipeline.WithShards(4)),
		addParallel: addParallel,
		handlers: []handlerSpec{
			{name: "serial"},
			{name: "parallel4", parallel: 4},
		},
	})
	// Tiny rings and slow handlers so that every full-ring policy is
	// actually exercised during the churn.
	for _, p := range pipeline.FullRingPolicies() {
		impls = append(impls, impl{
			name:        "shardinformer/ring8/" + p.String(),
			newInformer: ours(pipeline.WithShards(2), pipeline.WithRingCapacity(8), pipeline.WithFullRingPolicy(p)),
			addParallel: addParallel,
			handlers: []handlerSpec{
				{name: "slow-serial", delay: 100 * time.Microsecond},
				{name: "slow-parallel3", parallel: 3, delay: 200 * time.Microsecond},
			},
		})
	}
}
