package dynamicinformer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers/dynamicinformer"
	"github.com/shardinformer/shardinformer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// exampleCluster serves widgets (a custom resource) in namespaces shop and
// blog.
func exampleCluster() (*apisim.Server, *rest.Config) {
	var widgets []runtime.Object
	for _, ns := range []string{"shop", "blog"} {
		for i := range 3 {
			widgets = append(widgets, apisim.NewWidget(ns, fmt.Sprint("gizmo-", i), int64(i)))
		}
	}
	s, err := apisim.Serve(apisim.Config{}, widgets...)
	if err != nil {
		panic(err)
	}
	return s, s.RESTConfig()
}

// A dynamic informer factory user changes the import path; the factory and
// its listers are client-go's, the informers ours.
func Example() {
	s, cfg := exampleCluster()
	defer s.Close()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 10*time.Minute, "shop", nil)
	widgets := factory.ForResource(apisim.WidgetsResource)
	defer factory.Shutdown() // runs after cancel: Shutdown waits for the informers to stop
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	cached, _ := widgets.Lister().List(labels.Everything())
	fmt.Println(len(cached), "widgets of shop cached")
	// Output: 3 widgets of shop cached
}

// NewForConfig lists and watches through the wire decoder, which streams
// and decodes on several goroutines, with the same options.
func ExampleNewForConfig() {
	s, cfg := exampleCluster()
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())

	factory, err := dynamicinformer.NewForConfig(cfg, 10*time.Minute,
		dynamicinformer.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=gizmo-1" }),
		dynamicinformer.WithWireOptions(wire.WithWorkers(2), wire.WithDropManagedFields()))
	if err != nil {
		panic(err)
	}
	widgets := factory.ForResource(apisim.WidgetsResource)
	defer factory.Shutdown()
	defer cancel()
	factory.StartWithContext(ctx)
	factory.WaitForCacheSync(ctx.Done())

	cached, _ := widgets.Lister().List(labels.Everything())
	fmt.Println(len(cached), "widgets named gizmo-1 cached")
	// Output: 2 widgets named gizmo-1 cached
}
