package crcache

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/internal/lwdesc"
	"github.com/shardinformer/shardinformer/wire"
)

// listerWatcher is the wire's list/watch for one controller-runtime
// informer: every request gets the selectors controller-runtime's own
// list/watch would send (and every watch its allowWatchBookmarks), and
// metadata-only objects get their GroupVersionKind before they reach the
// informer, as controller-runtime's list loop and newGVKFixupWatcher set
// it (gvkWatch). Safe for concurrent use, as the wire's ListerWatcher is;
// immutable.
type listerWatcher struct {
	*wire.ListerWatcher
	t target
	// gvk is set on every metadata-only object; empty for other objects.
	gvk schema.GroupVersionKind
}

var (
	_ cache.ListerWatcher            = (*listerWatcher)(nil)
	_ cache.ListerWatcherWithContext = (*listerWatcher)(nil)
)

func (lw *listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists through the wire with controller-runtime's
// selectors.
func (lw *listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	lw.applySelectors(&opts)
	obj, err := lw.ListerWatcher.ListWithContext(ctx, opts)
	if list, ok := obj.(*metav1.PartialObjectMetadataList); ok && !lw.gvk.Empty() {
		for i := range list.Items {
			list.Items[i].SetGroupVersionKind(lw.gvk)
		}
	}
	return obj, err
}

// WatchWithContext watches through the wire with controller-runtime's
// selectors and bookmark choice; for metadata-only objects through a
// gvkWatch.
func (lw *listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw.applySelectors(&opts)
	opts.AllowWatchBookmarks = lw.t.allowBookmarks
	w, err := lw.ListerWatcher.WatchWithContext(ctx, opts)
	if err != nil || lw.gvk.Empty() {
		return w, err
	}
	return newGVKWatch(w, lw.gvk), nil
}

// applySelectors sets controller-runtime's selectors on opts, as its
// Selector.ApplyToList does (the reflector sets none).
func (lw *listerWatcher) applySelectors(opts *metav1.ListOptions) {
	if lw.t.labelSelector != "" {
		opts.LabelSelector = lw.t.labelSelector
	}
	if lw.t.fieldSelector != "" {
		opts.FieldSelector = lw.t.fieldSelector
	}
}

// String is the wire's description with the selectors: "wire pods.v1 in
// shop: protobuf, 2 workers, diet (…); label selector "tier=web"".
func (lw *listerWatcher) String() string {
	var b strings.Builder
	b.WriteString(lw.ListerWatcher.String())
	if lw.t.labelSelector != "" {
		fmt.Fprintf(&b, "; label selector %q", lw.t.labelSelector)
	}
	if lw.t.fieldSelector != "" {
		fmt.Fprintf(&b, "; field selector %q", lw.t.fieldSelector)
	}
	if !lw.t.allowBookmarks {
		b.WriteString("; no bookmarks")
	}
	return b.String()
}

// gvkWatch sets a GroupVersionKind on the object of every event of a
// watch before passing it on, as controller-runtime's newGVKFixupWatcher
// does for metadata-only objects (which arrive as PartialObjectMetadata).
// Unlike watch.Filter, which that uses, its goroutine also ends when the
// consumer stops reading after Stop, and Stop returns only once it has.
type gvkWatch struct {
	in     watch.Interface
	gvk    schema.GroupVersionKind
	out    chan watch.Event // owned by loop, which closes it
	done   chan struct{}    // closed by Stop
	exited chan struct{}    // closed when loop returns
	stop   sync.Once
}

func newGVKWatch(in watch.Interface, gvk schema.GroupVersionKind) *gvkWatch {
	w := &gvkWatch{in: in, gvk: gvk, out: make(chan watch.Event), done: make(chan struct{}), exited: make(chan struct{})}
	go w.loop() // goroutine: the watch's fixup; ends with in's events or Stop, which waits for it.
	return w
}

func (w *gvkWatch) loop() {
	defer close(w.exited)
	defer close(w.out)
	for e := range w.in.ResultChan() {
		if e.Object != nil {
			e.Object.GetObjectKind().SetGroupVersionKind(w.gvk)
		}
		select {
		case w.out <- e:
		case <-w.done:
			return
		}
	}
}

func (w *gvkWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop stops the wrapped watch and returns once loop has returned. Safe to
// call more than once, from any goroutine.
func (w *gvkWatch) Stop() {
	w.stop.Do(func() {
		close(w.done)
		w.in.Stop()
	})
	<-w.exited
}

// newFallback is controller-runtime's own list/watch, used because the
// wire could not be (reason); its String says so, for pipeline.Stats:
// "controller-runtime list/watch (reason)". It keeps the wrapped
// ListerWatcher's context methods and WatchList choice.
func newFallback(lw cache.ListerWatcher, reason string) cache.ListerWatcher {
	return lwdesc.New(lw, "controller-runtime list/watch ("+reason+")")
}
