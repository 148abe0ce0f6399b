//go:build e2e

package apisim

// Differential conformance against a real kube-apiserver v1.36.3 (the
// binaries `make cluster-bins` builds): the same requests to apisim and to
// the real server, with the same objects, must get the same answers —
// status codes, reasons and messages, content types, kinds, which lists
// carry shardInfo, which objects a shard selector returns. Run with
//
//	go test -tags e2e -run TestConformance ./apisim/

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/shardinformer/shardinformer/e2e/cluster"
	"github.com/shardinformer/shardinformer/shardselector"
)

// target is one server under comparison.
type target struct {
	name string
	cfg  *rest.Config
	cs   *kubernetes.Clientset // protobuf
	dyn  dynamic.Interface
	md   metadata.Interface
	raw  *http.Client
	sim  *Server // apisim's in-process API; nil for kube-apiserver
}

func newTarget(t *testing.T, name string, cfg *rest.Config) *target {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, -1
	pb := rest.CopyConfig(cfg)
	pb.ContentType = ContentTypeProtobuf
	tg := &target{name: name, cfg: cfg}
	var err error
	if tg.cs, err = kubernetes.NewForConfig(pb); err != nil {
		t.Fatal(err)
	}
	if tg.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if tg.md, err = metadata.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if tg.raw, err = rest.HTTPClientFor(cfg); err != nil {
		t.Fatal(err)
	}
	return tg
}

// response is what a raw request got, reduced to what the servers must agree on.
type response struct {
	Code        int
	ContentType string
	Kind        string // of the JSON body, or of the Status decoded from it
	APIVersion  string
	ItemKinds   []string // kinds of JSON list items, deduplicated
	Reason      metav1.StatusReason
	Message     string
	ShardInfo   bool // metadata.shardInfo present
}

