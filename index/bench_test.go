package index

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

const (
	benchNamespaces = 10
	benchPerNS      = 1000 // objects per namespace: ByIndex(namespace) copies this many
	benchShards     = 8
)

// benchPods returns keys and two versions of each pod (same namespace and labels, different
// resourceVersion), so an update loop alternates between them without allocating objects.
func benchPods() (keys []string, v [2][]*corev1.Pod) {
	for ns := range benchNamespaces {
		for i := range benchPerNS {
			for j := range v {
				v[j] = append(v[j], &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
					Namespace:       fmt.Sprintf("ns%d", ns),
					Name:            fmt.Sprintf("pod-%d", i),
					ResourceVersion: fmt.Sprint(j),
					Labels:          map[string]string{"app": fmt.Sprintf("app-%d", i%10)},
				}})
			}
			keys = append(keys, fmt.Sprintf("ns%d/pod-%d", ns, i))
		}
	}
	return keys, v
}

func nsIndexers() cache.Indexers {
	return cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
}

// newBenchIndexer returns a filled cache.Indexer of the named implementation.
func newBenchIndexer(b *testing.B, impl string, pods []*corev1.Pod) cache.Indexer {
	var idx cache.Indexer
	switch impl {
	case "shardinformer":
		s, err := NewSharded(benchShards, fnvShard(benchShards), cache.DeletionHandlingMetaNamespaceKeyFunc, nsIndexers())
		if err != nil {
			b.Fatal(err)
		}
		idx = s
	case "client-go":
		idx = cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, nsIndexers())
	}
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			b.Fatal(err)
		}
	}
	return idx
}

var impls = []string{"shardinformer", "client-go"}

// benchWriter is the write side of one partition or of client-go's ThreadSafeStore, both given the
// key, filled with the first version of every bench pod.
type benchWriter struct {
	keys   []string
	pods   [2][]*corev1.Pod
	upsert func(key string, obj any)
	del    func(key string)
}

// benchPartitionWrites runs op(w, i) for i < b.N on each implementation and reports metric per
// second.
func benchPartitionWrites(b *testing.B, metric string, op func(w *benchWriter, i int)) {
	keys, v := benchPods()
	for _, impl := range impls {
		b.Run("impl="+impl, func(b *testing.B) {
			w := &benchWriter{keys: keys, pods: v}
			switch impl {
			case "shardinformer":
				p := NewPartition(nsIndexers())
				w.upsert = func(key string, obj any) { p.Upsert(key, obj) }
				w.del = func(key string) { p.Delete(key) }
			case "client-go":
				st := cache.NewThreadSafeStore(nsIndexers(), cache.Indices{})
				w.upsert, w.del = st.Update, st.Delete
			}
			for i, k := range keys {
				w.upsert(k, v[0][i])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				op(w, i)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), metric)
		})
	}
}

// BenchmarkPartitionUpsert measures one partition's update path where the namespace index value is
// unchanged, against client-go's ThreadSafeStore.Update.
func BenchmarkPartitionUpsert(b *testing.B) {
	benchPartitionWrites(b, "updates/s", func(w *benchWriter, i int) {
		j := i % len(w.keys)
		w.upsert(w.keys[j], w.pods[(i/len(w.keys)+1)%2][j])
	})
}

// BenchmarkPartitionChurn measures one partition's insert path: delete a key and add it again (a
// pod re-created under its name), which inserts into the item map and the namespace's set, against
// client-go's ThreadSafeStore.Delete and Update.
func BenchmarkPartitionChurn(b *testing.B) {
	benchPartitionWrites(b, "recreates/s", func(w *benchWriter, i int) {
		j := i % len(w.keys)
		w.del(w.keys[j])
		w.upsert(w.keys[j], w.pods[0][j])
	})
}

