package pipeline

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// This file holds what adoption code (package informers, frameworks that
// take client-go's constructors) needs from the pipeline: client-go's
// options-struct constructor, and a way back from a wrapped informer to ours.

// errMetricsProvider is returned for an option we cannot honour.
var errMetricsProvider = errors.New("pipeline: SharedIndexInformerOptions.InformerMetricsProvider is client-go's queue metrics and is not produced by this informer; use WithObserver (promadapter) instead")

// NewSharedIndexInformerWithOptions is the counterpart of client-go's
// cache.NewSharedIndexInformerWithOptions: options.ResyncPeriod and
// options.Indexers as there; options.ObjectDescription, or else the name of
// options.Identifier with its resource, names the informer (WithName, which
// opts may override). It panics on invalid options, as
// NewSharedIndexInformer does, and on a non-nil InformerMetricsProvider, which
// this informer cannot feed: its metrics go through WithObserver.
func NewSharedIndexInformerWithOptions(lw cache.ListerWatcher, exampleObject runtime.Object, options cache.SharedIndexInformerOptions, opts ...Option) *Informer {
	if options.InformerMetricsProvider != nil {
		panic(errMetricsProvider)
	}
	var named []Option
	switch id := options.Identifier; {
	case options.ObjectDescription != "":
		named = append(named, WithName(options.ObjectDescription))
	case id.Name() != "":
		named = append(named, WithName(fmt.Sprintf("%s %s", id.Name(), id.GroupVersionResource().GroupResource())))
	}
	return NewSharedIndexInformer(lw, exampleObject, options.ResyncPeriod, options.Indexers, append(named, opts...)...)
}

// Unwrap returns the *Informer behind inf: inf itself, or the informer behind
// a wrapper that passes GetController through — client-go's
// cache.NewTypedSharedIndexInformer, which the typed accessors of informer
// factories return (f.Core().V1().Pods().Informer()), or any struct
// embedding the informer. It reports false for client-go's informer and for
// nil. Use it to reach AddParallelEventHandler and Stats from such a wrapper.
func Unwrap(inf cache.SharedInformer) (*Informer, bool) {
	if inf == nil {
		return nil, false
	}
	if ours, ok := inf.(*Informer); ok {
		return ours, ours != nil
	}
	if c, ok := inf.GetController().(controllerView); ok {
		return c.inf, true
	}
	return nil, false
}
