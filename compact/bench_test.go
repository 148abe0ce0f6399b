package compact_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/index"
)

// benchPods are make run's realistic pods: 10 namespaces, managedFields.
func benchPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = apisim.NewPod(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("pod-%07d", i), int64(i), apisim.PodOptions{ManagedFields: true})
	}
	return pods
}

var nsIndexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

// newCache fills a cache of 4 partitions with pods, encoded under codec
// (nil: as they are).
func newCache(tb testing.TB, pods []*corev1.Pod, codec *compact.Codec) cache.Indexer {
	tb.Helper()
	var opts []index.Option
	if codec != nil {
		opts = append(opts, index.WithCodec(codec))
	}
	s, err := index.NewSharded(4, func(k string) int { return int(len(k)+int(k[len(k)-1])) % 4 },
		cache.DeletionHandlingMetaNamespaceKeyFunc, nsIndexers, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range pods {
		if err := s.Add(p); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// benchStore builds one kind of cache of pods.
type benchStore struct {
	name string
	fill func(tb testing.TB, pods []*corev1.Pod) cache.Indexer
}

func benchStores() []benchStore {
	compactStore := func(decoded int) func(tb testing.TB, pods []*corev1.Pod) cache.Indexer {
		return func(tb testing.TB, pods []*corev1.Pod) cache.Indexer {
			c, err := compact.New(&corev1.Pod{}, compact.Config{Decoded: decoded})
			if err != nil {
				tb.Fatal(err)
			}
			return newCache(tb, pods, c)
		}
	}
	return []benchStore{
		{"store=client-go", func(tb testing.TB, pods []*corev1.Pod) cache.Indexer {
			s := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, nsIndexers)
			for _, p := range pods {
				if err := s.Add(p); err != nil {
					tb.Fatal(err)
				}
			}
			return s
		}},
		{"store=index", func(tb testing.TB, pods []*corev1.Pod) cache.Indexer { return newCache(tb, pods, nil) }},
		{"store=compact/decoded=4096", compactStore(0)},
		{"store=compact/decoded=1", compactStore(1)}, // every read decodes
	}
}

// BenchmarkRead measures what a reader pays: GetByKey of a random key of
// 10k, ByIndex of a namespace of 1000 pods and List of 10k, from a plain
// cache and from compact ones (with the default decoded-object cache, which
// holds 4096 of the 10k, and with none).
func BenchmarkRead(b *testing.B) {
	pods := benchPods(10_000)
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i], _ = cache.MetaNamespaceKeyFunc(p)
	}
	for _, st := range benchStores() {
		s := st.fill(b, pods)
		b.Run(st.name+"/op=GetByKey", func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				if _, ok, err := s.GetByKey(keys[r.IntN(len(keys))]); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
		b.Run(st.name+"/op=ByIndex1000", func(b *testing.B) {
			for b.Loop() {
				if got, err := s.ByIndex(cache.NamespaceIndex, "ns-3"); len(got) != 1000 || err != nil {
					b.Fatal(len(got), err)
				}
			}
		})
		b.Run(st.name+"/op=List10k", func(b *testing.B) {
			for b.Loop() {
				if got := s.List(); len(got) != len(pods) {
					b.Fatal(len(got))
				}
			}
		})
	}
}

// BenchmarkMemory measures a cache of 20k realistic pods: the live heap per
// pod once the pods are cached (and nothing else refers to them; with the
// default decoded-object cache, 4096 of them are kept decoded too), and the
// wall time of a full garbage collection with the cache live — the mark work
// every collection of the process repeats.
func BenchmarkMemory(b *testing.B) {
	const n = 20_000
	for _, st := range benchStores() {
		b.Run(st.name, func(b *testing.B) {
			var perPod, gcTime float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				s := st.fill(b, benchPods(n))
				runtime.GC()
				runtime.ReadMemStats(&after)
				start := time.Now()
				runtime.GC()
				gcTime = float64(time.Since(start).Microseconds())
				perPod = float64(after.HeapAlloc-before.HeapAlloc) / n
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perPod, "heap-bytes/pod")
			b.ReportMetric(gcTime, "gc-µs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestNamespaceIndexWithoutDecoding: a cache of Objects indexes them by
// namespace (cache.MetaNamespaceIndexFunc, every factory's index) without
// decoding them, and answers ByIndex with the right pods.
func TestNamespaceIndexWithoutDecoding(t *testing.T) {
	c, err := compact.New(&corev1.Pod{}, compact.Config{Decoded: 1})
	if err != nil {
		t.Fatal(err)
	}
	pods := benchPods(200)
	s := newCache(t, pods, c)
	if st := c.Stats(); st.Decoded != 0 || st.Encoded != 200 {
		t.Fatalf("stats %+v: want 200 encoded, none decoded", st)
	}
	got, err := s.ByIndex(cache.NamespaceIndex, "ns-3")
	if err != nil || len(got) != 20 {
		t.Fatalf("ByIndex: %d, %v", len(got), err)
	}
	for _, o := range got {
		if p := o.(*corev1.Pod); p.Namespace != "ns-3" || len(p.Spec.Containers) == 0 {
			t.Fatalf("ByIndex returned %s/%s with %d containers", p.Namespace, p.Name, len(p.Spec.Containers))
		}
	}
}

// BenchmarkDecodeOld is an update's old pod (the update changed the
// status) decoded while the new one is kept, as a
// notification's is: plainly (Decode) or like the new one (DecodeLike,
// which shares the spec). The allocations are what each leaves to the
// collector.
func BenchmarkDecodeOld(b *testing.B) {
	for _, tc := range []struct{ managedFields, like bool }{{true, false}, {true, true}, {false, false}, {false, true}} {
		b.Run(fmt.Sprintf("managedFields=%v/like=%v", tc.managedFields, tc.like), func(b *testing.B) {
			c, err := compact.New(&corev1.Pod{}, compact.Config{Decoded: 1})
			if err != nil {
				b.Fatal(err)
			}
			pods := make([]*corev1.Pod, 64)
			for i := range pods {
				pods[i] = apisim.NewPod(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("pod-%07d", i), int64(i), apisim.PodOptions{ManagedFields: tc.managedFields})
			}
			olds, news := make([]any, len(pods)), make([]any, len(pods))
			for i, p := range pods {
				olds[i], _ = c.Encode(p)
				v2 := p.DeepCopy()
				v2.ResourceVersion = "2"
				v2.Status.Conditions[0].Reason = "Later"
				news[i], _ = c.Encode(v2)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i % len(pods)
				b.StopTimer() // the new object, decoded and kept, as a notification's is
				if _, err := c.Decode(news[k]); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var err error
				if tc.like {
					_, err = c.DecodeLike(olds[k], news[k])
				} else {
					_, err = c.Decode(olds[k])
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
