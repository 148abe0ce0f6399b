package pipeline_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// The informer is a drop-in cache.SharedIndexInformer: handlers, HasSynced
// and generated listers work unchanged.
func Example() {
	api := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.PodList{} }})
	for _, name := range []string{"web-0", "web-1", "db-0"} {
		api.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}})
	}

	inf := pipeline.NewSharedIndexInformer(api.ListerWatcher(), &corev1.Pod{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		pipeline.WithShards(4))

	var mu sync.Mutex
	adds := 0
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { mu.Lock(); adds++; mu.Unlock() },
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)

	pods, _ := corev1listers.NewPodLister(inf.GetIndexer()).Pods("shop").List(labels.Everything())
	mu.Lock()
	fmt.Println(len(pods), "pods cached,", adds, "adds handled")
	mu.Unlock()
	// Output: 3 pods cached, 3 adds handled
}

// The full-ring policies, the default first; loadgen's --policy, the
// benchmarks and the end-to-end suite iterate over this list.
func ExampleFullRingPolicies() {
	for _, p := range pipeline.FullRingPolicies() {
		fmt.Println(p)
	}
	if _, err := pipeline.ParseFullRingPolicy("drop"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// buffer
	// coalesce
	// block
	// grow
	// pipeline: unknown full-ring policy "drop" (want buffer, coalesce, block, grow)
}
