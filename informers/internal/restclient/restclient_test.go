package restclient

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

var cfg = &rest.Config{Host: "https://127.0.0.1:6443/prefix"}

// TestClientGoLayout finds the REST clients of real clients and none in
// fakes; it fails when client-go moves or renames the fields read.
func TestClientGoLayout(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(cfg)
	if !Usable(cs.CoreV1().RESTClient()) || !Usable(cs.AppsV1().RESTClient()) {
		t.Error("the clientset's group clients are not usable")
	}
	if Usable(kubefake.NewClientset().CoreV1().RESTClient()) {
		t.Error("the fake clientset's REST client is usable")
	}
	if Usable(nil) {
		t.Error("nil is usable")
	}

	dc := dynamic.NewForConfigOrDie(cfg)
	rc, ok := Dynamic(dc)
	if !ok {
		t.Fatal("no REST client found under *dynamic.DynamicClient")
	}
	if got := rc.Get().AbsPath("/api/v1/pods").URL().String(); got != "https://127.0.0.1:6443/prefix/api/v1/pods" {
		t.Errorf("dynamic client's REST client requests %s", got)
	}
	if _, ok := Dynamic(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())); ok {
		t.Error("a REST client found under the fake dynamic client")
	}
	if _, ok := Dynamic(nil); ok {
		t.Error("a REST client found under nil")
	}

	mc := metadata.NewForConfigOrDie(cfg)
	rc, ok = Metadata(mc)
	if !ok {
		t.Fatal("no REST client found under *metadata.Client")
	}
	if got := rc.Get().AbsPath("/apis/apps/v1/deployments").URL().String(); got != "https://127.0.0.1:6443/prefix/apis/apps/v1/deployments" {
		t.Errorf("metadata client's REST client requests %s", got)
	}
	if _, ok := Metadata(metadatafake.NewSimpleMetadataClient(runtime.NewScheme())); ok {
		t.Error("a REST client found under the fake metadata client")
	}
}

func TestFallback(t *testing.T) {
	fake := kubefake.NewClientset()
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return fake.CoreV1().Pods("").List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return fake.CoreV1().Pods("").Watch(ctx, opts)
		},
	}, fake)
	f := Fallback(lw, "a fake clientset")
	if got, want := fmt.Sprint(f), "client-go list/watch (a fake clientset)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	u, ok := f.(interface{ IsWatchListSemanticsUnSupported() bool })
	if !ok || !u.IsWatchListSemanticsUnSupported() {
		t.Error("the fake clientset's WatchList choice is lost")
	}
	if _, ok := f.(cache.ListerWatcherWithContext); !ok {
		t.Error("no context methods")
	}
	if _, err := f.List(metav1.ListOptions{}); err != nil {
		t.Error(err)
	}
	w, err := f.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	plain := Fallback(&cache.ListWatch{}, "x").(interface{ IsWatchListSemanticsUnSupported() bool })
	if plain.IsWatchListSemanticsUnSupported() {
		t.Error("a ListWatch without a choice opts out of WatchList")
	}
}
