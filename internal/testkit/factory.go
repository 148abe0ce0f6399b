package testkit

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
)

// GVRFactory is the method set of client-go's dynamic and metadata informer
// factories (dynamicinformer.DynamicSharedInformerFactory,
// metadatainformer.SharedInformerFactory), theirs and ours.
type GVRFactory interface {
	Start(stopCh <-chan struct{})
	ForResource(gvr schema.GroupVersionResource) informers.GenericInformer
	WaitForCacheSync(stopCh <-chan struct{}) map[schema.GroupVersionResource]bool
	Shutdown()
}

// StartFactory starts f, waits for its caches, and when the test ends
// cancels it and shuts it down (Shutdown waits for the informers).
func StartFactory(t testing.TB, f GVRFactory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	f.Start(ctx.Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", gvr)
		}
	}
}

// CheckFactoryLifecycle checks, on a new factory f whose server serves
// resources a, b and c with objects of a, client-go's factory semantics:
// Start starts only the informers asked for so far, and each once;
// WaitForCacheSync reports the started ones; Shutdown waits for every
// informer started and may be called again; after it Start starts nothing.
func CheckFactoryLifecycle(t *testing.T, f GVRFactory, a, b, c schema.GroupVersionResource, objectsOfA int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done()) // nothing to start yet
	if got := f.WaitForCacheSync(ctx.Done()); len(got) != 0 {
		t.Fatalf("WaitForCacheSync before any informer: %v", got)
	}
	ia := f.ForResource(a)
	f.Start(ctx.Done())
	f.Start(ctx.Done()) // starts nothing more
	ib := f.ForResource(b)
	if got := f.WaitForCacheSync(ctx.Done()); len(got) != 1 || !got[a] {
		t.Fatalf("WaitForCacheSync = %v, want only %v, synced", got, a)
	}
	if ib.Informer().HasSynced() {
		t.Errorf("%v synced without being started", b)
	}
	f.Start(ctx.Done())
	if got := f.WaitForCacheSync(ctx.Done()); len(got) != 2 || !got[a] || !got[b] {
		t.Fatalf("WaitForCacheSync = %v, want %v and %v, synced", got, a, b)
	}
	if n := len(ia.Informer().GetStore().ListKeys()); n != objectsOfA {
		t.Fatalf("%v cached: %d, want %d", a, n, objectsOfA)
	}
	cancel()
	f.Shutdown()
	f.Shutdown() // again: returns at once
	if !ia.Informer().IsStopped() || !ib.Informer().IsStopped() {
		t.Error("an informer is still running after Shutdown")
	}
	f.ForResource(c)
	f.Start(context.Background().Done())
	if got := f.WaitForCacheSync(ctx.Done()); len(got) != 2 {
		t.Errorf("Start after Shutdown started an informer: %v", got)
	}
}

// Check fails the test unless some recorded request was for resource (the
// last path element) and every one for it went to path with labelSelector
// selector.
func (r *Requests) Check(t testing.TB, resource, path, selector string) {
	t.Helper()
	n := 0
	for _, req := range r.All() {
		p, rawQuery, _ := strings.Cut(req, "?")
		if !strings.HasSuffix(p, "/"+resource) {
			continue
		}
		n++
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			t.Fatal(err)
		}
		if p != path || q.Get("labelSelector") != selector {
			t.Errorf("request %s: want path %s with labelSelector=%s", req, path, selector)
		}
	}
	if n == 0 {
		t.Errorf("no %s request recorded", resource)
	}
}
