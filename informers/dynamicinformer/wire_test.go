package dynamicinformer_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/informers/dynamicinformer"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/internal/testkit/ours"
	"github.com/shardinformer/shardinformer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
)

// managedWidget is a widget with managedFields, as the API server stores
// objects written by field managers.
func managedWidget(ns, name string, seed int64) *unstructured.Unstructured {
	w := widget(ns, name, "web", seed)
	w.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "widget-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "example.shardinformer.io/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:size":{}}}`)}}})
	return w
}

// A client without a REST client (client-go's fake dynamic client) falls
// back to its own list and watch, and says so: in Stats for each informer,
// and once per factory in a V(2) log line. The informers work on it, with
// and without WatchList (the fake opts out of it).
func TestFallbackToClient(t *testing.T) {
	testkit.ListModes(t, func(t *testing.T, _ bool) {
		logs := testkit.CaptureKlog(t, 2)
		gadgets := schema.GroupVersionResource{Group: widgets.Group, Version: widgets.Version, Resource: "gadgets"}
		client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{widgets: "WidgetList", gadgets: "GadgetList"},
			widget("a", "w1", "web", 1), widget("b", "w2", "db", 2))
		f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
		wInf, gInf := f.ForResource(widgets), f.ForResource(gadgets)
		for _, gi := range []cache.SharedIndexInformer{wInf.Informer(), gInf.Informer()} {
			if got, want := ours.ListerWatcher(t, gi), "client-go list/watch (*fake.FakeDynamicClient has no REST client)"; got != want {
				t.Errorf("Stats().ListerWatcher = %q, want %q", got, want)
			}
		}
		testkit.StartFactory(t, f)
		if objs, _ := wInf.Lister().List(labels.Everything()); len(objs) != 2 {
			t.Errorf("cached %d widgets, want the fake's 2", len(objs))
		}
		if _, err := client.Resource(widgets).Namespace("a").Create(t.Context(), widget("a", "w3", "web", 3), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "the created widget cached", func() bool {
			_, err := wInf.Lister().ByNamespace("a").Get("w3")
			return err == nil
		})
		const line = "shardinformer dynamic factory: listing and watching through the client, without the wire decoder"
		if n := strings.Count(logs(), line); n != 1 {
			t.Errorf("the fallback was logged %d times, want once:\n%s", n, logs())
		}
	})
}

