// Package lwdesc gives a cache.ListerWatcher a description, which
// pipeline's Stats().ListerWatcher shows (it prints a ListerWatcher's
// String): the factories and crcache use it to say that an informer lists
// and watches through a client's own list/watch instead of the wire, and
// why.
package lwdesc

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// New returns lw with String returning desc. It keeps lw's context methods
// and its WatchList choice (IsWatchListSemanticsUnSupported, false — the
// reflector's default — if lw has none). Immutable.
func New(lw cache.ListerWatcher, desc string) cache.ListerWatcher {
	return &described{ListerWatcherWithContext: cache.ToListerWatcherWithContext(lw), inner: lw, desc: desc}
}

type described struct {
	cache.ListerWatcherWithContext
	inner cache.ListerWatcher
	desc  string
}

func (d *described) List(opts metav1.ListOptions) (runtime.Object, error) {
	return d.ListWithContext(context.Background(), opts)
}

func (d *described) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return d.WatchWithContext(context.Background(), opts)
}

func (d *described) IsWatchListSemanticsUnSupported() bool {
	u, ok := d.inner.(interface{ IsWatchListSemanticsUnSupported() bool })
	return ok && u.IsWatchListSemanticsUnSupported()
}

func (d *described) String() string { return d.desc }
