package crcache_test

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/crcache"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// serve starts a simulated API server with three pods in namespace shop
// and one in another.
func serve() *apisim.Server {
	s, err := apisim.Serve(apisim.Config{},
		apisim.NewPod("shop", "web-0", 0, apisim.PodOptions{}),
		apisim.NewPod("shop", "web-1", 1, apisim.PodOptions{}),
		apisim.NewPod("shop", "web-2", 2, apisim.PodOptions{}),
		apisim.NewPod("other", "db-0", 9, apisim.PodOptions{}))
	if err != nil {
		panic(err)
	}
	return s
}

// crcache.New is controller-runtime's cache with cache.Options as usual;
// in a manager: ctrl.NewManager(cfg, ctrl.Options{NewCache: crcache.New}).
// The informer behind the cache's lists and watches through the wire, with
// the namespace and selectors controller-runtime asks for.
func ExampleNew() {
	s := serve()
	defer s.Close()
	cfg := s.RESTConfig()
	cfg.ContentType = "" // as from a kubeconfig: controller-runtime asks for protobuf

	c, err := crcache.New(cfg, cache.Options{
		DefaultFieldSelector: fields.OneTermEqualSelector("metadata.namespace", "shop"),
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }() // goroutine: the cache; joined below.
	defer func() { cancel(); <-errc }()
	c.WaitForCacheSync(ctx) // returns once the cache has started

	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		panic(err)
	}
	inf, _ := c.GetInformer(ctx, &corev1.Pod{})
	ours, _ := pipeline.Unwrap(inf.(toolscache.SharedIndexInformer))
	lw, _, _ := strings.Cut(ours.Stats().ListerWatcher, ",")
	fmt.Printf("%d pods from %s\n", len(pods.Items), lw)
	// Output: 3 pods from wire pods.v1 in shop: protobuf
}

// NewFunc tunes the informers (pipeline options) and the wire (its options
// after the default diet).
func ExampleNewFunc() {
	s := serve()
	defer s.Close()

	newCache, err := crcache.NewFunc(
		crcache.WithPipelineOptions(pipeline.WithShards(4)),
		crcache.WithWireOptions(wire.WithWorkers(2), wire.WithoutDiet()))
	if err != nil {
		panic(err)
	}
	// In a manager: ctrl.NewManager(cfg, ctrl.Options{NewCache: newCache}).
	c, err := newCache(s.RESTConfig(), cache.Options{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }() // goroutine: the cache; joined below.
	defer func() { cancel(); <-errc }()
	c.WaitForCacheSync(ctx) // returns once the cache has started

	inf, _ := c.GetInformer(ctx, &corev1.Pod{})
	ours, _ := pipeline.Unwrap(inf.(toolscache.SharedIndexInformer))
	st := ours.Stats()
	fmt.Printf("%d shards, %s\n", len(st.Shards), st.ListerWatcher)
	// Output: 4 shards, wire pods.v1: json, 2 workers
}
