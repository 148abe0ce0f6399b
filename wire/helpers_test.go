package wire_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/wire"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// startSim starts an apisim server holding n realistic pods in namespaces
// ns-0..ns-3.
func startSim(t testing.TB, n int, cfg apisim.Config) *apisim.Server {
	t.Helper()
	s, err := apisim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = apisim.NewPod(fmt.Sprintf("ns-%d", i%4), fmt.Sprintf("pod-%05d", i), int64(i), apisim.PodOptions{ManagedFields: true})
	}
	if err := s.Load(pods); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// restConfig returns the server's config asking for ct.
func restConfig(s *apisim.Server, ct wire.ContentType) *rest.Config {
	cfg := s.RESTConfig()
	if ct == wire.Protobuf {
		cfg.ContentType = apisim.ContentTypeProtobuf
	}
	return cfg
}

// contentTypes are the encodings to test; apisim serves no CBOR, so CBOR
// tests the fallback to JSON.
func contentTypes() []wire.ContentType {
	return []wire.ContentType{wire.Protobuf, wire.JSON, wire.CBOR}
}

func ctName(ct wire.ContentType) string {
	return map[wire.ContentType]string{wire.Protobuf: "protobuf", wire.JSON: "json", wire.CBOR: "cbor"}[ct]
}

func newPodLW(t testing.TB, cfg *rest.Config, ns string, opts ...wire.Option) *wire.ListerWatcher {
	t.Helper()
	lw, err := wire.NewForConfig(cfg, wire.Resource{GVR: podsGVR, Namespace: ns, Object: &corev1.Pod{}}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return lw
}

func clientset(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// mustEqual fails unless want and got are semantically equal, showing the
// difference.
func mustEqual(t testing.TB, what string, want, got any) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Fatalf("%s differs (-client-go +wire):\n%s", what, cmp.Diff(want, got))
	}
}

// collect reads n events from w, failing after a minute.
func collect(t testing.TB, w watch.Interface, n int) []watch.Event {
	t.Helper()
	var out []watch.Event
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(out), n)
			}
			out = append(out, ev)
		case <-timer.C:
			t.Fatalf("timed out after %d of %d events", len(out), n)
		}
	}
	return out
}

func ctx(t testing.TB) context.Context { return t.Context() }

var _ runtime.Object = (*corev1.Pod)(nil)

type kubernetesClientset = kubernetes.Clientset

func newClientset(cfg *rest.Config) (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(cfg)
}

type (
	ctxT          = context.Context
	runtimeObject = runtime.Object
)