func (tg *target) get(t *testing.T, path, accept string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(tg.cfg.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := tg.raw.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := response{Code: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	var doc struct {
		Kind       string              `json:"kind"`
		APIVersion string              `json:"apiVersion"`
		Reason     metav1.StatusReason `json:"reason"`
		Message    string              `json:"message"`
		Metadata   struct {
			ShardInfo *metav1.ShardInfo `json:"shardInfo"`
		} `json:"metadata"`
		Items []struct {
			Kind string `json:"kind"`
		} `json:"items"`
	}
	if strings.HasPrefix(r.ContentType, "application/json") && json.Unmarshal(body, &doc) == nil {
		r.Kind, r.APIVersion, r.Reason, r.Message = doc.Kind, doc.APIVersion, doc.Reason, doc.Message
		r.ShardInfo = doc.Metadata.ShardInfo != nil
		seen := map[string]bool{}
		for _, it := range doc.Items {
			if !seen[it.Kind] {
				seen[it.Kind] = true
				r.ItemKinds = append(r.ItemKinds, it.Kind)
			}
		}
	}
	return r
}

var widgetCRD = &unstructured.Unstructured{Object: map[string]any{
	"apiVersion": "apiextensions.k8s.io/v1",
	"kind":       "CustomResourceDefinition",
	"metadata":   map[string]any{"name": "widgets.example.shardinformer.io"},
	"spec": map[string]any{
		"group": "example.shardinformer.io",
		"scope": "Namespaced",
		"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
			"shortNames": []any{"wd"}, "categories": []any{"all"}},
		"versions": []any{map[string]any{
			"name": "v1", "served": true, "storage": true,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		}},
	},
}}

// startReal starts kube-apiserver with the given extra flags, installs the
// widgets CRD and the namespaces, and loads n objects of each resource.
func startReal(t *testing.T, n int, args ...string) *target {
	t.Helper()
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{APIServerArgs: args, Logf: t.Logf})
	if err != nil {
		if os.Getenv("SHARDINFORMER_E2E_REQUIRE") == "" {
			t.Skipf("no real cluster: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	tg := newTarget(t, "kube-apiserver", c.RESTConfig())
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := tg.dyn.Resource(crds).Create(ctx, widgetCRD, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ns-%d", i)}}
		if _, err := tg.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := tg.dyn.Resource(WidgetsResource).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("widgets never served: %v", err)
	}
	for i := range n {
		ns, name := fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("obj-%05d", i)
		pod := NewPod(ns, name, int64(i), PodOptions{})
		pod.Spec.PriorityClassName, pod.Spec.Priority = "", nil // the Priority admission plugin rejects unknown classes
		if _, err := tg.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := tg.cs.CoreV1().ConfigMaps(ns).Create(ctx, NewConfigMap(ns, name, int64(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := tg.cs.AppsV1().Deployments(ns).Create(ctx, NewDeployment(ns, name, int64(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := tg.dyn.Resource(WidgetsResource).Namespace(ns).Create(ctx, NewWidget(ns, name, int64(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return tg
}

// startSim starts apisim with the same objects.
func startSim(t *testing.T, n int, cfg Config) *target {
	t.Helper()
	s := startServer(t, cfg)
	for i := range n {
		ns, name := fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("obj-%05d", i)
		for _, err := range []error{
			s.Pods().Load([]*corev1.Pod{NewPod(ns, name, int64(i), PodOptions{})}),
			s.ConfigMaps().Load([]*corev1.ConfigMap{NewConfigMap(ns, name, int64(i))}),
			s.Deployments().Load([]*appsv1.Deployment{NewDeployment(ns, name, int64(i))}),
			s.Widgets().Load([]*unstructured.Unstructured{NewWidget(ns, name, int64(i))}),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	tg := newTarget(t, "apisim", s.RESTConfig())
	tg.sim = s
	return tg
}

// agree runs check on both targets and fails unless the results are equal.
func agree[R any](t *testing.T, what string, real, sim *target, check func(*target) R) {
	t.Helper()
	a, b := check(real), check(sim)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("%s:\n kube-apiserver %s\n apisim         %s", what, ja, jb)
	}
}

func statusOf(err error) response {
	if err == nil {
		return response{Code: 200}
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return response{Message: "not a status: " + err.Error()}
	}
	s := st.Status()
	// cel-go's syntax error texts (ANTLR's) are not reproduced: compare the
	// category.
	const celError = "invalid shard selector: CEL parse error: "
	if strings.HasPrefix(s.Message, celError) {
		s.Message = celError + "…"
	}
	return response{Code: int(s.Code), Reason: s.Reason, Message: s.Message}
}

// shardResult is what a shard-selected list returned, independent of the
// server's UIDs: whether every item is in range (and, without a limit, every
// in-range object is there), whether its paging metadata is what the model
// below predicts from that server's own objects, and the selector echo.
type shardResult struct {
	Exact     bool
	ShardInfo string
	Paging    string // "" when continue and remainingItemCount are as modelled, else what differs
}

// shardList lists once without and once with the selector. The two servers
// hold different UIDs, so which objects a range selects differs between them;
// what both must agree on is the rule, checked here against each one's own
// objects (etcd3 store and cacher GetList in k8s.io/apiserver v0.36.3):
// a page with a limit has a continue token iff some key follows its
// limit-th match, and then remainingItemCount is the count of all keys in the
// listed range less the limit, the shard selector not counted.
func shardList(t *testing.T, tg *target, list func(metav1.ListOptions) (k8sruntime.Object, error), sel shardselector.Selector, limit int64) shardResult {
	t.Helper()
	all, err := list(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	every, _ := meta.ExtractList(all)
	var wantMore bool
	var matched int64
	for i, it := range every {
		m, _ := meta.Accessor(it)
		if sel.Matches(string(m.GetUID())) {
			want[m.GetNamespace()+"/"+m.GetName()] = true
			if matched++; matched == limit {
				wantMore = i < len(every)-1
			}
		}
	}
	got, err := list(metav1.ListOptions{ShardSelector: sel.String(), Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	var r shardResult
	lm, _ := meta.ListAccessor(got)
	if more := lm.GetContinue() != ""; more != wantMore {
		r.Paging = fmt.Sprintf("continue %t, want %t (%d keys, limit %d)", more, wantMore, len(every), limit)
	} else if rem, want := lm.GetRemainingItemCount(), int64(len(every))-limit; more && (rem == nil || *rem != want) {
		r.Paging = fmt.Sprintf("remainingItemCount %d (-1: unset), want %d", ptr.Deref(rem, -1), want)
	} else if !more && rem != nil {
		r.Paging = fmt.Sprintf("remainingItemCount %d on a last page", *rem)
	}
	if si, ok := got.(interface{ GetShardInfo() *metav1.ShardInfo }); ok && si.GetShardInfo() != nil {
		r.ShardInfo = si.GetShardInfo().Selector
	}
	if ul, ok := got.(*unstructured.UnstructuredList); ok {
		if si, found := ul.Object["metadata"].(map[string]any)["shardInfo"]; found {
			r.ShardInfo = fmt.Sprint(si)
		}
	}
	items, _ := meta.ExtractList(got)
	r.Exact = limit > 0 || len(items) == len(want)
	for _, it := range items {
		m, _ := meta.Accessor(it)
		r.Exact = r.Exact && want[m.GetNamespace()+"/"+m.GetName()]
	}
	return r
}

func TestConformance(t *testing.T) {
	const n = 30
	real := startReal(t, n, "--feature-gates=ShardedListAndWatch=true")
	sim := startSim(t, n, Config{ShardedListAndWatch: true})
	ctx := context.Background()
	half := shardselector.Selector{Field: shardselector.FieldUID, Ranges: []shardselector.Range{
		{Start: 0, Last: 0x3fffffffffffffff}, {Start: 0xa000000000000000, Last: math.MaxUint64}}}

	t.Run("shard selector lists", func(t *testing.T) {
		lists := map[string]func(*target) func(metav1.ListOptions) (k8sruntime.Object, error){
			"typed pods": func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) {
				return func(o metav1.ListOptions) (k8sruntime.Object, error) { return tg.cs.CoreV1().Pods("").List(ctx, o) }
			},
			"typed configmaps in ns-1": func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) {
				return func(o metav1.ListOptions) (k8sruntime.Object, error) {
					return tg.cs.CoreV1().ConfigMaps("ns-1").List(ctx, o)
				}
			},
			"metadata deployments": func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) {
				return func(o metav1.ListOptions) (k8sruntime.Object, error) {
					return tg.md.Resource(DeploymentsResource).List(ctx, o)
				}
			},
			"dynamic widgets": func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) {
				return func(o metav1.ListOptions) (k8sruntime.Object, error) {
					return tg.dyn.Resource(WidgetsResource).List(ctx, o)
				}
			},
		}
		for name, list := range lists {
			for _, limit := range []int64{0, 4} {
				agree(t, fmt.Sprintf("%s, limit %d", name, limit), real, sim, func(tg *target) shardResult {
					return shardList(t, tg, list(tg), half, limit)
				})
			}
		}
	})

	t.Run("shard selector errors", func(t *testing.T) {
		for _, sel := range []string{
			"shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
			"  ",
			"shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
			"shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
			"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.namespace, '0x8000000000000000', '0x10000000000000000')",
			"shardRange(object.metadata.uid, 0, 1)",
			"x.y(",
		} {
			agree(t, "list with "+sel, real, sim, func(tg *target) response {
				_, err := tg.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ShardSelector: sel})
				return statusOf(err)
			})
			agree(t, "watch with "+sel, real, sim, func(tg *target) response {
				w, err := tg.cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ShardSelector: sel})
				if w != nil {
					w.Stop()
				}
				return statusOf(err)
			})
		}
	})

	t.Run("shard selector watch", func(t *testing.T) {
		agree(t, "WatchList with a shard selector", real, sim, func(tg *target) bool {
			send := true
			w, err := tg.cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{SendInitialEvents: &send, AllowWatchBookmarks: true,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, ShardSelector: half.String()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			all, err := tg.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for _, p := range all.Items {
				if half.Matches(string(p.UID)) {
					want++
				}
			}
			got := 0
			for ev := range w.ResultChan() {
				if ev.Type == watch.Bookmark {
					break
				}
				if !half.Matches(string(ev.Object.(*corev1.Pod).UID)) {
					return false
				}
				got++
			}
			return got == want
		})
	})

	t.Run("metadata negotiation", func(t *testing.T) {
		for _, path := range []string{"/api/v1/pods", "/api/v1/namespaces/ns-1/configmaps", "/apis/apps/v1/deployments",
			"/apis/example.shardinformer.io/v1/widgets"} {
			one := strings.Replace(path, "/pods", "/namespaces/ns-0/pods", 1) + "/obj-00000"
			if strings.Contains(path, "/namespaces/") {
				one = path + "/obj-00001"
			} else if !strings.HasPrefix(path, "/api/v1/pods") {
				i := strings.LastIndex(path, "/")
				one = path[:i] + "/namespaces/ns-0" + path[i:] + "/obj-00000"
			}
			for _, tc := range []struct{ path, accept string }{
				{path, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
				{path, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"},
				{path, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
				{path, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
				{path, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2, application/json"},
				{path, "application/json;as=Foo;g=meta.k8s.io;v=v1"},
				{path, "application/vnd.kubernetes.protobuf, application/json"},
				{path, "application/vnd.kubernetes.protobuf"},
				{path, "text/html"},
				{path, "application/*"},
				{path, "application/json;q=0, text/html"},
				{path, ""},
				{path + "?shardSelector=" + strings.ReplaceAll(half.String(), " ", "%20"), "application/json"},
				{path + "?shardSelector=" + strings.ReplaceAll(half.String(), " ", "%20"), "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
				{path + "?fieldSelector=spec.nodeName%3Dx", "application/json"},
				{path + "?fieldSelector=spec.host%3Dx", "application/json"},
				{path + "?fieldSelector=status.podIPs%3D", "application/json"},
				{one, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
				{one, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
				{one, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"},
				{one, "application/json"},
				{one, "text/html"},
				{one, "application/vnd.kubernetes.protobuf"},
			} {
				agree(t, fmt.Sprintf("GET %s Accept %q", tc.path, tc.accept), real, sim, func(tg *target) response {
					return tg.get(t, tc.path, tc.accept)
				})
			}
		}
	})

	t.Run("watch objects", func(t *testing.T) {
		// The events of a WatchList up to its initial-events-end bookmark,
		// each described by describe.
		initialEvents := func(watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), describe func(watch.Event) string) []string {
			send := true
			w, err := watchFn(ctx, metav1.ListOptions{SendInitialEvents: &send, AllowWatchBookmarks: true,
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var out []string
			for ev := range w.ResultChan() {
				out = append(out, describe(ev))
				if ev.Type == watch.Bookmark {
					break
				}
			}
			return out
		}
		for _, gvr := range []schema.GroupVersionResource{PodsResource, WidgetsResource} {
			agree(t, "metadata WatchList of "+gvr.Resource, real, sim, func(tg *target) []string {
				return initialEvents(tg.md.Resource(gvr).Namespace("ns-2").Watch, func(ev watch.Event) string {
					p := ev.Object.(*metav1.PartialObjectMetadata)
					return fmt.Sprintf("%s %s %v", ev.Type, p.Kind, p.Annotations[metav1.InitialEventsAnnotationKey])
				})
			})
			agree(t, "dynamic WatchList of "+gvr.Resource, real, sim, func(tg *target) []string {
				return initialEvents(tg.dyn.Resource(gvr).Namespace("ns-2").Watch, func(ev watch.Event) string {
					u := ev.Object.(*unstructured.Unstructured)
					return fmt.Sprintf("%s %s %s", ev.Type, u.GetAPIVersion(), u.GetKind())
				})
			})
		}
	})

	t.Run("discovery", func(t *testing.T) {
		agree(t, "served resources", real, sim, func(tg *target) []string {
			dc, err := discovery.NewDiscoveryClientForConfig(tg.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, gv := range []string{"v1", "apps/v1", "example.shardinformer.io/v1"} {
				rl, err := dc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rl.APIResources {
					switch r.Name {
					case "pods", "configmaps", "deployments", "widgets":
						out = append(out, fmt.Sprintf("%s %s %s %s %v %v %v", gv, r.Name, r.SingularName, r.Kind, r.Namespaced, r.ShortNames, r.Categories))
					}
				}
			}
			return out
		})
	})
}

// TestConformanceGateOff: with ShardedListAndWatch off, both servers ignore
// shardSelector, however malformed.
func TestConformanceGateOff(t *testing.T) {
	const n = 9
	real := startReal(t, n)
	sim := startSim(t, n, Config{})
	for _, sel := range []string{"shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000001')", "garbage(", " "} {
		agree(t, "list with "+sel, real, sim, func(tg *target) []any {
			l, err := tg.cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{ShardSelector: sel})
			if err != nil {
				return []any{statusOf(err)}
			}
			return []any{len(l.Items), l.ShardInfo}
		})
	}
}
