package gvrfactory

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ClientListWatch returns the list/watch calling list and watchFn (a
// dynamic or metadata client's resource interface, namespace chosen) with
// tweak applied to the options, as client-go's dynamic and metadata
// informers do; client's IsWatchListSemanticsUnSupported, if it has one,
// says whether it supports WatchList (cache.ToListWatcherWithWatchListSemantics).
func ClientListWatch[L runtime.Object](
	list func(context.Context, metav1.ListOptions) (L, error),
	watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error),
	tweak func(*metav1.ListOptions), client any,
) cache.ListerWatcher {
	tweaked := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, tweaked(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return watchFn(ctx, tweaked(o))
		},
	}, client)
}
