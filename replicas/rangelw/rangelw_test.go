package rangelw

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/shardselector"
)

func startServer(t *testing.T, sharded bool, pods int) (*apisim.Server, *kubernetes.Clientset) {
	t.Helper()
	s, err := apisim.New(apisim.Config{ShardedListAndWatch: sharded, BookmarkInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]*corev1.Pod, pods)
	for i := range ps {
		ps[i] = apisim.NewPod(fmt.Sprint("ns-", i%3), fmt.Sprint("pod-", i), int64(i), apisim.PodOptions{})
	}
	if err := s.Load(ps); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := s.RESTConfig()
	cfg.ContentType = apisim.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, cs
}

func podsLW(cs *kubernetes.Clientset) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return cs.CoreV1().Pods("").List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Pods("").Watch(ctx, o)
		},
	}
}

// counts records a wrapper's hooks.
type counts struct{ fallbacks, dropped atomic.Int64 }

func (c *counts) hooks() Hooks {
	return Hooks{Fallback: func() { c.fallbacks.Add(1) }, Dropped: func(n int) { c.dropped.Add(int64(n)) }}
}

// want returns the server's pods in sel, key → resourceVersion.
func want(s *apisim.Server, sel shardselector.Selector) map[string]string {
	out := map[string]string{}
	for _, p := range s.List("") {
		if sel.Matches(string(p.UID)) {
			out[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
	}
	return out
}

func have(inf cache.SharedIndexInformer) map[string]string {
	out := map[string]string{}
	for _, o := range inf.GetStore().List() {
		p := o.(*corev1.Pod)
		out[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	return out
}

// TestInformers runs three client-go informers, one per replica of a
// three-member assignment, on the wrapper against apisim with the
// ShardedListAndWatch gate on and off, with WatchList on and off. Each
// cache holds exactly the server's pods of its ranges (so together every
// pod once), after the initial sync and after churn (creates, updates,
// deletes) through the watch. With the gate on nothing is filtered on the
// client, no fallback is reported, and (on the list path) the mode is
// Server; with it off every wrapper reports the fallback exactly once,
// is in Client mode, and has dropped at least the two thirds of the
// initial objects that are not its own.
func TestInformers(t *testing.T) {
	const pods = 300
	for _, sharded := range []bool{true, false} {
		for _, wl := range []bool{true, false} {
			t.Run(fmt.Sprintf("gate=%v/watchlist=%v", sharded, wl), func(t *testing.T) {
				clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, wl)
				s, cs := startServer(t, sharded, pods)
				a, err := replicas.Assign([]string{"r0", "r1", "r2"}, 64)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				defer wg.Wait()
				defer cancel()
				type replica struct {
					sel shardselector.Selector
					lw  *ListerWatcher
					c   *counts
					inf cache.SharedIndexInformer
				}
				var rs []replica
				for _, m := range a.Members() {
					sel, _ := a.Selector(m)
					c := &counts{}
					lw, err := New(Config{Inner: podsLW(cs), Selector: sel, Hooks: c.hooks()})
					if err != nil {
						t.Fatal(err)
					}
					inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
					wg.Go(func() { inf.RunWithContext(ctx) })
					rs = append(rs, replica{sel, lw, c, inf})
				}
				converge := func(stage string) {
					t.Helper()
					for _, r := range rs {
						if !cache.WaitForCacheSync(ctx.Done(), r.inf.HasSynced) {
							t.Fatal("not synced")
						}
					}
					err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
						for _, r := range rs {
							if !maps.Equal(have(r.inf), want(s, r.sel)) {
								return false, nil
							}
						}
						return true, nil
					})
					if err != nil {
						for i, r := range rs {
							t.Errorf("%s: replica %d holds %d pods, its ranges %d", stage, i, len(have(r.inf)), len(want(s, r.sel)))
						}
						t.FailNow()
					}
					total := 0
					for _, r := range rs {
						total += len(have(r.inf))
					}
					if total != s.Len() {
						t.Fatalf("%s: caches hold %d pods together, server %d", stage, total, s.Len())
					}
				}
				converge("initial")

				for i := range 60 {
					if _, err := s.Create(apisim.NewPod("ns-new", fmt.Sprint("new-", i), int64(1000+i), apisim.PodOptions{})); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Modify(fmt.Sprint("ns-", i%3), fmt.Sprint("pod-", i), func(p *corev1.Pod) { p.Labels["churn"] = "yes" }); err != nil {
						t.Fatal(err)
					}
					if _, err := s.Delete(fmt.Sprint("ns-", (100+i)%3), fmt.Sprint("pod-", 100+i)); err != nil {
						t.Fatal(err)
					}
				}
				converge("after churn")

				for i, r := range rs {
					switch {
					case sharded && (r.c.fallbacks.Load() != 0 || r.c.dropped.Load() != 0 || r.lw.Mode() == Client):
						t.Errorf("replica %d, gate on: %d fallbacks, %d dropped, mode %v", i, r.c.fallbacks.Load(), r.c.dropped.Load(), r.lw.Mode())
					case sharded && !wl && r.lw.Mode() != Server:
						t.Errorf("replica %d, gate on, list path: mode %v, want server", i, r.lw.Mode())
					case !sharded && (r.c.fallbacks.Load() != 1 || r.lw.Mode() != Client || r.c.dropped.Load() < int64(pods-len(have(r.inf)))):
						t.Errorf("replica %d, gate off: %d fallbacks, %d dropped, mode %v", i, r.c.fallbacks.Load(), r.c.dropped.Load(), r.lw.Mode())
					}
				}
			})
		}
	}
}

// TestMetadataList: a PartialObjectMetadataList carries no shardInfo even
// when the server filtered; the wrapper does not take that for a fallback.
func TestMetadataList(t *testing.T) {
	s, _ := startServer(t, true, 100)
	mc, err := metadata.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := replicas.Assign([]string{"r0", "r1"}, 8)
	sel, _ := a.Selector("r0")
	c := &counts{}
	lw, err := New(Config{Inner: &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Watch(ctx, o)
		},
	}, Selector: sel, Hooks: c.hooks()})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lw.ListWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := l.(*metav1.PartialObjectMetadataList)
	if len(list.Items) != len(want(s, sel)) || list.ShardInfo != nil || lw.Mode() != Unknown || c.fallbacks.Load() != 0 {
		t.Fatalf("%d items (want %d), shardInfo %v, mode %v, %d fallbacks", len(list.Items), len(want(s, sel)), list.ShardInfo, lw.Mode(), c.fallbacks.Load())
	}
}

