package informers_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/internal/testkit/ours"
	"github.com/shardinformer/shardinformer/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// listerWatcher is what the informer behind inf lists and watches through

// Every typed accessor's informer lists and watches through the wire with
// the diet, in the factory's namespace for namespaced types, on a real
// clientset (no request is sent).
func TestWireForEveryType(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://127.0.0.1:1"})
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("ns1"))
	for _, a := range accessors(t, f) {
		gvr, namespaced, _, _ := informers.Builtin(a.objType)
		want := "wire " + gvr.Resource + "." + gvr.Version
		if gvr.Group != "" {
			want += "." + gvr.Group
		}
		if namespaced {
			want += " in ns1"
		}
		want += ": protobuf, "
		got := ours.ListerWatcher(t, a.informer())
		if !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ", diet (managedFields dropped, interned, compacted, shared)") {
			t.Errorf("%s: lists and watches through %q, want %q… with the diet", a.path, got, want)
		}
	}
}

// A clientset without REST clients (client-go's fake) falls back to its
// typed clients, and says so: in Stats and, once per factory, in a V(2) log
// line. The informers work as client-go's on it.
func TestFallbackToTypedClients(t *testing.T) {
	logs := testkit.CaptureKlog(t, 2)
	client := fake.NewClientset(pod("ns1", "a", nil), pod("ns1", "b", nil))
	f := informers.NewSharedInformerFactory(client, 0)
	pods, nodes := f.Core().V1().Pods(), f.Core().V1().Nodes()
	for _, inf := range []cache.SharedInformer{pods.Informer(), nodes.Informer()} {
		if got, want := ours.ListerWatcher(t, inf), "client-go list/watch (*fake.Clientset has no REST client for v1)"; got != want {
			t.Errorf("Stats().ListerWatcher = %q, want %q", got, want)
		}
	}
	start(t, f)
	if got := pods.Informer().GetStore().ListKeys(); len(got) != 2 {
		t.Errorf("cached %v, want the fake's two pods", got)
	}
	const line = "listing and watching through the clientset's typed clients, without the wire decoder"
	if n := strings.Count(logs(), line); n != 1 {
		t.Errorf("the fallback was logged %d times, want once:\n%s", n, logs())
	}
}

// The diet is on by default (the cached pods have no managedFields); wire
// options tune it, WithoutWire turns the wire off; invalid wire options fail
// New. Every variant caches what the server has otherwise.
func TestWireOptions(t *testing.T) {
	p := pod("ns1", "a", map[string]string{"tier": "web"})
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}}
	s := newServer(t, p)
	for _, c := range []struct {
		name          string
		opts          []informers.SharedInformerOption
		lw            string // prefix of Stats().ListerWatcher
		managedFields bool
	}{
		{"default", nil, "wire pods.v1: protobuf, 2 workers, diet (managedFields dropped, interned, compacted, shared)", false},
		{"json without diet", []informers.SharedInformerOption{informers.WithWireOptions(wire.WithWorkers(2), wire.WithContentType(wire.JSON), wire.WithoutDiet())}, "wire pods.v1: json, 2 workers", true},
		{"interning only", []informers.SharedInformerOption{informers.WithWireOptions(wire.WithoutDiet(), wire.WithInterning())}, "wire pods.v1: protobuf, 2 workers, diet (interned)", true},
		{"without wire", []informers.SharedInformerOption{informers.WithoutWire()}, "client-go list/watch (WithoutWire)", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := informers.NewSharedInformerFactoryWithOptions(s.client, 0, append([]informers.SharedInformerOption{informers.WithWireOptions(wire.WithWorkers(2))}, c.opts...)...)
			pods := f.Core().V1().Pods()
			if got := ours.ListerWatcher(t, pods.Informer()); !strings.HasPrefix(got, c.lw) {
				t.Errorf("Stats().ListerWatcher = %q, want %q…", got, c.lw)
			}
			start(t, f)
			got, err := pods.Lister().Pods("ns1").Get("a")
			if err != nil {
				t.Fatal(err)
			}
			if (len(got.ManagedFields) > 0) != c.managedFields || got.Labels["tier"] != "web" {
				t.Errorf("cached pod: managedFields %v, labels %v; want managedFields: %v", got.ManagedFields, got.Labels, c.managedFields)
			}
		})
	}
	if _, err := informers.New(s.client, 0, informers.WithWireOptions(wire.WithWorkers(-1))); err == nil {
		t.Error("New accepted wire options with -1 workers")
	}
}

