package metadatainformer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers/metadatainformer"
	"github.com/shardinformer/shardinformer/pipeline"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
)

// A metadata informer factory user changes the import path; the factory
// and its listers are client-go's, the informers ours, caching only the
// objects' metadata.
func Example() {
	var objs []runtime.Object
	for i := range 4 {
		objs = append(objs, apisim.NewConfigMap("shop", fmt.Sprint("settings-", i), int64(i)))
	}
	s, err := apisim.Serve(apisim.Config{}, objs...)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	client, err := metadata.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())

	factory := metadatainformer.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		metadatainformer.WithNamespace("shop"),
		metadatainformer.WithPipelineOptions(pipeline.WithShards(2)))
	configMaps := factory.ForResource(apisim.ConfigMapsResource)
	defer factory.Shutdown() // runs after cancel: Shutdown waits for the informers to stop
	defer cancel()
	factory.StartWithContext(ctx)
	factory.WaitForCacheSync(ctx.Done())

	cached, _ := configMaps.Lister().List(labels.Everything())
	fmt.Printf("%d config maps cached as %T\n", len(cached), cached[0])
	// Output: 4 config maps cached as *v1.PartialObjectMetadata
}
