package rangelw_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/replicas/rangelw"
)

// Example lists the pods of one of two replicas from a server without
// shardSelector support: the wrapper filters on the client and says so.
func Example() {
	var pods []runtime.Object
	for i := range 100 {
		pods = append(pods, apisim.NewPod("default", fmt.Sprint("web-", i), int64(i), apisim.PodOptions{}))
	}
	s, err := apisim.Serve(apisim.Config{ShardedListAndWatch: false}, pods...)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}

	a, _ := replicas.Assign([]string{"ctrl-0", "ctrl-1"}, replicas.DefaultSlots)
	sel, _ := a.Selector("ctrl-0")
	dropped := 0
	lw, err := rangelw.New(rangelw.Config{
		Inner: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().Pods("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Pods("").Watch(ctx, o)
			},
		},
		Selector: sel,
		Hooks:    rangelw.Hooks{Dropped: func(n int) { dropped += n }},
	})
	if err != nil {
		panic(err)
	}
	// An informer would take lw: cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{}).
	list, err := lw.List(metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(list.(*corev1.PodList).Items)+dropped, lw.Mode())
	// Output: 100 client
}
