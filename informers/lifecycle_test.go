package informers_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// fakeClient returns a fake clientset holding pods and config maps.
func fakeClient() *fake.Clientset {
	var objs []k8sruntime.Object
	for _, n := range names("p", 20) {
		objs = append(objs, pod("default", n, map[string]string{"app": "x"}))
	}
	for _, n := range names("cm", 7) {
		objs = append(objs, configMap("default", n))
	}
	return fake.NewClientset(objs...)
}

// informerGoroutines returns the stacks of goroutines running informer code
// (ours or client-go's), which must all be gone once Shutdown returns.
func informerGoroutines() []string {
	return testkit.Goroutines("shardinformer/pipeline.", "client-go/tools/cache.")
}

// Start, WaitForCacheSync and Shutdown behave alike for client-go's factory
// and ours, for pods and config maps: Start starts only the informers asked
// for so far, WaitForCacheSync reports the started ones, Shutdown waits for
// every goroutine they started — a handler still running included — and
// after it Start starts nothing.
func TestLifecycle(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			client := fakeClient()
			f := im.build(client, spec{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			f.StartWithContext(ctx) // nothing asked for yet
			if got := f.WaitForCacheSyncWithContext(ctx); len(got.Synced) != 0 || got.Err != nil {
				t.Fatalf("nothing started: WaitForCacheSync = %v", got)
			}

			pods, cms := f.Core().V1().Pods(), f.Core().V1().ConfigMaps()
			checkImpl(t, im, pods.Informer())
			checkImpl(t, im, cms.Informer())
			release := make(chan struct{})
			var blocked, unblocked atomic.Int32
			if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
				if obj.(*corev1.Pod).Name == "p-019" {
					blocked.Add(1)
					<-release
					unblocked.Add(1)
				}
			}}); err != nil {
				t.Fatal(err)
			}
			f.StartWithContext(ctx)
			res := f.WaitForCacheSyncWithContext(ctx)
			want := map[reflect.Type]bool{reflect.TypeFor[*corev1.Pod](): true, reflect.TypeFor[*corev1.ConfigMap](): true}
			if res.Err != nil || !reflect.DeepEqual(res.Synced, want) {
				t.Fatalf("WaitForCacheSync = %v, want %v", res, want)
			}
			if l, _ := pods.Lister().List(labels.Everything()); len(l) != 20 {
				t.Fatalf("pod lister: %d pods, want 20", len(l))
			}
			if l, _ := cms.Lister().ConfigMaps("default").List(labels.Everything()); len(l) != 7 {
				t.Fatalf("config map lister: %d, want 7", len(l))
			}

			// Asked for after Start: running only after the next Start.
			secrets := f.Core().V1().Secrets().Informer()
			checkImpl(t, im, secrets)
			if _, ok := f.WaitForCacheSync(ctx.Done())[reflect.TypeFor[*corev1.Secret]()]; ok {
				t.Fatal("secrets informer reported before Start")
			}
			f.Start(ctx.Done())
			if !f.WaitForCacheSync(ctx.Done())[reflect.TypeFor[*corev1.Secret]()] {
				t.Fatal("secrets informer did not sync after the second Start")
			}

			// Shutdown waits for the handler still running.
			testkit.Eventually(t, "handler blocked", func() bool { return blocked.Load() == 1 })
			cancel()
			shutdown := make(chan struct{})
			go func() { // goroutine: the test's Shutdown call; joined below.
				f.Shutdown()
				close(shutdown)
			}()
			select {
			case <-shutdown:
				t.Fatal("Shutdown returned while a handler was running")
			case <-time.After(50 * time.Millisecond): // one-sided: never fails a correct factory
			}
			close(release)
			<-shutdown
			if g := informerGoroutines(); len(g) != 0 {
				t.Fatalf("%d informer goroutines after Shutdown:\n%s", len(g), strings.Join(g, "\n\n"))
			}
			// The blocked call completed before Shutdown returned. (Whether
			// notifications still queued behind it are delivered depends on
			// the order of delivery, which ours does not fix across shards.)
			if !pods.Informer().IsStopped() || unblocked.Load() != 1 {
				t.Fatalf("after Shutdown: stopped %v, blocked handler call returned %d times (want 1)", pods.Informer().IsStopped(), unblocked.Load())
			}

			// After Shutdown, Start starts nothing.
			services := f.Core().V1().Services().Informer()
			f.StartWithContext(context.Background())
			f.Shutdown()
			if services.HasSynced() || len(informerGoroutines()) != 0 {
				t.Fatal("Start after Shutdown started an informer")
			}
		})
	}
}

// WithTransform and WithCustomResyncConfig reach the informers as in
// client-go: every cached object is transformed, and the type with a custom
// resync period receives resync updates although the default is none.
func TestTransformAndCustomResync(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			transform := func(obj any) (any, error) {
				if m, ok := obj.(metav1.Object); ok {
					m.SetAnnotations(map[string]string{"transformed": "yes"})
				}
				return obj, nil
			}
			f := im.build(fakeClient(), spec{transform: transform, resync: map[metav1.Object]time.Duration{&corev1.ConfigMap{}: time.Second}})
			cms := f.Core().V1().ConfigMaps()
			checkImpl(t, im, cms.Informer())
			var resyncs atomic.Int32
			if _, err := cms.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, obj any) {
				if old.(*corev1.ConfigMap).ResourceVersion == obj.(*corev1.ConfigMap).ResourceVersion {
					resyncs.Add(1)
				}
			}}); err != nil {
				t.Fatal(err)
			}
			pods := f.Core().V1().Pods().Lister()
			start(t, f)
			all, _ := pods.List(labels.Everything())
			if len(all) != 20 || slices.ContainsFunc(all, func(p *corev1.Pod) bool { return p.Annotations["transformed"] != "yes" }) {
				t.Fatalf("transform not applied to every cached pod: %d pods", len(all))
			}
			testkit.Eventually(t, "a resync of every config map", func() bool { return resyncs.Load() >= 7 })
		})
	}
}
