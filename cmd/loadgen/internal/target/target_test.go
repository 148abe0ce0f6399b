package target

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestPodWidget checks the dynamic path's custom resource: a widget of the
// simulator with a pod's metadata, spec and status, as big as the pod, that
// the simulator stores and serves back unchanged.
func TestPodWidget(t *testing.T) {
	p := newPod("ns", "pod-1", 7, true)
	stamp(p, 123, 2)
	w, err := podWidget(p)
	if err != nil {
		t.Fatal(err)
	}
	if w.GroupVersionKind() != apisim.WidgetKind || w.GetName() != "pod-1" || w.GetAnnotations()[AnnGeneration] != "2" ||
		w.GetAnnotations()[AnnEmitted] != "123" {
		t.Errorf("widget %v %s/%s annotations %v", w.GroupVersionKind(), w.GetNamespace(), w.GetName(), w.GetAnnotations())
	}
	pj, _ := json.Marshal(p)
	wj, _ := json.Marshal(w)
	if r := float64(len(wj)) / float64(len(pj)); r < 0.95 || r > 1.05 {
		t.Errorf("widget %d bytes of JSON, pod %d: not pod-sized", len(wj), len(pj))
	}
	srv, err := apisim.New(apisim.Config{EncodedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ws, err := podWidgets([]*corev1.Pod{p, newPod("ns", "pod-2", 8, false)})
	if err != nil || len(ws) != 2 || ws[1].GetName() != "pod-2" {
		t.Fatalf("podWidgets: %v %v", ws, err)
	}
	want := ws[0].DeepCopy()
	if err := srv.Widgets().Load(ws); err != nil {
		t.Fatal(err)
	}
	got, ok := srv.Widgets().Get("ns", "pod-1")
	if !ok {
		t.Fatal("widget not stored")
	}
	for _, f := range []string{"spec", "status"} {
		if !equality.Semantic.DeepEqual(got.Object[f], want.Object[f]) {
			t.Errorf("stored widget's %s differs from the pod's", f)
		}
	}
}

// TestSimChurn populates the simulator and churns it: the store holds the
// initial pods by their names, the counts add up to the store's change, and
// the same seed writes the same objects.
func TestSimChurn(t *testing.T) {
	for _, resource := range []string{ResourcePods, ResourceWidgets} {
		t.Run("resource="+resource, func(t *testing.T) {
			c := Config{Resource: resource, Namespaces: 3, Seed: 5, ChurnEvents: 300, Mix: Mix{Create: 1, Update: 1, Delete: 1}}
			churn := func() (map[string]string, ChurnCounts, map[string]int64) {
				t.Helper()
				s, err := NewSim(c)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close(context.Background())
				done := 0
				if err := s.Populate(context.Background(), 1234, func(n int) { done = n }); err != nil || done != 1234 {
					t.Fatalf("Populate: %d done, %v", done, err)
				}
				st, err := s.State(context.Background())
				if err != nil || len(st) != 1234 || st[s.Namespace(1233)+"/"+PodName(1233)] == "" {
					t.Fatalf("after Populate: %d objects, %v", len(st), err)
				}
				g := NewChurner(s, c)
				if err := g.Run(context.Background(), 1234); err != nil {
					t.Fatal(err)
				}
				if st, err = s.State(context.Background()); err != nil {
					t.Fatal(err)
				}
				return st, g.Counts(), g.DeleteStamps()
			}
			st, n, dels := churn()
			if n.Emitted() != 300 || n.Failed != 0 || len(st) != 1234+int(n.Creates)-int(n.Deletes) || len(dels) != int(n.Deletes) {
				t.Errorf("counts %+v, %d deletes stamped, %d objects", n, len(dels), len(st))
			}
			for k := range dels {
				if _, ok := st[k]; ok {
					t.Errorf("%s deleted but stored", k)
				}
			}
			if again, m, _ := churn(); !maps.Equal(keys(st), keys(again)) || m.Creates != n.Creates || m.Deletes != n.Deletes {
				t.Errorf("the same seed wrote another churn: %+v, then %+v", n, m)
			}
		})
	}
}

func keys(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// TestChurnDuration checks the time bound and the rate limit: 100 writes/s
// for 300 ms write about 30.
func TestChurnDuration(t *testing.T) {
	c := Config{Namespaces: 2, Seed: 1, ChurnRate: 100, ChurnDuration: 300 * time.Millisecond, Mix: Mix{Update: 1}}
	s, err := NewSim(c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Populate(context.Background(), 10, func(int) {}); err != nil {
		t.Fatal(err)
	}
	g := NewChurner(s, c)
	if err := g.Run(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	if n := g.Counts(); n.Updates < 10 || n.Updates > 45 || n.Creates+n.Deletes != 0 || n.Seconds < 0.29 {
		t.Errorf("counts %+v", n)
	}
}

func TestReuseRunIDIsAValidLabelAndNamespace(t *testing.T) {
	for _, tc := range []struct {
		pods, namespaces int
		seed             int64
	}{{100000, 100, 1}, {1, 1, 0}, {math.MaxInt32, 999, math.MinInt64}, {5, 7, math.MaxInt64}} {
		id := ReuseRunID(tc.pods, tc.namespaces, tc.seed)
		if errs := validation.IsValidLabelValue(id); len(errs) > 0 {
			t.Errorf("run id %q is not a label value: %v", id, errs)
		}
		ns := Endpoint{Kind: KindCluster, RunID: id}.Namespace(tc.namespaces-1, tc.namespaces)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			t.Errorf("namespace %q is not a DNS label: %v", ns, errs)
		}
	}
	// The same flags name the same pods; any other value names others.
	a := ReuseRunID(100000, 100, 1)
	if a != ReuseRunID(100000, 100, 1) {
		t.Error("run id not deterministic")
	}
	for _, b := range []string{ReuseRunID(10000, 100, 1), ReuseRunID(100000, 10, 1), ReuseRunID(100000, 100, 2), ReuseRunID(1000001, 0, 0)} {
		if a == b {
			t.Errorf("%q names two pod sets", a)
		}
	}
}
