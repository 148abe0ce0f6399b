package apisim

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// TestListResourceVersionSemantics covers resourceVersion and
// resourceVersionMatch as the API server interprets them.
func TestListResourceVersionSemantics(t *testing.T) {
	s := startServer(t, Config{ResourceVersionWait: 10 * time.Millisecond})
	fill(t, s, 20, 2)
	cs := clientFor(t, s, ContentTypeProtobuf)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("")
	before := s.ResourceVersion()
	beforeStr := strconv.FormatUint(before, 10)
	if _, err := s.Modify("ns-0", "pod-00000", func(p *corev1.Pod) { p.Labels["v"] = "2" }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete("ns-1", "pod-00001"); err != nil {
		t.Fatal(err)
	}
	now := strconv.FormatUint(s.ResourceVersion(), 10)

	check := func(name string, opts metav1.ListOptions, wantRV string, wantItems int) *corev1.PodList {
		t.Helper()
		l, err := pods.List(ctx, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if l.ResourceVersion != wantRV || len(l.Items) != wantItems {
			t.Errorf("%s: rv %s with %d items; want rv %s with %d", name, l.ResourceVersion, len(l.Items), wantRV, wantItems)
		}
		return l
	}
	check("most recent", metav1.ListOptions{}, now, 19)
	check("any", metav1.ListOptions{ResourceVersion: "0"}, now, 19)
	check("not older than", metav1.ListOptions{ResourceVersion: beforeStr, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, now, 19)
	check("legacy rv without limit", metav1.ListOptions{ResourceVersion: beforeStr}, now, 19)
	l := check("exact", metav1.ListOptions{ResourceVersion: beforeStr, ResourceVersionMatch: metav1.ResourceVersionMatchExact}, beforeStr, 20)
	if l.Items[0].Name != "pod-00000" || l.Items[0].Labels["v"] != "" {
		t.Errorf("exact list shows pod-00000 after its update")
	}
	check("legacy rv with limit is exact", metav1.ListOptions{ResourceVersion: beforeStr, Limit: 100}, beforeStr, 20)
	// "0" is served whole whatever the limit, as from the API server's
	// watch cache; without a resourceVersion the limit pages.
	if l := check("any with limit", metav1.ListOptions{ResourceVersion: "0", Limit: 5}, now, 19); l.Continue != "" || l.RemainingItemCount != nil {
		t.Errorf("any with limit: continue %q, remainingItemCount set %t; want the whole list", l.Continue, l.RemainingItemCount != nil)
	}
	if l := check("any, NotOlderThan, with limit", metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 5}, now, 19); l.Continue != "" || l.RemainingItemCount != nil {
		t.Errorf("any, NotOlderThan, with limit: continue %q, remainingItemCount set %t; want the whole list", l.Continue, l.RemainingItemCount != nil)
	}
	first := check("most recent with limit", metav1.ListOptions{Limit: 5}, now, 5)
	if first.Continue == "" || first.RemainingItemCount == nil || *first.RemainingItemCount != 14 {
		t.Errorf("most recent with limit: continue %q, remainingItemCount %d (-1: unset); want a page with 14 remaining", first.Continue, ptr.Deref(first.RemainingItemCount, -1))
	}
	// A continue token presented with "0" gets the rest of the token's
	// snapshot whole, at its resourceVersion — the write made since not in
	// it — as from the watch cache; with resourceVersion unset, the next page.
	if _, err := s.Create(NewPod("ns-1", "pod-99999", 99999, PodOptions{})); err != nil {
		t.Fatal(err)
	}
	if l := check("any with limit and continue", metav1.ListOptions{ResourceVersion: "0", Limit: 5, Continue: first.Continue}, now, 14); l.Continue != "" || l.RemainingItemCount != nil {
		t.Errorf("any with limit and continue: continue %q, remainingItemCount set %t; want the rest of the snapshot", l.Continue, l.RemainingItemCount != nil)
	}
	if l := check("continue", metav1.ListOptions{Limit: 5, Continue: first.Continue}, now, 5); l.Continue == "" || ptr.Deref(l.RemainingItemCount, -1) != 9 {
		t.Errorf("continue: continue %q, remainingItemCount %d (-1: unset); want a page with 9 remaining", l.Continue, ptr.Deref(l.RemainingItemCount, -1))
	}
	if _, err := s.Delete("ns-1", "pod-99999"); err != nil {
		t.Fatal(err)
	}

	future := strconv.FormatUint(s.ResourceVersion()+10, 10)
	// The API server answers 504 with Retry-After: 1, which clients retry;
	// ask once to see the answer.
	err := cs.CoreV1().RESTClient().Get().Resource("pods").MaxRetries(0).
		VersionedParams(&metav1.ListOptions{ResourceVersion: future, ResourceVersionMatch: metav1.ResourceVersionMatchExact}, metav1.ParameterCodec).
		Do(ctx).Error()
	if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		t.Errorf("future rv: %v; want too large resource version", err)
	}
	_, err = pods.List(ctx, metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsInvalid(err) {
		t.Errorf("exact with rv 0: %v; want 422 Invalid", err)
	}
	_, err = pods.List(ctx, metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if !apierrors.IsInvalid(err) {
		t.Errorf("match without rv: %v; want 422 Invalid", err)
	}
	s.Compact(s.ResourceVersion())
	_, err = pods.List(ctx, metav1.ListOptions{ResourceVersion: beforeStr, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("exact below compaction: %v; want 410 Expired", err)
	}

	// Namespaced paging with remainingItemCount.
	l, err = cs.CoreV1().Pods("ns-0").List(ctx, metav1.ListOptions{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 4 || l.Continue == "" || l.RemainingItemCount == nil || *l.RemainingItemCount != 6 {
		t.Errorf("namespaced page: %d items, continue %q, remaining %v; want 4, a token, 6", len(l.Items), l.Continue, l.RemainingItemCount)
	}
	if _, err := cs.CoreV1().Pods("ns-1").List(ctx, metav1.ListOptions{Limit: 4, Continue: l.Continue}); !apierrors.IsBadRequest(err) {
		t.Errorf("continue token from another namespace: %v; want 400", err)
	}
	if _, err := cs.CoreV1().Pods("ns-0").List(ctx, metav1.ListOptions{Limit: 4, Continue: "garbage"}); !apierrors.IsBadRequest(err) {
		t.Errorf("garbage continue token: %v; want 400", err)
	}
}

func TestGet(t *testing.T) {
	s := startServer(t, Config{})
	fill(t, s, 4, 2)
	for _, mt := range mediaTypes {
		cs := clientFor(t, s, mt.mediaType)
		p, err := cs.CoreV1().Pods("ns-1").Get(context.Background(), "pod-00003", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.Get("ns-1", "pod-00003")
		if p.ResourceVersion != want.ResourceVersion || p.UID != want.UID || p.Spec.NodeName != want.Spec.NodeName {
			t.Errorf("%s: get returned %s rv %s", mt.name, key(p), p.ResourceVersion)
		}
		_, err = cs.CoreV1().Pods("ns-1").Get(context.Background(), "nope", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: missing pod: %v; want 404", mt.name, err)
		}
	}
}

// TestHTTPNegotiationAndErrors exercises the HTTP surface directly.
func TestHTTPNegotiationAndErrors(t *testing.T) {
	s := startServer(t, Config{})
	fill(t, s, 2, 1)
	checkHTTP(t, s, []httpCase{
		{"/api/v1/pods", "", ContentTypeJSON, 200},
		{"/api/v1/pods", "application/vnd.kubernetes.protobuf, */*", ContentTypeProtobuf, 200},
		{"/api/v1/pods", "application/vnd.kubernetes.protobuf;q=0.5, application/json", ContentTypeJSON, 200},
		{"/api/v1/pods", "text/html", ContentTypeJSON, 406},
		{"/api/v1/pods?watch=1&timeoutSeconds=1", "application/vnd.kubernetes.protobuf", ContentTypeProtobuf + ";stream=watch", 200},
		{"/api/v1/pods?limit=x", "", ContentTypeJSON, 400},
		{"/api/v1/pods?labelSelector=a%20in", "", ContentTypeJSON, 400},
		{"/api/v1/pods?sendInitialEvents=true", "", ContentTypeJSON, 422},
		{"/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "", ContentTypeJSON, 422},
		{"/api/v1/services", "", ContentTypeJSON, 404},
		{"/api/v1/namespaces/ns-0/pods/pod-00000", "", ContentTypeJSON, 200},
	})
	req, _ := http.NewRequest(http.MethodDelete, s.URL()+"/api/v1/namespaces/ns-0/pods/pod-00000", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE: %d; want 405", resp.StatusCode)
	}

	s.SetUnavailable(true)
	checkHTTP(t, s, []httpCase{{"/api/v1/pods", "", ContentTypeJSON, 503}, {"/apis/apps/v1/deployments", "", ContentTypeJSON, 503}})
	if resp := rawRequest(t, http.MethodGet, s.URL()+"/readyz", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz while unavailable: %d; want 503", resp.StatusCode)
	}
	s.SetUnavailable(false)
	if resp := rawRequest(t, http.MethodGet, s.URL()+"/readyz", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("readyz: %d", resp.StatusCode)
	}
}

func TestDiscovery(t *testing.T) {
	s := startServer(t, Config{})
	dc, err := discovery.NewDiscoveryClientForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil || v.Major != "1" {
		t.Fatalf("ServerVersion: %v %v", v, err)
	}
	rl, err := dc.ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rl.APIResources) != 2 || rl.APIResources[0].Name != "configmaps" || rl.APIResources[1].Name != "pods" {
		t.Errorf("resources: %+v", rl.APIResources)
	}
}

// TestStoreAPI covers the in-process write API's errors and stamping.
func TestStoreAPI(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPod("a", "one", 1, PodOptions{})
	created, err := s.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion != "2" || created.CreationTimestamp.IsZero() {
		t.Errorf("created: uid %q rv %q ts %v", created.UID, created.ResourceVersion, created.CreationTimestamp)
	}
	if p.ResourceVersion != "" {
		t.Errorf("Create modified its argument")
	}
	if _, err := s.Create(p); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate create: %v", err)
	}
	if _, err := s.Create(created); !apierrors.IsBadRequest(err) {
		t.Errorf("create with rv: %v", err)
	}
	gen := NewPod("a", "", 2, PodOptions{})
	g, err := s.Create(gen)
	if err != nil || g.Name == "" || g.Name[:len(gen.GenerateName)] != gen.GenerateName {
		t.Errorf("generateName: %v %q", err, g.Name)
	}

	stale := created.DeepCopy()
	created.Labels["x"] = "1"
	updated, err := s.Update(created)
	if err != nil {
		t.Fatal(err)
	}
	if updated.UID != created.UID || updated.ResourceVersion == created.ResourceVersion {
		t.Errorf("update: uid %q rv %q", updated.UID, updated.ResourceVersion)
	}
	if _, err := s.Update(stale); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v; want Conflict", err)
	}
	stale.ResourceVersion = ""
	if _, err := s.Update(stale); err != nil {
		t.Errorf("unconditional update: %v", err)
	}
	if _, err := s.Update(NewPod("a", "missing", 1, PodOptions{})); !apierrors.IsNotFound(err) {
		t.Errorf("update missing: %v", err)
	}
	if _, err := s.Modify("a", "missing", func(*corev1.Pod) {}); !apierrors.IsNotFound(err) {
		t.Errorf("modify missing: %v", err)
	}
	rv, err := s.Modify("a", "one", func(p *corev1.Pod) { p.Labels["y"] = "2" })
	if err != nil || rv != s.ResourceVersion() {
		t.Errorf("modify: rv %d err %v; store at %d", rv, err, s.ResourceVersion())
	}
	got, ok := s.Get("a", "one")
	if !ok || got.Labels["y"] != "2" || got.Labels["x"] != "" {
		t.Errorf("get after modify: %v %v", ok, got.Labels)
	}
	got.Labels["mutated"] = "yes" // must not reach the store
	again, _ := s.Get("a", "one")
	if again.Labels["mutated"] != "" {
		t.Errorf("Get returned a shared object")
	}
	deleted, err := s.Delete("a", "one")
	if err != nil || deleted.ResourceVersion != strconv.FormatUint(s.ResourceVersion(), 10) {
		t.Errorf("delete: %v rv %q", err, deleted.ResourceVersion)
	}
	if _, err := s.Delete("a", "one"); !apierrors.IsNotFound(err) {
		t.Errorf("double delete: %v", err)
	}
	if _, ok := s.Get("a", "one"); ok || s.Len() != 1 {
		t.Errorf("after delete: present=%v len=%d", ok, s.Len())
	}
}

func TestConfigValidation(t *testing.T) {
	for _, cfg := range []Config{
		{Addr: "0.0.0.0:0"},
		{Addr: "10.0.0.1:80"},
		{Addr: "nonsense"},
		{History: -1},
		{History: 10, WatchBuffer: 11},
		{MaxWatchTimeout: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	for _, cfg := range []Config{{}, {Addr: "localhost:0"}, {Addr: "[::1]:0", History: 10}} {
		if _, err := New(cfg); err != nil {
			t.Errorf("New(%+v): %v", cfg, err)
		}
	}
	s, _ := New(Config{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Error("second Start accepted")
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Start(); err == nil {
		t.Error("Start after Close accepted")
	}
}

var _ k8sruntime.Object = (*corev1.Pod)(nil)

// httpCase is a GET and the status and Content-Type it must get.
type httpCase struct {
	path, accept, wantType string
	wantCode               int
}

// checkHTTP sends each case's request to s; an error's body must be a
// Status with the response's code.
func checkHTTP(t *testing.T, s *Server, cases []httpCase) {
	t.Helper()
	for _, tc := range cases {
		resp := rawRequest(t, http.MethodGet, s.URL()+tc.path, tc.accept)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.wantCode || resp.Header.Get("Content-Type") != tc.wantType {
			t.Errorf("%s (Accept %q): %d %q; want %d %q: %.200s", tc.path, tc.accept, resp.StatusCode,
				resp.Header.Get("Content-Type"), tc.wantCode, tc.wantType, body)
		}
		if tc.wantCode >= 400 {
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			if st, ok := obj.(*metav1.Status); err != nil || !ok || st.Code != int32(tc.wantCode) {
				t.Errorf("%s: error body is not a Status with code %d: %v %.200s", tc.path, tc.wantCode, err, body)
			}
		}
	}
}
