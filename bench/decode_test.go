package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// benchDecodeObjects is the pod count of BenchmarkDecodeSync.
var benchDecodeObjects = envInt("BENCH_DECODE_OBJECTS", 10_000)

// decoder is how an informer in BenchmarkDecodeSync lists and watches.
type decoder struct {
	name string
	wire []wire.Option // nil: client-go's typed client and decoder
}

var decoders = []decoder{
	{"client-go", nil},
	{"wire", []wire.Option{}},
	{"wire+diet", []wire.Option{wire.WithDiet()}},
}

// BenchmarkDecodeSync times an informer's initial sync through HTTP, with
// decoding: realistic pods with managedFields (apisim.NewPod), protobuf,
// served by the simulated API server in this process from bytes it encoded
// before the timed region. Each core (impl=client-go, impl=shardinformer)
// runs on client-go's decoder and on the wire decoder (GOMAXPROCS workers),
// without and with the diet, with LIST+WATCH and with WatchList. It reports
// objects/s, heap-B/object (live heap after the sync minus before, per pod:
// the informer with its decoded pods), allocs/object and cpu-ns/object (the
// process's CPU during the sync, the server's share included: it writes
// pre-encoded bytes, the same for every decoder). The other benchmarks of
// this package exclude decoding; this one shows what the wire adds.
func BenchmarkDecodeSync(b *testing.B) {
	n := benchDecodeObjects
	srv := startSim(b, n)
	for _, list := range []string{"list", "watchlist"} {
		for _, d := range decoders {
			for _, impl := range Impls {
				b.Run(fmt.Sprintf("impl=%s/decoder=%s/objects=%d/list=%s", impl, d.name, n, list), func(b *testing.B) {
					clientfeaturestesting.SetFeatureDuringTest(b, clientfeatures.WatchListClient, list == "watchlist")
					b.StopTimer()
					b.ReportAllocs()
					var acc accumulator
					for range b.N {
						r, err := decodeSync(b, srv, impl, d, n)
						if err != nil {
							b.Fatal(err)
						}
						acc.add(r)
					}
					acc.report(b)
				})
			}
		}
	}
}

// startSim serves n realistic pods with managedFields in 100 namespaces,
// encoded in protobuf in advance; it is closed when b ends.
func startSim(b *testing.B, n int) *apisim.Server {
	b.Helper()
	srv, err := apisim.New(apisim.Config{})
	if err != nil {
		b.Fatal(err)
	}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = apisim.NewPod(fmt.Sprintf("ns-%02d", i%100), fmt.Sprintf("pod-%06d", i), int64(i), apisim.PodOptions{ManagedFields: true})
	}
	if err := srv.Load(pods); err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	// One protobuf list makes the server encode every pod now.
	req, err := http.NewRequest(http.MethodGet, srv.URL()+"/api/v1/pods", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Accept", apisim.ContentTypeProtobuf)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("pre-encoding list: %v %s", err, resp.Status)
	}
	return srv
}

// decodeSync runs one initial sync of impl on d from srv, from creating the
// informer until it has synced and a handler has seen every add, and stops
// the informer again.
func decodeSync(t *testing.B, srv *apisim.Server, impl Impl, d decoder, n int) (Result, error) {
	var res Result
	cfg := srv.RESTConfig()
	cfg.ContentType = apisim.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return res, err
	}
	var lw cache.ListerWatcher
	if d.wire != nil {
		lw, err = wire.New(cs.CoreV1().RESTClient(), wire.Resource{
			GVR:    schema.GroupVersionResource{Version: "v1", Resource: "pods"},
			Object: &corev1.Pod{},
		}, d.wire...)
		if err != nil {
			return res, err
		}
	} else {
		pods := cs.CoreV1().Pods("")
		lw = cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (k8sruntime.Object, error) {
				return pods.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return pods.Watch(ctx, o)
			},
		}, cs)
	}
	idx := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	h := NewHandler(0)
	heap0 := heapInUse()
	m0 := mallocs()
	t.StartTimer()
	start, cpu0 := time.Now(), cpuTime()
	var inf cache.SharedIndexInformer
	if impl == ShardInformer {
		inf = pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, idx)
	} else {
		inf = cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, idx)
	}
	h.expectAdds(int64(n))
	if _, err := inf.AddEventHandler(h); err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // the informer's Run goroutine; joined below
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	err = h.waitAdds(handlerTimeout)
	if err == nil {
		err = waitSynced(inf)
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	t.StopTimer()
	if err != nil {
		return res, err
	}
	m1 := mallocs()
	heap1 := heapInUse()
	if got := len(inf.GetStore().ListKeys()); got != n {
		return res, fmt.Errorf("bench: %d of %d pods cached", got, n)
	}
	res.Elapsed = elapsed
	res.add("objects/s", float64(n)/elapsed.Seconds())
	res.add("heap-B/object", float64(int64(heap1)-int64(heap0))/float64(n))
	res.add("allocs/object", float64(m1-m0)/float64(n))
	res.add("cpu-ns/object", float64(cpu.Nanoseconds())/float64(n))
	return res, nil
}
