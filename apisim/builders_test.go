package apisim

import (
	"encoding/json"
	"fmt"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestBuilders: each builder is deterministic per seed, varies with it,
// makes objects of a realistic size, and objects that survive the store's
// encodings unchanged.
func TestBuilders(t *testing.T) {
	reg := newResourceSet()
	for _, tc := range []struct {
		name   string
		res    *apiResource
		build  func(ns, name string, seed int64) Object
		lo, hi int // JSON bytes
	}{
		{"configmap", reg.configMaps, func(ns, n string, s int64) Object { return NewConfigMap(ns, n, s) }, 1 << 10, 5 << 10},
		{"deployment", reg.deployments, func(ns, n string, s int64) Object { return NewDeployment(ns, n, s) }, 6 << 10, 11 << 10},
		{"widget", reg.widgets, func(ns, n string, s int64) Object { return NewWidget(ns, n, s) }, 600, 2 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a, b := tc.build("ns", "x", 7), tc.build("ns", "x", 7); !apiequality.Semantic.DeepEqual(a, b) {
				t.Error("same seed, different objects")
			}
			if a, b := tc.build("ns", "x", 7), tc.build("ns", "x", 8); apiequality.Semantic.DeepEqual(a, b) {
				t.Error("different seeds, same object")
			}
			lo, hi := 1<<30, 0
			for seed := range int64(200) {
				obj := tc.build("team-a", fmt.Sprintf("obj-%d", seed), seed)
				b, err := json.Marshal(obj)
				if err != nil {
					t.Fatal(err)
				}
				lo, hi = min(lo, len(b)), max(hi, len(b))
				if obj.GetName() != fmt.Sprintf("obj-%d", seed) || obj.GetNamespace() != "team-a" || len(obj.GetLabels()) == 0 {
					t.Fatalf("seed %d: %s/%s labels %v", seed, obj.GetNamespace(), obj.GetName(), obj.GetLabels())
				}
				if err := tc.res.codec.normalize(obj); err != nil {
					t.Fatal(err)
				}
				for _, ct := range []contentType{ctJSON, ctProtobuf} {
					if tc.res.custom && ct == ctProtobuf {
						continue
					}
					enc, err := tc.res.codec.encode(nil, obj, ct)
					if err != nil {
						t.Fatal(err)
					}
					back, err := tc.res.codec.decode(enc, ct)
					if err != nil || !apiequality.Semantic.DeepEqual(back, obj) {
						t.Fatalf("seed %d: %s round trip: %v", seed, ct.mediaType(), err)
					}
				}
			}
			if lo < tc.lo || hi > tc.hi {
				t.Errorf("JSON sizes %d..%d, want within %d..%d", lo, hi, tc.lo, tc.hi)
			}
			t.Logf("JSON %d..%d bytes", lo, hi)
		})
	}
	d := NewDeployment("ns", "web", 3)
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) || d.Spec.Template.Labels["pod-template-hash"] != "" {
		t.Errorf("deployment selector %v does not select its template %v (%v)", d.Spec.Selector, d.Spec.Template.Labels, err)
	}
}