// fakeLW serves a fixed list and hands out watches the test feeds.
type fakeLW struct {
	list    runtime.Object
	watches chan *stubbornWatch
	opts    []metav1.ListOptions
	mu      sync.Mutex
}

func (f *fakeLW) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	f.opts = append(f.opts, o)
	f.mu.Unlock()
	return f.list.DeepCopyObject(), nil
}

func (f *fakeLW) WatchWithContext(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	f.opts = append(f.opts, o)
	f.mu.Unlock()
	w := &stubbornWatch{ch: make(chan watch.Event, 10)}
	f.watches <- w
	return w, nil
}

func (f *fakeLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), o)
}

func (f *fakeLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), o)
}

func (f *fakeLW) IsWatchListSemanticsUnSupported() bool { return true }

// stubbornWatch never closes its channel, even when stopped, so that the
// filter goroutine has to end on its own stop signal.
type stubbornWatch struct {
	ch      chan watch.Event
	stopped atomic.Bool
}

func (w *stubbornWatch) ResultChan() <-chan watch.Event { return w.ch }
func (w *stubbornWatch) Stop()                          { w.stopped.Store(true) }

func pod(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID("uid-" + uid)}}
}

// halfSelector keeps the lower half of the hash space.
var halfSelector = shardselector.Selector{Field: shardselector.FieldUID, Ranges: []shardselector.Range{{Start: 0, Last: 1<<63 - 1}}}

