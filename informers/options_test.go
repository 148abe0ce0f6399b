package informers_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/internal/testkit"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// The factory's namespace and tweak options reach every list and watch
// request, so the cache holds exactly the selected pods — initially and as
// pods enter and leave the selection — for client-go's factory and ours, with
// and without WatchList.
func TestNamespaceAndTweakReachRequests(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		for _, im := range impls {
			t.Run(fmt.Sprintf("%s/watchList=%v", im.name, watchList), func(t *testing.T) {
				clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
				var pods []*corev1.Pod
				for _, ns := range []string{"a", "b"} {
					for _, n := range names("web", 10) {
						pods = append(pods, pod(ns, n, map[string]string{"tier": "web"}))
					}
					for _, n := range names("db", 5) {
						pods = append(pods, pod(ns, n, map[string]string{"tier": "db"}))
					}
				}
				s := newServer(t, pods...)
				web := labels.SelectorFromSet(labels.Set{"tier": "web"})
				f := im.build(s.client, spec{namespace: "a", tweak: func(o *metav1.ListOptions) { o.LabelSelector = web.String() }})
				podsInformer := f.Core().V1().Pods()
				checkImpl(t, im, podsInformer.Informer())
				lister := podsInformer.Lister()
				start(t, f)

				cached := func() []string { l, _ := lister.List(labels.Everything()); return keys(l) }
				if got, want := cached(), s.keys("a", web); !slices.Equal(got, want) || len(want) != 10 {
					t.Fatalf("cache %v, want the 10 web pods of a %v", got, want)
				}
				// Into the selection, elsewhere, and out of it.
				if _, err := s.Create(pod("a", "web-new", map[string]string{"tier": "web"})); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Create(pod("b", "web-new", map[string]string{"tier": "web"})); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Modify("a", "web-000", func(p *corev1.Pod) { p.Labels["tier"] = "db" }); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Modify("a", "db-000", func(p *corev1.Pod) { p.Labels["tier"] = "web" }); err != nil {
					t.Fatal(err)
				}
				want := s.keys("a", web)
				testkit.Eventually(t, "cache = server's selection", func() bool { return slices.Equal(cached(), want) })
				s.requests.Check(t, "pods", "/api/v1/namespaces/a/pods", "tier=web")
			})
		}
	}
}

// A selector matching nothing caches nothing (issue 10: it cached every pod),
// while the same factory without it caches all.
func TestSelectorMatchingNothingCachesNothing(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for _, n := range names("pod", 100) {
				pods = append(pods, pod("default", n, map[string]string{"app": "x"}))
			}
			s := newServer(t, pods...)
			none := im.build(s.client, spec{tweak: func(o *metav1.ListOptions) { o.LabelSelector = "app=nomatch" }})
			all := im.build(s.client, spec{})
			noneInf, allInf := none.Core().V1().Pods().Informer(), all.Core().V1().Pods().Informer()
			checkImpl(t, im, noneInf)
			checkImpl(t, im, allInf)
			start(t, none)
			if got := noneInf.GetStore().ListKeys(); len(got) != 0 {
				t.Fatalf("selector matching nothing cached %d pods", len(got))
			}
			s.requests.Check(t, "pods", "/api/v1/pods", "app=nomatch")
			start(t, all)
			if got := len(allInf.GetStore().ListKeys()); got != 100 {
				t.Fatalf("factory without selector cached %d pods, want 100", got)
			}
		})
	}
}

// The factory is ours through the generic accessor too, with the same
// options.
func TestForResourceHonoursOptions(t *testing.T) {
	s := newServer(t, pod("a", "p1", map[string]string{"tier": "web"}), pod("a", "p2", nil), pod("b", "p3", map[string]string{"tier": "web"}))
	f := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace("a"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "tier=web" }))
	gi, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("pods"))
	if err != nil {
		t.Fatal(err)
	}
	checkImpl(t, impls[1], gi.Informer())
	start(t, f)
	objs, err := gi.Lister().List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].(*corev1.Pod).Name != "p1" {
		t.Fatalf("generic lister: %v, want a/p1 only", objs)
	}
	if _, err := gi.Lister().ByNamespace("a").Get("p1"); err != nil {
		t.Fatal(err)
	}
}
