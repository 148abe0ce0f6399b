package restclient

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
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
