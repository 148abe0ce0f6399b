package apisim_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

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

// Example_resources serves a configmap, a deployment and a custom resource
// and reads them with client-go's metadata client, which asks for
// PartialObjectMetadata and works on any resource.
func Example_resources() {
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		panic(err)
	}
	if _, err := s.ConfigMaps().Create(apisim.NewConfigMap("default", "settings", 1)); err != nil {
		panic(err)
	}
	if _, err := s.Deployments().Create(apisim.NewDeployment("default", "web", 2)); err != nil {
		panic(err)
	}
	if _, err := s.Widgets().Create(apisim.NewWidget("default", "gizmo", 3)); err != nil {
		panic(err)
	}
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close()

	mc, err := metadata.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	for _, gvr := range []schema.GroupVersionResource{apisim.ConfigMapsResource, apisim.DeploymentsResource, apisim.WidgetsResource} {
		list, err := mc.Resource(gvr).Namespace("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			panic(err)
		}
		m := list.Items[0]
		fmt.Printf("%s: %s, %d labels, uid set: %v\n", gvr.Resource, m.Name, len(m.Labels), m.UID != "")
	}
	// Output:
	// configmaps: settings, 6 labels, uid set: true
	// deployments: web, 10 labels, uid set: true
	// widgets: gizmo, 4 labels, uid set: true
}

// Example_shardSelector lists pods in two shards of the uid hash space, as
// two controller replicas would with the ShardedListAndWatch feature.
func Example_shardSelector() {
	s, err := apisim.New(apisim.Config{ShardedListAndWatch: true})
	if err != nil {
		panic(err)
	}
	var pods []*corev1.Pod
	for i := range 100 {
		pods = append(pods, apisim.NewPod("default", fmt.Sprintf("web-%d", i), int64(i), apisim.PodOptions{}))
	}
	if err := s.Load(pods); err != nil {
		panic(err)
	}
	if err := s.Start(); err != nil {
		panic(err)
	}
	defer s.Close()
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	total := 0
	for _, sel := range []string{
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')",
	} {
		list, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{ShardSelector: sel})
		if err != nil {
			panic(err)
		}
		for _, p := range list.Items {
			if !strings.Contains(list.ShardInfo.Selector, "shardRange") || p.UID == "" {
				panic("unexpected list")
			}
		}
		total += len(list.Items)
	}
	fmt.Println("pods in the two shards:", total)

	_, err = cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{ShardSelector: "shardRange(object.metadata.uid, '0x0', '0x8')"})
	fmt.Println(err)
	// Output:
	// pods in the two shards: 100
	// invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean "0x0000000000000000"?)
}

// Serve is New, a Create of each object through its resource's API, and
// Start, in one call.
func ExampleServe() {
	s, err := apisim.Serve(apisim.Config{},
		apisim.NewPod("shop", "web-0", 1, apisim.PodOptions{}),
		apisim.NewConfigMap("shop", "settings", 2))
	if err != nil {
		panic(err)
	}
	defer s.Close()
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	pods, err := cs.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(pods.Items), "pod,", len(s.ConfigMaps().List("shop")), "config map")
	// Output: 1 pod, 1 config map
}
