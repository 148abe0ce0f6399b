package runner_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/replicas/members"
	"github.com/shardinformer/shardinformer/replicas/runner"
)

// Example runs a single replica on pipeline informers with parallel
// handler calls: it takes every slot, its handler sees every pod, and
// when it stops every pod leaves its view again.
func Example() {
	var pods []runtime.Object
	for i := range 20 {
		pods = append(pods, apisim.NewPod("default", fmt.Sprint("web-", i), int64(i), apisim.PodOptions{}))
	}
	s, err := apisim.Serve(apisim.Config{ShardedListAndWatch: true}, pods...)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	var inView atomic.Int64
	r, err := runner.New(runner.Config{
		Members: members.Config{Leases: cs.CoordinationV1().Leases("ctrl"), Group: "web-controller", Identity: "ctrl-0",
			LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RenewInterval: 20 * time.Millisecond},
		Inner: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return cs.CoreV1().Pods("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Pods("").Watch(ctx, o)
			},
		},
		NewInformer: func(lw cache.ListerWatcher) cache.SharedIndexInformer {
			return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
		},
		Handler: cache.ResourceEventHandlerFuncs{ // safe for concurrent use
			AddFunc:    func(any) { inView.Add(1) },
			DeleteFunc: func(any) { inView.Add(-1) },
		},
		Workers: 4, // up to 4 calls at once per slot, ordered per key
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	for inView.Load() < 20 {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("in view:", inView.Load())
	cancel()
	fmt.Println(<-done, "in view after stop:", inView.Load())
	// Output:
	// in view: 20
	// <nil> in view after stop: 0
}
