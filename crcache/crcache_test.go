package crcache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	goruntime "runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/internal/testkit"
	"github.com/shardinformer/shardinformer/pipeline"
	"github.com/shardinformer/shardinformer/wire"
)

// dietStats is how the wire's String describes the default workers and diet.
var dietStats = fmt.Sprintf("%d workers, diet (managedFields dropped, interned, compacted, shared)", goruntime.GOMAXPROCS(0))

func wireWithoutDietAndOneWorker() []wire.Option {
	return []wire.Option{wire.WithoutDiet(), wire.WithWorkers(1)}
}

// markTransformed is a transform that labels every object (in place: only
// its metadata, as wire's sharing allows).
func markTransformed(in any) (any, error) {
	if o, err := meta.Accessor(in); err == nil {
		setLabel(o, "transformed", "yes")
	}
	return in, nil
}

func widgetObject() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	return u
}

// The same cache.Options give the same cache through crcache.New as through
// controller-runtime's cache.New, on one server: the same objects (typed
// pods, unstructured widgets and pods, metadata-only pods and widgets) from
// List and from Get (also for keys outside the cache's namespaces or
// selectors), the same list and watch requests (paths, namespaces,
// selectors, bookmarks), and the same objects again after creates, updates
// and deletes, equal to the server's. Every one of crcache's informers
// lists and watches through the wire, and its Stats say with which
// namespace and selectors. All of it with the reflector listing and then
// watching, and with WatchList.
func TestSameAsControllerRuntime(t *testing.T) {
	testkit.CheckLeaks(t, "shardinformer/pipeline.", "shardinformer/wire.")
	for _, sc := range []struct {
		name string
		opts func() cache.Options
		ours []Option
		// json: the config asks for JSON (else ContentType is unset, and
		// controller-runtime asks for protobuf for built-in types).
		json, prefix bool
		// (unstructured objects: JSON, as the dynamic client asks; metadata:
		// protobuf, as the metadata client asks whatever the config.)
		// wantStats must each be a prefix of one informer's kind (typed,
		// unstructured, metadata) and Stats().ListerWatcher; every
		// informer's must start with "wire ".
		wantStats []string
		// inNamespaceC: pods of ns-c are in the cache.
		inNamespaceC bool
		// kinds are compared besides allKinds.
		kinds []kind
	}{{
		name:         "all namespaces",
		opts:         func() cache.Options { return cache.Options{} },
		wantStats:    []string{"typed wire pods.v1: protobuf", "unstructured wire widgets.v1.example.shardinformer.io: json", "unstructured wire pods.v1: json", "metadata wire pods.v1: metadata only, protobuf"},
		inNamespaceC: true,
	}, {
		name: "DefaultNamespaces",
		opts: func() cache.Options {
			return cache.Options{DefaultNamespaces: map[string]cache.Config{"ns-a": {}, "ns-b": {}}}
		},
		wantStats: []string{"typed wire pods.v1 in ns-a: protobuf", "typed wire pods.v1 in ns-b: protobuf", "unstructured wire widgets.v1.example.shardinformer.io in ns-b: json", "metadata wire widgets.v1.example.shardinformer.io in ns-a: metadata only, protobuf"},
	}, {
		name: "ByObject label and field selectors",
		opts: func() cache.Options {
			return cache.Options{ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}: {
					Label: labels.SelectorFromSet(labels.Set{"group": "g1"}),
					Field: fields.OneTermNotEqualSelector("metadata.name", "pod-5"),
				},
				widgetObject(): {Namespaces: map[string]cache.Config{
					"ns-a":              {LabelSelector: labels.SelectorFromSet(labels.Set{"group": "g0"})},
					cache.AllNamespaces: {},
				}},
			}}
		},
		wantStats: []string{
			"typed wire pods.v1: protobuf, " + dietStats + `; label selector "group=g1"; field selector "metadata.name!=pod-5"`,
			"unstructured wire widgets.v1.example.shardinformer.io in ns-a: json, " + dietStats + `; label selector "group=g0"`,
			"unstructured wire widgets.v1.example.shardinformer.io: json, " + dietStats + `; field selector "metadata.namespace!=ns-a"`,
		},
		inNamespaceC: true,
	}, {
		name: "DefaultLabelSelector DefaultFieldSelector",
		opts: func() cache.Options {
			return cache.Options{
				DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"group": "g0"}),
				DefaultFieldSelector: fields.OneTermEqualSelector("metadata.namespace", "ns-c"),
			}
		},
		// controller-runtime turns a metadata.namespace field selector into
		// the request's namespace.
		wantStats:    []string{"typed wire pods.v1 in ns-c: protobuf, " + dietStats + `; label selector "group=g0"; field selector "metadata.namespace=ns-c"`},
		inNamespaceC: true,
	}, {
		name: "DefaultTransform and ByObject TransformStripManagedFields",
		opts: func() cache.Options {
			return cache.Options{
				DefaultTransform: markTransformed,
				ByObject:         map[client.Object]cache.ByObject{widgetObject(): {Transform: cache.TransformStripManagedFields()}},
			}
		},
		wantStats:    []string{"typed wire pods.v1: protobuf"},
		inNamespaceC: true,
	}, {
		name: "no bookmarks, JSON, below a path prefix",
		opts: func() cache.Options {
			return cache.Options{DefaultEnableWatchBookmarks: ptr.To(false), DefaultNamespaces: map[string]cache.Config{"ns-c": {}}}
		},
		json: true, prefix: true,
		wantStats:    []string{"typed wire pods.v1 in ns-c: json, " + dietStats + "; no bookmarks", "metadata wire pods.v1 in ns-c: metadata only, protobuf"},
		inNamespaceC: true,
	}, {
		name:         "a typed custom resource in cache.Options.Scheme",
		opts:         func() cache.Options { return cache.Options{Scheme: widgetScheme()} },
		kinds:        []kind{typedWidgets()},
		wantStats:    []string{"typed wire widgets.v1.example.shardinformer.io: json, " + dietStats},
		inNamespaceC: true,
	}, {
		name:         "WithWireOptions WithoutDiet",
		opts:         func() cache.Options { return cache.Options{} },
		ours:         []Option{WithWireOptions(wireWithoutDietAndOneWorker()...)},
		wantStats:    []string{"typed wire pods.v1: protobuf, 1 workers", "metadata wire widgets.v1.example.shardinformer.io: metadata only, protobuf, 1 workers"},
		inNamespaceC: true,
	}} {
		t.Run(sc.name, func(t *testing.T) {
			testkit.ListModes(t, func(t *testing.T, _ bool) {
				s := fixture(t, apisim.PodOptions{})
				config := func() *rest.Config {
					cfg := s.RESTConfig()
					if sc.prefix {
						cfg = prefixed(t, s)
					}
					if !sc.json {
						cfg.ContentType = ""
					}
					return cfg
				}
				crConfig, oursConfig := config(), config()
				crRequests, oursRequests := testkit.RecordRequests(crConfig), testkit.RecordRequests(oursConfig)
				var b built
				newOurs, err := NewFunc(append(sc.ours, withBuilt(&b))...)
				if err != nil {
					t.Fatal(err)
				}
				cr := startCache(t, cache.New, crConfig, sc.opts())
				ours := startCache(t, newOurs, oursConfig, sc.opts())

				compare := func(when string) {
					t.Helper()
					for _, k := range append(allKinds(), sc.kinds...) {
						a, o := list(t, cr, k), list(t, ours, k)
						if len(a) == 0 {
							t.Errorf("%s: controller-runtime's List %s is empty: nothing compared", when, k.name)
						}
						if d := sameObjects(a, o); d != "" {
							t.Errorf("%s: List %s differs:\n%s", when, k.name, d)
						}
						if k.name == "pods" {
							if ok := slices.ContainsFunc(union(a, nil), func(key string) bool { return strings.HasPrefix(key, "ns-c/") }); ok != sc.inNamespaceC {
								t.Errorf("%s: List %s has pods of ns-c: %v, want %v", when, k.name, ok, sc.inNamespaceC)
							}
						}
						// The informers' own objects, as handlers get them (the
						// readers set the GroupVersionKind on copies; not on
						// these). Multi-namespace caches' informers are
						// aggregates without an indexer.
						if ia, io := indexed(t, cr, k), indexed(t, ours, k); ia != nil || io != nil {
							if d := sameObjects(ia, io); d != "" {
								t.Errorf("%s: the informers' %s differ:\n%s", when, k.name, d)
							}
						}
						for _, key := range serverKeys(s) {
							ga, gb := get(cr, k, key), get(ours, k, key)
							if ga.err != gb.err {
								t.Errorf("%s: Get %s %v: controller-runtime's error %q, crcache's %q", when, k.name, key, ga.err, gb.err)
							} else if ga.err == "" {
								if d := sameObjects(map[string]runtime.Object{"": ga.obj}, map[string]runtime.Object{"": gb.obj}); d != "" {
									t.Errorf("%s: Get %s %v differs:\n%s", when, k.name, key, d)
								}
							}
						}
					}
				}
				compare("after the sync")
				if a, o := resourceRequests(crRequests), resourceRequests(oursRequests); !slices.Equal(a, o) {
					t.Errorf("requests differ:\ncontroller-runtime:\n  %s\ncrcache:\n  %s", strings.Join(a, "\n  "), strings.Join(o, "\n  "))
				} else if len(a) == 0 {
					t.Error("no requests recorded")
				}
				stats := b.stats()
				if len(stats) == 0 {
					t.Fatal("crcache built no informers")
				}
				for _, st := range stats {
					if _, lw, _ := strings.Cut(st, " "); !strings.HasPrefix(lw, "wire ") {
						t.Errorf("an informer lists and watches through %s, not the wire", st)
					}
				}
				for _, want := range sc.wantStats {
					if !slices.ContainsFunc(stats, func(st string) bool { return strings.HasPrefix(st, want) }) {
						t.Errorf("no informer's kind and Stats().ListerWatcher start with %q:\n  %s", want, strings.Join(stats, "\n  "))
					}
				}

				churn(t, s)
				for _, k := range append(allKinds(), sc.kinds...) {
					testkit.EventuallyWhy(t, k.name+" caches to converge", func() (bool, string) {
						a, o := versions(t, cr, k), versions(t, ours, k)
						if d := fmt.Sprint(a); d != fmt.Sprint(o) {
							return false, fmt.Sprintf("controller-runtime %v, crcache %v", a, o)
						}
						server := serverVersions(s, k)
						for key, rv := range a {
							if server[key] != rv {
								return false, fmt.Sprintf("%s at %s in the caches, %q on the server", key, rv, server[key])
							}
						}
						return true, ""
					})
				}
				compare("after the churn")
			})
		})
	}
}

// The informer behind the cache's GetInformer is ours, and its Stats say it
// is on the wire.
func TestGetInformerStats(t *testing.T) {
	s := fixture(t, apisim.PodOptions{})
	cfg := s.RESTConfig()
	cfg.ContentType = ""
	c := startCache(t, New, cfg, cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{"group": "g1"})},
	}})
	for obj, want := range map[client.Object]string{
		&corev1.Pod{}:                    "wire pods.v1: protobuf, " + dietStats + `; label selector "group=g1"`,
		widgetObject():                   "wire widgets.v1.example.shardinformer.io: json, " + dietStats,
		metadataKind(widgetGVK).newObj(): "wire widgets.v1.example.shardinformer.io: metadata only, protobuf, " + dietStats,
	} {
		inf, err := c.GetInformer(context.Background(), obj)
		if err != nil {
			t.Fatal(err)
		}
		ours, ok := pipeline.Unwrap(inf.(toolscache.SharedIndexInformer))
		if !ok {
			t.Fatalf("the cache's informer for %T is %T, not ours", obj, inf)
		}
		if got := ours.Stats().ListerWatcher; got != want {
			t.Errorf("%T: Stats().ListerWatcher = %q, want %q", obj, got, want)
		}
	}
}
