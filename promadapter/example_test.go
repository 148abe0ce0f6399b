package promadapter_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shardinformer/shardinformer/internal/fakeapi"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/promadapter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Hooks and gauges of one informer on a registry of the caller's.
func Example() {
	api := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.PodList{} }})
	for _, name := range []string{"web-0", "web-1", "db-0"} {
		api.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}})
	}
	reg := prometheus.NewRegistry()
	obs, err := promadapter.NewObserver(reg)
	if err != nil {
		panic(err)
	}
	inf := pipeline.NewSharedIndexInformer(api.ListerWatcher(), &corev1.Pod{}, 0, nil,
		pipeline.WithShards(2), pipeline.WithObserver(obs))
	reg.MustRegister(promadapter.NewCollector(inf))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { inf.RunWithContext(ctx); close(done) }()
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "shardinformer_shard_objects" {
			total := 0.0
			for _, m := range mf.GetMetric() {
				total += m.GetGauge().GetValue()
			}
			fmt.Println(len(mf.GetMetric()), "shards hold", total, "objects")
		}
	}
	cancel()
	<-done
	// Output: 2 shards hold 3 objects
}

// One Observer for two informers on one registry: each informer's series
// carry its name (pipeline.WithName) as the informer label, and each
// handler's its registration name (pipeline.NamedHandler).
func ExampleObserver_ForInformer() {
	reg := prometheus.NewRegistry()
	obs, err := promadapter.NewObserver(reg)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stopped []chan struct{}
	for _, name := range []string{"pods-shop", "pods-blog"} {
		api := fakeapi.New(fakeapi.Config{NewList: func() runtime.Object { return &corev1.PodList{} }})
		api.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}})
		inf := pipeline.NewSharedIndexInformer(api.ListerWatcher(), &corev1.Pod{}, 0, nil,
			pipeline.WithName(name), pipeline.WithObserver(obs)) // the informer asks obs.ForInformer(name)
		reg.MustRegister(promadapter.NewCollector(inf))
		if _, err := inf.AddEventHandler(pipeline.NamedHandler("reconciler", cache.ResourceEventHandlerFuncs{})); err != nil {
			panic(err)
		}
		done := make(chan struct{})
		stopped = append(stopped, done)
		go func() { inf.RunWithContext(ctx); close(done) }()
		cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	}

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "shardinformer_listener_workers" {
			for _, m := range mf.GetMetric() {
				fmt.Println(m.GetLabel()[0].GetName(), m.GetLabel()[0].GetValue(), m.GetLabel()[1].GetName(), m.GetLabel()[1].GetValue())
			}
		}
	}
	cancel()
	for _, done := range stopped {
		<-done
	}
	// Output:
	// informer pods-blog listener reconciler
	// informer pods-shop listener reconciler
}