// TestFilterEvents: the selector travels in every request; events of
// objects outside the ranges are dropped and counted, bookmarks and
// errors pass, an object without metadata becomes an Error event; the
// WatchList capability of Inner is passed on; Stop ends the filter
// goroutine even when nobody reads and the inner watch never closes.
func TestFilterEvents(t *testing.T) {
	var in, out []*corev1.Pod
	for i := 0; len(in) < 3 || len(out) < 3; i++ {
		p := pod(fmt.Sprint("p", i))
		if halfSelector.Matches(string(p.UID)) {
			in = append(in, p)
		} else {
			out = append(out, p)
		}
	}
	f := &fakeLW{list: &corev1.PodList{Items: []corev1.Pod{*out[0], *in[0], *out[1], *in[1]}}, watches: make(chan *stubbornWatch, 1)}
	c := &counts{}
	lw, err := New(Config{Inner: f, Selector: halfSelector, Hooks: c.hooks()})
	if err != nil {
		t.Fatal(err)
	}
	if !lw.IsWatchListSemanticsUnSupported() {
		t.Error("WatchList capability of Inner not passed on")
	}
	l, err := lw.List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.(*corev1.PodList).Items {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{in[0].Name, in[1].Name}) || c.dropped.Load() != 2 || c.fallbacks.Load() != 1 || lw.Mode() != Client {
		t.Fatalf("list kept %v, dropped %d, %d fallbacks, mode %v", names, c.dropped.Load(), c.fallbacks.Load(), lw.Mode())
	}

	w, err := lw.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sw := <-f.watches
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	sent := []watch.Event{
		{Type: watch.Added, Object: out[2]},
		{Type: watch.Added, Object: in[2]},
		{Type: watch.Modified, Object: out[0]},
		{Type: watch.Bookmark, Object: bookmark},
		{Type: watch.Deleted, Object: in[0]},
		{Type: watch.Error, Object: &metav1.Status{Code: 410}},
		{Type: watch.Added, Object: &metav1.Status{}}, // no object metadata
	}
	for _, e := range sent {
		sw.ch <- e
	}
	for i, wantE := range []watch.Event{sent[1], sent[3], sent[4], sent[5]} {
		if got := <-w.ResultChan(); got.Type != wantE.Type || got.Object != wantE.Object {
			t.Fatalf("event %d: %v %T, want %v %T", i, got.Type, got.Object, wantE.Type, wantE.Object)
		}
	}
	if got := <-w.ResultChan(); got.Type != watch.Error {
		t.Fatalf("event without metadata: %v, want an Error event", got.Type)
	}
	if c.dropped.Load() != 4 || c.fallbacks.Load() != 1 {
		t.Fatalf("dropped %d, %d fallbacks", c.dropped.Load(), c.fallbacks.Load())
	}
	for _, o := range f.opts {
		if o.ShardSelector != halfSelector.String() {
			t.Fatalf("request without the selector: %+v", o)
		}
	}

	// Nobody reads; the inner watch has an event queued and never closes.
	sw.ch <- watch.Event{Type: watch.Added, Object: in[1]}
	w.Stop()
	w.Stop()
	for range w.ResultChan() { // ends: the filter goroutine closed it
	}
	if !sw.stopped.Load() {
		t.Error("inner watch not stopped")
	}
}

// TestBadList: a list item without object metadata fails the List with a
// clear error instead of being dropped silently.
func TestBadList(t *testing.T) {
	f := &fakeLW{list: &metav1.List{Items: []runtime.RawExtension{{Object: &metav1.Status{}}}}}
	lw, err := New(Config{Inner: f, Selector: halfSelector})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lw.List(metav1.ListOptions{}); err == nil {
		t.Fatal("list with an item without metadata: no error")
	}
}

// TestConfig: each invalid Config is refused with ErrConfig.
func TestConfig(t *testing.T) {
	f := &fakeLW{}
	for name, cfg := range map[string]Config{
		"no inner":    {Selector: halfSelector},
		"no ranges":   {Inner: f, Selector: shardselector.Selector{Field: shardselector.FieldUID}},
		"bad field":   {Inner: f, Selector: shardselector.Selector{Field: "object.metadata.name", Ranges: halfSelector.Ranges}},
		"empty range": {Inner: f, Selector: shardselector.Selector{Field: shardselector.FieldUID, Ranges: []shardselector.Range{{Start: 2, Last: 1}}}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}
