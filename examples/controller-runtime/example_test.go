package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/pipeline"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// A controller-runtime manager built with NewCache: crcache.New (newManager)
// reads from a cache of shardinformer informers on the wire decoder;
// pipeline.Unwrap reaches the informer behind the cache's, for parallel
// handlers and Stats.
func Example() {
	s, err := apisim.Serve(apisim.Config{},
		apisim.NewPod("default", "web-0", 0, apisim.PodOptions{}),
		apisim.NewPod("default", "web-1", 1, apisim.PodOptions{}),
		apisim.NewPod("default", "web-2", 2, apisim.PodOptions{}))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	mgr, err := newManager(s.RESTConfig())
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }() // goroutine: the manager; joined below.
	defer func() { cancel(); <-errc }()

	inf, _ := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	mgr.GetCache().WaitForCacheSync(ctx)
	ours, _ := pipeline.Unwrap(inf.(toolscache.SharedIndexInformer))
	var pods corev1.PodList
	_ = mgr.GetClient().List(ctx, &pods)
	lw, _, _ := strings.Cut(ours.Stats().ListerWatcher, ":")
	fmt.Printf("%d pods in a cache of %T on %s\n", len(pods.Items), ours, lw)
	// Output: 3 pods in a cache of *pipeline.Informer on wire pods.v1
}
