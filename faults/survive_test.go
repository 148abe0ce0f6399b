package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/internal/testkit/ours"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// listOnly makes the reflector list and then watch even with the
// WatchListClient gate on (client-go's default since 1.35): the
// ListerWatcher says it does not support WatchList.
type listOnly struct{ cache.ListerWatcher }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// survivor is an informer stack under test: an implementation and the
// ListerWatcher it lists and watches pods through.
type survivor struct {
	name string
	impl testkit.Impl
	lw   func(t *testing.T, cs kubernetes.Interface, media string) cache.ListerWatcher
}

var survivors = []survivor{
	{"client-go", testkit.ClientGo, func(t *testing.T, cs kubernetes.Interface, _ string) cache.ListerWatcher {
		pods := cs.CoreV1().Pods("")
		return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return pods.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return pods.Watch(ctx, o)
			},
		}, cs)
	}},
	{"shardinformer+wire", ours.Impl("", pipeline.WithShards(4)), func(t *testing.T, cs kubernetes.Interface, media string) cache.ListerWatcher {
		opts := []wire.Option{wire.WithDiet()}
		if media == apisim.ContentTypeJSON {
			opts = append(opts, wire.WithContentType(wire.JSON))
		}
		lw, err := wire.New(cs.CoreV1().RESTClient(), wire.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: &corev1.Pod{}}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return lw
	}},
}

// TestInformersSurviveFaults: client-go's informer and ours on the wire,
// listing then watching and with WatchList, in protobuf (and JSON where the
// framing matters: cuts and 410s), each behind a proxy injecting one kind
// of fault while pods change; once a fault has been injected twice (proved
// by the proxy's counters) the faults stop, and within a bound the cache
// and the handler's view equal the server, keys and resourceVersions, with
// every notification consistent. $SHARDINFORMER_FAULT_SEED reruns a seed.
func TestInformersSurviveFaults(t *testing.T) {
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Fatal("the WatchListClient gate is off; the watchList=true cases need client-go's default")
	}
	for _, k := range Kinds() {
		ms := []string{apisim.ContentTypeProtobuf}
		if k == Cut || k == Gone {
			ms = medias
		}
		for _, media := range ms {
			for _, wl := range []bool{false, true} {
				for _, sv := range survivors {
					t.Run(fmt.Sprintf("%s/%s/watchList=%v/%s", k, shortMedia(media), wl, sv.name), func(t *testing.T) {
						t.Parallel()
						survive(t, k, sv, media, wl)
					})
				}
			}
		}
	}
}

func survive(t *testing.T, k Kind, sv survivor, media string, watchList bool) {
	seed := testkit.FaultSeed(t)
	sim := newSim(t, 200)
	rule := Rule{P: 0.5, Max: 3}
	switch k {
	case Stall:
		rule.Duration = 200 * time.Millisecond
	case TooManyRequests:
		rule.Duration = time.Second
	}
	p := newProxy(t, sim.RESTConfig(), Config{Seed: seed, Bytes: 64 << 10, Rules: map[Kind]Rule{k: rule}})
	var inner cache.ListerWatcher = sv.lw(t, clientset(t, p, media), media)
	if !watchList {
		inner = listOnly{inner}
	}
	lw := testkit.NewLW(inner)
	inf := sv.impl.New(lw, &corev1.Pod{}, 0, cache.Indexers{})
	rec := &testkit.Recorder{}
	reg, err := inf.AddEventHandler(rec)
	if err != nil {
		t.Fatal(err)
	}
	stop := testkit.Run(t, inf)

	// The writer changes, creates and deletes the first 50 pods and now and
	// then ends every watch, so that requests (and draws) keep coming. The
	// other 150 are never written: an informer that took a truncated list
	// for a whole one would miss them for good.
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { // the writer; joined below
		for i := 0; ctx.Err() == nil; i++ {
			j := i % 50
			name := fmt.Sprintf("pod-%04d", j)
			ns := fmt.Sprintf("ns-%d", j%2)
			switch i % 10 {
			case 3:
				_, _ = sim.Delete(ns, name)
			case 7:
				_, _ = sim.Create(apisim.NewPod(ns, name, int64(i), apisim.PodOptions{}))
			default:
				_, _ = sim.Modify(ns, name, func(p *corev1.Pod) { p.Labels["round"] = fmt.Sprint(i) })
			}
			if i%100 == 99 {
				sim.DropWatches()
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	testkit.EventuallyWhy(t, fmt.Sprintf("two %s faults injected", k), func() (bool, string) {
		s := p.Stats()
		return s.Injected[k] >= 2, fmt.Sprintf("stats %+v", s)
	})
	cancel()
	wg.Wait()
	stopped := p.StopFaults()

	want := map[string]string{}
	for _, pod := range sim.List("") {
		want[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
	}
	testkit.EventuallyWhy(t, "the cache and the handler to equal the server", func() (bool, string) {
		if !inf.HasSynced() || !reg.HasSynced() {
			return false, "not synced"
		}
		got := map[string]string{}
		for _, o := range inf.GetStore().List() {
			pod := o.(*corev1.Pod)
			got[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
		}
		if d, n := testkit.DiffState(got, want, 3, nil); n > 0 {
			return false, fmt.Sprintf("cache: %d differences, e.g. %v", n, d)
		}
		if d, n := rec.Diff(want, 3); n > 0 {
			return false, fmt.Sprintf("handler: %d differences, e.g. %v", n, d)
		}
		return true, ""
	})
	s := p.Stats()
	t.Logf("converged %v after the faults stopped; %d requests, injected %v, vetoed %d; lists=%d watches=%d watchlists=%d gone=%d",
		time.Since(stopped).Round(time.Millisecond), s.Requests, s.ByName(), s.Vetoed, lw.Lists(), lw.Watches(), lw.WatchLists(), lw.Gone())
	rec.CheckConsistent(t)
	if watchList != (lw.WatchLists() > 0) {
		t.Errorf("watchList=%v but %d WatchList requests", watchList, lw.WatchLists())
	}
	stop()
}
