package metadatainformer_test

import (
	"strings"
	"testing"

	"github.com/shardinformer/shardinformer/informers/metadatainformer"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/internal/testkit/ours"
	"github.com/shardinformer/shardinformer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
)

func partial(apiVersion, kind, ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"tier": "web"}}}
}

// A client without a REST client (client-go's fake metadata client) falls
// back to its own list and watch, and says so: in Stats for each informer,
// and once per factory in a V(2) log line. The informers work on it, with
// and without WatchList (the fake opts out of it).
func TestFallbackToClient(t *testing.T) {
	testkit.ListModes(t, func(t *testing.T, _ bool) {
		logs := testkit.CaptureKlog(t, 2)
		scheme := fake.NewTestScheme()
		if err := metav1.AddMetaToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		client := fake.NewSimpleMetadataClient(scheme, partial("v1", "Pod", "a", "p1"), partial("v1", "Pod", "b", "p2"),
			partial("v1", "ConfigMap", "a", "cm1"))
		f := metadatainformer.NewSharedInformerFactory(client, 0)
		podInf, cmInf := f.ForResource(pods), f.ForResource(configMaps)
		for _, gi := range []cache.SharedIndexInformer{podInf.Informer(), cmInf.Informer()} {
			if got, want := ours.ListerWatcher(t, gi), "client-go list/watch (*fake.FakeMetadataClient has no REST client)"; got != want {
				t.Errorf("Stats().ListerWatcher = %q, want %q", got, want)
			}
		}
		testkit.StartFactory(t, f)
		if objs, _ := podInf.Lister().List(labels.Everything()); len(objs) != 2 {
			t.Errorf("cached %d pods, want the fake's 2", len(objs))
		}
		if _, err := client.Resource(pods).Namespace("a").(fake.MetadataClient).CreateFake(partial("v1", "Pod", "a", "p3"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testkit.Eventually(t, "the created pod cached", func() bool {
			_, err := podInf.Lister().ByNamespace("a").Get("p3")
			return err == nil
		})
		if objs, _ := cmInf.Lister().List(labels.Everything()); len(objs) != 1 {
			t.Errorf("cached %d config maps, want the fake's 1", len(objs))
		}
		const line = "shardinformer metadata factory: listing and watching through the client, without the wire decoder"
		if n := strings.Count(logs(), line); n != 1 {
			t.Errorf("the fallback was logged %d times, want once:\n%s", n, logs())
		}
	})
}

// With a real client the informers are on the wire with the diet (the
// cached metadata has no managedFields); WithWireOptions tunes the wire
// (wire.WithoutDiet turns the diet off, a step after it on again);
// WithoutWire uses the client's own list/watch. Each caches what the
// server has.
func TestWireOptions(t *testing.T) {
	s, c, _ := newServer(t)
	for _, tc := range []struct {
		name          string
		opts          []metadatainformer.SharedInformerOption
		lw            string
		managedFields bool
	}{
		{"default", nil, "wire pods.v1 in a: metadata only, protobuf, 2 workers, diet (managedFields dropped, interned, compacted, shared)", false},
		{"without diet", []metadatainformer.SharedInformerOption{metadatainformer.WithWireOptions(wire.WithoutDiet())}, "wire pods.v1 in a: metadata only, protobuf, 2 workers", true},
		{"interning only", []metadatainformer.SharedInformerOption{metadatainformer.WithWireOptions(wire.WithoutDiet(), wire.WithInterning())},
			"wire pods.v1 in a: metadata only, protobuf, 2 workers, diet (interned)", true},
		{"json", []metadatainformer.SharedInformerOption{metadatainformer.WithWireOptions(wire.WithContentType(wire.JSON))},
			"wire pods.v1 in a: metadata only, json, 2 workers, diet (managedFields dropped", false},
		{"without wire", []metadatainformer.SharedInformerOption{metadatainformer.WithoutWire()}, "client-go list/watch (WithoutWire)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]metadatainformer.SharedInformerOption{metadatainformer.WithNamespace("a"), metadatainformer.WithWireOptions(wire.WithWorkers(2))}, tc.opts...)
			f, err := metadatainformer.New(c, 0, opts...)
			if err != nil {
				t.Fatal(err)
			}
			gi := f.ForResource(pods)
			if got := ours.ListerWatcher(t, gi.Informer()); !strings.HasPrefix(got, tc.lw) {
				t.Errorf("Stats().ListerWatcher = %q, want %q…", got, tc.lw)
			}
			testkit.StartFactory(t, f)
			if ok, why := cacheMatches(gi.Lister(), s.List("a"), !tc.managedFields); !ok {
				t.Error(why)
			}
		})
	}
}

// Invalid wire options (also with WithoutWire or a fake client, where
// they would be unused) and CBOR fail New and make the client-go-shaped
// constructor panic.
func TestBadWireOptions(t *testing.T) {
	_, c, _ := newServer(t)
	fakeClient := fake.NewSimpleMetadataClient(fake.NewTestScheme())
	for _, opts := range [][]metadatainformer.SharedInformerOption{
		{metadatainformer.WithWireOptions(wire.WithWorkers(-1))},
		{metadatainformer.WithWireOptions(wire.WithContentType(wire.CBOR))},
		{metadatainformer.WithoutWire(), metadatainformer.WithWireOptions(wire.WithMaxFrameSize(-1))},
	} {
		if f, err := metadatainformer.New(c, 0, opts...); err == nil || f != nil {
			t.Errorf("New = %v, %v; want nil and an error", f, err)
		}
		if _, err := metadatainformer.New(fakeClient, 0, opts...); err == nil {
			t.Error("New with a fake client accepted invalid wire options")
		}
		func() {
			defer func() {
				if err, _ := recover().(error); err == nil || !strings.Contains(err.Error(), "WithWireOptions") {
					t.Errorf("NewSharedInformerFactoryWithOptions panicked with %v", err)
				}
			}()
			metadatainformer.NewSharedInformerFactoryWithOptions(c, 0, opts...)
		}()
	}
}
