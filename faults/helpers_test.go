package faults

import (
	"fmt"
	"testing"

	"github.com/shardinformer/shardinformer/apisim"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// newSim returns a started simulated API server holding n pods in two
// namespaces; it is closed when the test ends.
func newSim(t testing.TB, n int) *apisim.Server {
	t.Helper()
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = apisim.NewPod(fmt.Sprintf("ns-%d", i%2), fmt.Sprintf("pod-%04d", i), int64(i), apisim.PodOptions{})
	}
	if err := s.Load(pods); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newProxy returns a started proxy with cfg in front of upstream; it is
// closed when the test ends.
func newProxy(t testing.TB, upstream *rest.Config, cfg Config) *Proxy {
	t.Helper()
	cfg.Upstream = upstream
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// clientset is a clientset through p, speaking media (JSON or protobuf).
func clientset(t testing.TB, p *Proxy, media string) *kubernetes.Clientset {
	t.Helper()
	cfg := p.ClientConfig(&rest.Config{QPS: -1, Burst: -1})
	cfg.ContentType = media
	if media == apisim.ContentTypeProtobuf {
		cfg.AcceptContentTypes = apisim.ContentTypeProtobuf + "," + apisim.ContentTypeJSON
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func shortMedia(m string) string {
	if m == apisim.ContentTypeProtobuf {
		return "protobuf"
	}
	return "json"
}

var medias = []string{apisim.ContentTypeJSON, apisim.ContentTypeProtobuf}
