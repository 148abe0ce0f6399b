//go:build e2e

package e2e

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
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
}

// handlerSpec is one handler registered on an impl's informer.
type handlerSpec struct {
	name     string
	parallel int           // > 0: registered through addParallel with this many workers
	delay    time.Duration // simulated work per event
}

// impls is the registry; ours_e2e_test.go adds shardinformer's variants.
var impls = []impl{{
	name: "client-go",
	newInformer: func(lw cache.ListerWatcher, indexers cache.Indexers) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers)
	},
	handlers: []handlerSpec{
		{name: "fast"},
		{name: "slow", delay: 100 * time.Microsecond},
	},
}}