// New (on a dynamic client) and NewForConfig are on the wire with the diet
// by default (the cached widgets have no managedFields); WithWireOptions
// tunes the wire (wire.WithoutDiet turns the diet off); WithoutWire uses
// the client's own list/watch. Each caches what the server has otherwise.
func TestWireOptions(t *testing.T) {
	s, cfg, _ := newServer(t)
	for i := range 4 {
		if _, err := s.Widgets().Create(managedWidget("a", fmt.Sprint("managed-", i), int64(20+i))); err != nil {
			t.Fatal(err)
		}
	}
	newFactory := func(config bool, opts ...dynamicinformer.Option) dynamicinformer.SharedInformerFactory {
		opts = append([]dynamicinformer.Option{dynamicinformer.WithNamespace("a"), dynamicinformer.WithWireOptions(wire.WithWorkers(2))}, opts...)
		var f dynamicinformer.SharedInformerFactory
		var err error
		if config {
			f, err = dynamicinformer.NewForConfig(cfg, 0, opts...)
		} else {
			f, err = dynamicinformer.New(dynamicClient(t, cfg), 0, opts...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	const prefix = "wire widgets.v1.example.shardinformer.io in a: "
	for _, tc := range []struct {
		name          string
		config        bool
		opts          []dynamicinformer.Option
		lw            string
		managedFields bool
	}{
		{"New", false, nil, prefix + "json, 2 workers, diet (managedFields dropped, interned, compacted, shared)", false},
		{"NewForConfig", true, nil, prefix + "json, 2 workers, diet (managedFields dropped, interned, compacted, shared)", false},
		{"New without diet", false, []dynamicinformer.Option{dynamicinformer.WithWireOptions(wire.WithoutDiet())}, prefix + "json, 2 workers", true},
		{"NewForConfig interning only", true, []dynamicinformer.Option{dynamicinformer.WithWireOptions(wire.WithoutDiet(), wire.WithInterning())}, prefix + "json, 2 workers, diet (interned)", true},
		{"New without wire", false, []dynamicinformer.Option{dynamicinformer.WithoutWire()}, "client-go list/watch (WithoutWire)", true},
		{"NewForConfig without wire", true, []dynamicinformer.Option{dynamicinformer.WithoutWire()}, "client-go list/watch (WithoutWire)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFactory(tc.config, tc.opts...)
			gi := f.ForResource(widgets)
			if got := ours.ListerWatcher(t, gi.Informer()); !strings.HasPrefix(got, tc.lw) {
				t.Errorf("Stats().ListerWatcher = %q, want %q…", got, tc.lw)
			}
			testkit.StartFactory(t, f)
			want := map[string]*unstructured.Unstructured{}
			for _, w := range s.Widgets().List("a") {
				if !tc.managedFields {
					w.SetManagedFields(nil)
				}
				want[w.GetNamespace()+"/"+w.GetName()] = w
			}
			if ok, why := cacheMatches(gi.Lister(), want); !ok {
				t.Error(why)
			}
			if m, err := gi.Lister().ByNamespace("a").Get("managed-1"); err != nil {
				t.Error(err)
			} else if got := len(m.(*unstructured.Unstructured).GetManagedFields()) > 0; got != tc.managedFields {
				t.Errorf("managed-1 cached with managedFields: %v, want %v", got, tc.managedFields)
			}
		})
	}
}

// With KUBE_CACHE_MUTATION_DETECTOR=true, a handler or a lister reader
// that modifies an unstructured object cached by our dynamic factory (on
// the wire, with the default diet) makes the process panic, naming the
// informer; a child that only reads runs on. Each case runs in a child
// process (client-go reads the variable once per process).
func TestMutationDetector(t *testing.T) {
	if role := testkit.ChildRole(); role != "" {
		mutationChild(t, role)
		return
	}
	for _, role := range []string{"handler", "lister", "none"} {
		t.Run(role, func(t *testing.T) {
			out, ok := testkit.RunChild(t, role, "KUBE_CACHE_MUTATION_DETECTOR=true")
			if mutated := role != "none"; ok == mutated {
				t.Fatalf("child %s exited ok=%v; output:\n%s", role, ok, out)
			}
			if role != "none" && (!strings.Contains(out, "cache dynamic widgets.example.shardinformer.io modified") || !strings.Contains(out, "web-1")) {
				t.Errorf("child %s: the panic does not name the informer and the object:\n%s", role, out)
			}
			if role == "none" && !strings.Contains(out, "child on the wire") {
				t.Errorf("child none did not run on the wire:\n%s", out)
			}
		})
	}
}

// mutationChild runs our dynamic factory's widget informer, whose handler
// (role "handler") or a lister reader ("lister") modifies a cached widget
// in place, or that is only read ("none"), for three detector periods.
func mutationChild(t *testing.T, role string) {
	_, cfg, _ := newServer(t)
	f := dynamicinformer.NewDynamicSharedInformerFactory(dynamicClient(t, cfg), 0)
	gi := f.ForResource(widgets)
	if lw := ours.ListerWatcher(t, gi.Informer()); !strings.HasPrefix(lw, "wire ") || !strings.Contains(lw, "diet (") {
		t.Fatalf("not on the wire with the diet: %s", lw)
	}
	t.Log("child on the wire")
	if _, err := gi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if u := obj.(*unstructured.Unstructured); role == "handler" && u.GetName() == "web-1" {
			_ = unstructured.SetNestedField(u.Object, "changed by a handler", "spec", "color")
		}
	}}); err != nil {
		t.Fatal(err)
	}
	testkit.StartFactory(t, f)
	objs, err := gi.Lister().ByNamespace("a").List(labels.Everything())
	if err != nil || len(objs) == 0 {
		t.Fatalf("lister: %d objects, %v", len(objs), err)
	}
	for _, o := range objs {
		if u := o.(*unstructured.Unstructured); role == "lister" && u.GetName() == "web-1" {
			u.SetLabels(map[string]string{"changed": "by a reader"})
		}
		_ = o.(*unstructured.Unstructured).GetLabels() // "none" only reads
	}
	time.Sleep(3500 * time.Millisecond) // client-go's detector compares every second
}
