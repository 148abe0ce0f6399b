package testkit

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Impl is an informer implementation under test: client-go's or ours (in a
// configuration), built through one constructor so that the same tests run
// against each. ClientGo is client-go's; package testkit/ours builds ours.
type Impl struct {
	Name string
	// Ours: shardinformer's informer (pipeline.Unwrap finds it).
	Ours bool
	// New has cache.NewSharedIndexInformer's signature.
	New func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer
}

// ClientGo is client-go's informer.
var ClientGo = Impl{Name: "client-go", New: func(lw cache.ListerWatcher, example runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(lw, example, resync, indexers)
}}

// parallel is the registration method of our informer that client-go's
// lacks.
type parallel interface {
	AddParallelEventHandler(h cache.ResourceEventHandler, workers int) (cache.ResourceEventHandlerRegistration, error)
}

// AddHandler registers h on inf, an informer im built: with workers > 1 as
// a parallel handler (ours only; an error for client-go's), else with
// AddEventHandler.
func (im Impl) AddHandler(inf cache.SharedInformer, h cache.ResourceEventHandler, workers int) (cache.ResourceEventHandlerRegistration, error) {
	if workers <= 1 {
		return inf.AddEventHandler(h)
	}
	p, ok := inf.(parallel)
	if !ok {
		return nil, fmt.Errorf("testkit: %s (%T) has no parallel handlers", im.Name, inf)
	}
	return p.AddParallelEventHandler(h, workers)
}
