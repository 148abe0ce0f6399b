package apisim

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// startServer starts a server that the test closes.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// clientFor returns a clientset speaking mediaType.
func clientFor(t testing.TB, s *Server, mediaType string) *kubernetes.Clientset {
	t.Helper()
	cfg := s.RESTConfig()
	cfg.ContentType = mediaType
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// fill creates n pods spread over namespaces ns-0..ns-(nsCount-1).
func fill(t testing.TB, s *Server, n, nsCount int) {
	t.Helper()
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = NewPod(fmt.Sprintf("ns-%d", i%nsCount), fmt.Sprintf("pod-%05d", i), int64(i), PodOptions{})
	}
	if err := s.Load(pods); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or a generous deadline passes. It
// asserts convergence, not speed.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: did not converge: %s", what, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameAsServer reports whether an informer's store holds exactly the server's
// pods of namespace ("" = all) accepted by keep, at the same resourceVersions.
func sameAsServer(s *Server, store cache.Store, namespace string, keep func(*corev1.Pod) bool) (bool, string) {
	want := map[string]string{}
	for _, p := range s.List(namespace) {
		if keep == nil || keep(p) {
			want[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
	}
	got := map[string]string{}
	for _, o := range store.List() {
		p := o.(*corev1.Pod)
		got[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	for k, rv := range want {
		if got[k] != rv {
			return false, fmt.Sprintf("%s: cache has rv %q, server %q (cache %d objects, server %d)", k, got[k], rv, len(got), len(want))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			return false, fmt.Sprintf("%s: in cache, not on server (cache %d objects, server %d)", k, len(got), len(want))
		}
	}
	return true, ""
}