// client-go 1.37's type-safe informers — TypedInformer, typed handlers and
// indexers — work through our factory as through client-go's, on our
// informer.
func TestTypedInformer(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			s := newServer(t, pod("ns1", "a", nil), pod("ns1", "b", nil), pod("ns2", "c", nil))
			f := im.build(s.client, spec{})
			var typed corev1informers.PodIndexInformer = f.Core().V1().Pods().TypedInformer()
			checkImpl(t, im, typed)
			var mu sync.Mutex
			added := map[string]bool{}
			if _, err := typed.AddTypedEventHandler(cache.TypedResourceEventHandlerFuncs[*corev1.Pod]{
				AddFunc: func(p *corev1.Pod) { mu.Lock(); added[p.Name] = true; mu.Unlock() },
			}); err != nil {
				t.Fatal(err)
			}
			if err := typed.AddTypedIndexers(cache.TypedIndexers[*corev1.Pod]{"byName": func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }}); err != nil {
				t.Fatal(err)
			}
			start(t, f)
			testkit.Eventually(t, "three typed adds", func() bool { mu.Lock(); defer mu.Unlock(); return len(added) == 3 })
			inNS1, err := typed.GetTypedIndexer().ByTypedIndex(cache.NamespaceIndex, "ns1")
			if err != nil || len(inNS1) != 2 {
				t.Errorf("ByTypedIndex(namespace, ns1) = %v, %v; want a and b", inNS1, err)
			}
			byName, err := typed.GetTypedIndexer().ByTypedIndex("byName", "c")
			if err != nil || len(byName) != 1 || byName[0].Namespace != "ns2" {
				t.Errorf("ByTypedIndex(byName, c) = %v, %v", byName, err)
			}
		})
	}
}

// With KUBE_CACHE_MUTATION_DETECTOR=true, a handler or a lister reader that
// modifies a part the diet shares between cached pods makes the process
// panic — client-go's detector, or the wire's check of the parts it hands
// the next pod of the template — while a reader-only child runs on. Each
// case runs in a child process (the variable is read once per process).
func TestMutationDetectorCoversSharedParts(t *testing.T) {
	if role := testkit.ChildRole(); role != "" {
		sharedMutationChild(t, role)
		return
	}
	for _, role := range []string{"handler", "lister", "none"} {
		t.Run(role, func(t *testing.T) {
			out, ok := testkit.RunChild(t, role, "KUBE_CACHE_MUTATION_DETECTOR=true")
			if mutated := role != "none"; ok == mutated {
				t.Fatalf("child %s exited ok=%v; output:\n%s", role, ok, out)
			}
			if role != "none" && !strings.Contains(out, "modified") {
				t.Errorf("child %s: no mutation reported:\n%s", role, out)
			}
		})
	}
}

func sharedMutationChild(t *testing.T, role string) {
	template := apisim.NewPod("ns1", "p0", 7, apisim.PodOptions{ManagedFields: true})
	var pods []*corev1.Pod
	for i := range 4 {
		p := template.DeepCopy()
		p.Name = fmt.Sprintf("p%d", i)
		pods = append(pods, p)
	}
	s := newServer(t, pods...)
	// One decoder, so that which pods share a part is deterministic (each
	// decoder has its own cache of parts).
	f := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithWireOptions(wire.WithWorkers(1)))
	podInformer := f.Core().V1().Pods()
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p := obj.(*corev1.Pod); role == "handler" && p.Name == "p3" {
			p.Spec.Containers[0].Env[0].Value = "modified by a handler"
		}
	}}); err != nil {
		t.Fatal(err)
	}
	start(t, f)
	p2, err := podInformer.Lister().Pods("ns1").Get("p2")
	if err != nil {
		t.Fatal(err)
	}
	if p3, _ := podInformer.Lister().Pods("ns1").Get("p3"); &p2.Spec.Containers[0].Env[0] != &p3.Spec.Containers[0].Env[0] {
		t.Fatal("p2 and p3 do not share their env") // the test would not test sharing
	}
	if role == "lister" {
		p2.Spec.Tolerations[0].Key = "modified by a reader"
	}
	for i := 4; i < 8; i++ {
		p := template.DeepCopy()
		p.Name = fmt.Sprintf("p%d", i)
		if _, err := s.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "8 pods cached", func() bool { return len(podInformer.Informer().GetStore().ListKeys()) == 8 })
	time.Sleep(3500 * time.Millisecond) // client-go's detector compares every second
}
