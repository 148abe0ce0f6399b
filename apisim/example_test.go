package apisim_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/shardinformer/shardinformer/apisim"
)

// Example runs client-go's informer factory against the simulated server
// over protobuf and follows an in-process write.
func Example() {
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		panic(err)
	}
	pods := []*corev1.Pod{
		apisim.NewPod("default", "web-0", 1, apisim.PodOptions{}),
		apisim.NewPod("default", "web-1", 2, apisim.PodOptions{}),
	}
	if err := s.Load(pods); err != nil {
		panic(err)
	}
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close()

	cfg := s.RESTConfig()
	cfg.ContentType = apisim.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		panic(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	lister := factory.Core().V1().Pods().Lister()
	ctx, cancel := context.WithCancel(context.Background())
	defer factory.Shutdown()
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	if _, err := s.Modify("default", "web-1", func(p *corev1.Pod) { p.Labels["release"] = "canary" }); err != nil {
		panic(err)
	}
	canary := labels.SelectorFromSet(labels.Set{"release": "canary"})
	for {
		if got, _ := lister.List(canary); len(got) == 1 {
			fmt.Println("canary:", got[0].Name)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	all, _ := lister.List(labels.Everything())
	fmt.Println("pods:", len(all))
	// Output:
	// canary: web-1
	// pods: 2
}
