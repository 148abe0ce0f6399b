package compact_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/compact"
	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/pipeline"
)

// A typed factory whose pod informer keeps its cache compact; listers and
// handlers get decoded pods as usual.
func Example() {
	var pods []runtime.Object
	for i := range 300 {
		pods = append(pods, apisim.NewPod("shop", fmt.Sprintf("web-%03d", i), int64(i), apisim.PodOptions{Apps: 3}))
	}
	s, err := apisim.Serve(apisim.Config{}, pods...)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	client := kubernetes.NewForConfigOrDie(s.RESTConfig())
	ctx, cancel := context.WithCancel(context.Background())

	factory := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		informers.WithPipelineOptionsFor(&corev1.Pod{}, pipeline.WithCompactStore(compact.Config{})))
	lister := factory.Core().V1().Pods().Lister()
	inf, _ := pipeline.Unwrap(factory.Core().V1().Pods().Informer())
	defer factory.Shutdown()
	defer cancel()
	factory.StartWithContext(ctx)
	factory.WaitForCacheSyncWithContext(ctx)

	p, _ := lister.Pods("shop").Get("web-042")
	all, _ := lister.List(labels.Everything())
	st := inf.Stats().Compact
	fmt.Println(p.Name, len(p.Spec.Containers) > 0, len(all), "pods;", st.Encoded >= 300, "encoded;", st.Templates, "templates")
	// Output: web-042 true 300 pods; true encoded; 3 templates
}