// BenchmarkByIndex measures ByIndex(namespace, ns) returning benchPerNS objects out of
// benchNamespaces*benchPerNS.
func BenchmarkByIndex(b *testing.B) {
	_, v := benchPods()
	for _, impl := range impls {
		b.Run("impl="+impl, func(b *testing.B) {
			idx := newBenchIndexer(b, impl, v[0])
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				objs, err := idx.ByIndex(cache.NamespaceIndex, fmt.Sprintf("ns%d", i%benchNamespaces))
				if err != nil || len(objs) != benchPerNS {
					b.Fatalf("ByIndex returned %d objects, %v", len(objs), err)
				}
			}
			b.ReportMetric(float64(b.N)*benchPerNS/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// BenchmarkList measures List and ListKeys over benchNamespaces*benchPerNS objects: full scans of
// every partition's item map, against client-go's.
func BenchmarkList(b *testing.B) {
	_, v := benchPods()
	n := len(v[0])
	for _, impl := range impls {
		for _, call := range []string{"List", "ListKeys"} {
			b.Run("impl="+impl+"/call="+call, func(b *testing.B) {
				idx := newBenchIndexer(b, impl, v[0])
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					got := 0
					if call == "List" {
						got = len(idx.List())
					} else {
						got = len(idx.ListKeys())
					}
					if got != n {
						b.Fatalf("%s returned %d, want %d", call, got, n)
					}
				}
				b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds(), "objects/s")
			})
		}
	}
}

// BenchmarkUpdateLoop measures the update rate of one writer (the benchmark goroutine, through
// cache.Indexer.Update) while R reader goroutines run ByIndex(namespace) on 1k-object namespaces
// back to back, as busy listers do.
func BenchmarkUpdateLoop(b *testing.B) {
	_, v := benchPods()
	for _, impl := range impls {
		for _, readers := range []int{0, 4} {
			b.Run(fmt.Sprintf("impl=%s/readers=%d", impl, readers), func(b *testing.B) {
				idx := newBenchIndexer(b, impl, v[0])
				var stop atomic.Bool
				var reads atomic.Int64
				var wg sync.WaitGroup
				for r := range readers {
					wg.Go(func() {
						n := int64(0)
						for i := r; !stop.Load(); i++ {
							objs, _ := idx.ByIndex(cache.NamespaceIndex, fmt.Sprintf("ns%d", i%benchNamespaces))
							if len(objs) != benchPerNS {
								panic(fmt.Sprintf("ByIndex returned %d objects", len(objs)))
							}
							n++
						}
						reads.Add(n)
					})
				}
				n := len(v[0])
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if err := idx.Update(v[(i/n+1)%2][i%n]); err != nil {
						b.Fatal(err)
					}
				}
				elapsed := b.Elapsed().Seconds()
				stop.Store(true)
				wg.Wait()
				b.ReportMetric(float64(b.N)/elapsed, "updates/s")
				if readers > 0 {
					b.ReportMetric(float64(reads.Load())/elapsed, "reads/s")
				}
			})
		}
	}
}

// BenchmarkMemory measures the heap an indexer retains per object beyond the objects themselves
// (pods built before the first measurement, keys computed by Add as in an informer), with the
// namespace index, for client-go's indexer and a Sharded.
func BenchmarkMemory(b *testing.B) {
	_, v := benchPods()
	for _, impl := range impls {
		b.Run("impl="+impl, func(b *testing.B) {
			var perObject float64
			for range b.N {
				before := liveHeap()
				idx := newBenchIndexer(b, impl, v[0])
				after := liveHeap()
				perObject += float64(int64(after)-int64(before)) / float64(len(v[0]))
				runtime.KeepAlive(idx)
			}
			b.ReportMetric(perObject/float64(b.N), "B/object")
		})
	}
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkUpsertBatch measures a drain's batch of updates (32 keys) to a partition of 100k keys
// taken in random order — each key's slot, cell and version out of the CPU caches, as in a large
// informer — with and without Prefetch of the batch first. As in the pipeline, the key of each new
// object is computed from it first (the reflector's key function), so its metadata is cached.
// b.N counts updates.
func BenchmarkUpsertBatch(b *testing.B) {
	const n, batch = 100_000, 32
	keys := make([]string, n)
	var objs [2][]any
	for i := range n {
		keys[i] = fmt.Sprintf("ns%d/pod-%d", i%100, i)
		for j := range objs {
			objs[j] = append(objs[j], &metav1.ObjectMeta{
				Namespace: fmt.Sprintf("ns%d", i%100), Name: fmt.Sprintf("pod-%d", i), ResourceVersion: fmt.Sprint(j),
			})
		}
	}
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	for _, prefetch := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%t", prefetch), func(b *testing.B) {
			p := NewPartition(nsIndexers())
			for i, key := range keys {
				if _, _, err := p.Upsert(key, objs[0][i]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for start := 0; start < b.N; start += batch {
				ks := order[start%n:][:min(batch, b.N-start)] // n is a multiple of batch
				next := objs[(start/n+1)%2]
				for _, k := range ks { // what the reflector does before: the key from the object
					if key, _ := cache.MetaNamespaceKeyFunc(next[k]); len(key) != len(keys[k]) {
						b.Fatal(key)
					}
				}
				if prefetch {
					p.Prefetch(func(yield func(string) bool) {
						for _, k := range ks {
							if !yield(keys[k]) {
								return
							}
						}
					})
				}
				for _, k := range ks {
					p.Upsert(keys[k], next[k])
				}
			}
		})
	}
}
