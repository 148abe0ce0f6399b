package informers_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardinformer/shardinformer/informers"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// accessor is one generated typed accessor, f.Core().V1().Pods().
type accessor struct {
	path    string       // "Core.V1.Pods"
	objType reflect.Type // *corev1.Pod, the element type its Lister lists
	value   reflect.Value
}

func (a accessor) informer() cache.SharedIndexInformer {
	return a.value.MethodByName("Informer").Call(nil)[0].Interface().(cache.SharedIndexInformer)
}

// accessors walks every group, version and type accessor of f by reflection,
// so a type client-go adds is covered without editing the test.
func accessors(t *testing.T, f informers.SharedInformerFactory) []accessor {
	t.Helper()
	returnsInterface := func(m reflect.Method) bool {
		return m.Type.NumIn() == 0 && m.Type.NumOut() == 1 && m.Type.Out(0).Kind() == reflect.Interface
	}
	var out []accessor
	fv := reflect.ValueOf(&f).Elem()
	ft := reflect.TypeFor[informers.SharedInformerFactory]()
	for i := range ft.NumMethod() {
		gm := ft.Method(i)
		if !returnsInterface(gm) {
			continue
		}
		group := fv.MethodByName(gm.Name).Call(nil)[0]
		for j := range group.Type().NumMethod() {
			vm := group.Type().Method(j)
			if !returnsInterface(vm) {
				continue
			}
			version := group.Method(j).Call(nil)[0]
			for k := range version.Type().NumMethod() {
				am := version.Type().Method(k)
				if !returnsInterface(am) {
					continue
				}
				lister, ok := am.Type.Out(0).MethodByName("Lister")
				if !ok {
					continue
				}
				list, ok := lister.Type.Out(0).MethodByName("List")
				if !ok {
					t.Fatalf("%s.%s.%s: lister without List", gm.Name, vm.Name, am.Name)
				}
				out = append(out, accessor{
					path:    gm.Name + "." + vm.Name + "." + am.Name,
					objType: list.Type.Out(0).Elem(),
					value:   version.Method(k).Call(nil)[0],
				})
			}
		}
	}
	if len(out) < 100 {
		t.Fatalf("found %d typed accessors; the walk is broken", len(out))
	}
	return out
}

// Every typed accessor of every generated group returns our informer, shared
// by its lister, InformerFor and ForResource; the generated table's resource
// for the type is the one client-go's ForResource maps to it, and the
// informer has the indexers of client-go's.
func TestEveryTypedAccessor(t *testing.T) {
	client := fake.NewClientset()
	f := informers.NewSharedInformerFactory(client, 0)
	cg := clientgoinformers.NewSharedInformerFactory(client, 0)
	mustNotBuild := func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		t.Fatal("InformerFor built an informer for a type the factory has")
		return nil
	}
	for _, a := range accessors(t, f) {
		inf := a.informer()
		ours, ok := pipeline.Unwrap(inf)
		if !ok {
			t.Errorf("%s: informer %T is not ours", a.path, inf)
			continue
		}
		gvr, _, newObject, ok := informers.Builtin(a.objType)
		if !ok {
			t.Errorf("%s: %v not in the generated table", a.path, a.objType)
			continue
		}
		gi, err := f.ForResource(gvr)
		if err != nil {
			t.Errorf("%s: ForResource(%v): %v", a.path, gvr, err)
			continue
		}
		for what, other := range map[string]cache.SharedInformer{
			"Informer() again": a.informer(),
			"InformerFor":      f.InformerFor(newObject(), mustNotBuild),
			"ForResource":      gi.Informer(),
		} {
			if o, _ := pipeline.Unwrap(other); o != ours {
				t.Errorf("%s: %s is another informer", a.path, what)
			}
		}
		if got := a.value.MethodByName("Lister").Call(nil)[0]; got.IsNil() {
			t.Errorf("%s: nil lister", a.path)
		}

		cgi, err := cg.ForResource(gvr)
		if err != nil {
			t.Errorf("%s: client-go's ForResource does not know %v: %v", a.path, gvr, err)
			continue
		}
		if cg.InformerFor(newObject(), func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
			t.Errorf("%s: client-go's ForResource(%v) is not the informer for %v", a.path, gvr, a.objType)
			return cache.NewSharedIndexInformer(&cache.ListWatch{}, newObject(), 0, nil)
		}) == nil {
			t.Fatal("nil informer")
		}
		if got, want := slices.Sorted(maps.Keys(inf.GetIndexer().GetIndexers())), slices.Sorted(maps.Keys(cgi.Informer().GetIndexer().GetIndexers())); !slices.Equal(got, want) {
			t.Errorf("%s: indexers %v, client-go's %v", a.path, got, want)
		}
	}
}

// Every type lists and watches through the same typed client, namespace and
// options as client-go's generated informer: with one fake clientset per
// factory, the recorded list and watch actions of the two factories are the
// same, for namespaced and cluster-scoped types.
func TestEveryTypeListsAndWatchesLikeClientGo(t *testing.T) {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector = "team=search" }
	actions := map[string][]string{}
	for _, im := range impls {
		client := fake.NewClientset()
		f := im.build(client, spec{namespace: "ns1", tweak: tweak})
		all := accessors(t, f)
		for _, a := range all {
			checkImpl(t, im, a.informer())
		}
		start(t, f)
		// Synced means listed: the watches follow.
		testkit.Eventually(t, "a list and a watch per informer", func() bool { return len(listsAndWatches(client)) >= 2*len(all) })
		actions[im.name] = listsAndWatches(client)
	}
	cg, ours := actions["client-go"], actions["shardinformer"]
	if !slices.Equal(cg, ours) {
		t.Errorf("actions differ:\nclient-go only: %v\nshardinformer only: %v", minus(cg, ours), minus(ours, cg))
	}
	for _, a := range ours {
		if !strings.Contains(a, `labels="team=search"`) {
			t.Errorf("%s: without the tweak's selector", a)
		}
	}
}

// listsAndWatches returns the client's list and watch actions, sorted, as
// "verb resource namespace labels".
func listsAndWatches(client *fake.Clientset) []string {
	var out []string
	for _, act := range client.Actions() {
		var sel string
		switch a := act.(type) {
		case clienttesting.ListAction:
			sel = a.GetListRestrictions().Labels.String()
		case clienttesting.WatchAction:
			sel = a.GetWatchRestrictions().Labels.String()
		default:
			continue
		}
		out = append(out, fmt.Sprintf("%s %s ns=%q labels=%q", act.GetVerb(), act.GetResource(), act.GetNamespace(), sel))
	}
	slices.Sort(out)
	return out
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
