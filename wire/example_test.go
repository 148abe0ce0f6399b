package wire_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// A wire.ListerWatcher feeds an informer — pipeline's here, client-go's
// cache.NewSharedIndexInformer takes it the same way — from a (simulated)
// API server over protobuf, decoding on two goroutines and dropping
// managedFields.
func Example() {
	s, err := apisim.Serve(apisim.Config{},
		apisim.NewPod("shop", "web-0", 1, apisim.PodOptions{ManagedFields: true}),
		apisim.NewPod("shop", "web-1", 2, apisim.PodOptions{ManagedFields: true}))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	cfg := s.RESTConfig()
	lw, err := wire.NewForConfig(cfg, wire.Resource{
		GVR:    schema.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object: &corev1.Pod{},
	}, wire.WithWorkers(2), wire.WithDropManagedFields())
	if err != nil {
		panic(err)
	}

	inf := pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	pods, _ := corev1listers.NewPodLister(inf.GetIndexer()).Pods("shop").List(labels.Everything())
	fmt.Println(len(pods), "pods; managedFields:", len(pods[0].ManagedFields))
	// Output: 2 pods; managedFields: 0
}
