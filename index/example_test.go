package index_test

import (
	"fmt"
	"hash/fnv"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/index"
)

func Example() {
	const shards = 4
	shardOf := func(key string) int {
		h := fnv.New64a()
		h.Write([]byte(key))
		return int(h.Sum64() % shards)
	}
	s, err := index.NewSharded(shards, shardOf, cache.DeletionHandlingMetaNamespaceKeyFunc,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err != nil {
		panic(err)
	}

	// The pipeline's drain goroutine for a key's shard writes through the partition...
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	key, _ := cache.MetaNamespaceKeyFunc(web)
	s.Partition(shardOf(key)).Upsert(key, web)
	// ...while cache.Indexer users may also write through Sharded.
	s.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}})
	s.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"}})

	// Every partition records that all changes up to resource version 42 are applied.
	seq := s.NextSyncMark()
	for i := range s.Shards() {
		s.Partition(i).SetSyncMark(seq, "42")
	}

	// Readers: generated listers work on Sharded unchanged.
	pods, _ := corev1listers.NewPodLister(s).Pods("default").List(labels.Everything())
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	fmt.Println(names)
	system, _ := s.ByIndex(cache.NamespaceIndex, "kube-system")
	fmt.Println(len(system), s.LastStoreSyncResourceVersion())
	// Output:
	// [db web]
	// 1 42
}

// A writer applying a batch of changes to a partition prefetches the batch's keys first.
func ExamplePartition_Prefetch() {
	p := index.NewPartition(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	batch := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", ResourceVersion: "7"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", ResourceVersion: "8"}},
	}
	keys := make([]string, len(batch))
	for i, pod := range batch {
		keys[i], _ = cache.MetaNamespaceKeyFunc(pod)
	}

	p.Prefetch(slices.Values(keys)) // at most index.PrefetchKeys of them
	for i, pod := range batch {
		if _, _, err := p.Upsert(keys[i], pod); err != nil {
			panic(err)
		}
	}
	obj, _ := p.Get("default/db")
	fmt.Println(p.Len(), obj.(*corev1.Pod).ResourceVersion)
	// Output: 2 8
}
