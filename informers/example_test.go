package informers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// exampleCluster serves web and db pods in namespaces shop and blog.
func exampleCluster() (*apisim.Server, kubernetes.Interface) {
	var pods []runtime.Object
	for _, ns := range []string{"shop", "blog"} {
		for i, tier := range []string{"web", "web", "web", "db"} {
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", tier, i), Labels: map[string]string{"tier": tier}}})
		}
	}
	s, err := apisim.Serve(apisim.Config{}, pods...)
	if err != nil {
		panic(err)
	}
	client, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	return s, client
}

// A client-go informer factory user changes the import path of the informers
// package; the factory, its options, the generated accessors and listers are
// client-go's, the informers ours.
func Example() {
	s, client := exampleCluster()
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var handled atomic.Int32
	handler := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { handled.Add(1) }}

	factory := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		informers.WithNamespace("shop"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "tier=web" }),
		informers.WithPipelineOptions(pipeline.WithShards(4)))
	pods := factory.Core().V1().Pods()
	lister := pods.Lister()
	inf, _ := pipeline.Unwrap(pods.Informer()) // ours, behind client-go's typed wrapper
	reg, _ := inf.AddParallelEventHandler(handler, 8)
	defer factory.Shutdown() // runs after cancel: Shutdown waits for the informers to stop
	defer cancel()
	factory.StartWithContext(ctx)
	factory.WaitForCacheSyncWithContext(ctx)

	cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
	web, _ := lister.Pods("shop").List(labels.Everything())
	fmt.Println(len(web), "web pods of shop cached,", handled.Load(), "handled in parallel on", len(inf.Stats().Shards), "shards")
	// Output: 3 web pods of shop cached, 3 handled in parallel on 4 shards
}

// NewInformer is cache.NewSharedIndexInformer's signature building ours, for
// code that takes the constructor as a value — controller-runtime's
// cache.Options{NewInformer: informers.NewInformer}; the module
// examples/controller-runtime runs a manager on it.
func ExampleNewInformer() {
	s, client := exampleCluster()
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var newInformer func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer = informers.NewInformer
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", "blog", fields.Everything())
	inf := newInformer(lw, &corev1.Pod{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	done := make(chan struct{})
	go func() { // goroutine: the informer; joined below.
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	pods, _ := corev1listers.NewPodLister(inf.GetIndexer()).List(labels.Everything())
	_, ours := pipeline.Unwrap(inf)
	fmt.Println(len(pods), "pods of blog cached; ours:", ours)
	cancel()
	<-done
	// Output: 4 pods of blog cached; ours: true
}

// NewFilteredListWatch lists and watches a type as client-go's generated
// informer does, for a custom informer given to the factory's InformerFor.
func ExampleNewFilteredListWatch() {
	s, client := exampleCluster()
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())

	factory := informers.NewSharedInformerFactory(client, 0)
	dbOnly := func(o *metav1.ListOptions) { o.LabelSelector = "tier=db" }
	factory.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		lw, err := informers.NewFilteredListWatch(c, &corev1.Pod{}, metav1.NamespaceAll, dbOnly)
		if err != nil {
			panic(err)
		}
		return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	})
	defer factory.Shutdown() // runs after cancel: Shutdown waits for the informers to stop
	defer cancel()
	factory.StartWithContext(ctx)
	factory.WaitForCacheSyncWithContext(ctx)
	db, _ := factory.Core().V1().Pods().Lister().List(labels.Everything()) // the custom informer
	fmt.Println(len(db), "db pods cached")
	// Output: 2 db pods cached
}
