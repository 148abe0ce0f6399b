package informers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/shardinformer/shardinformer/informers/internal/restclient"
	"github.com/shardinformer/shardinformer/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

//go:generate go test -run TestGeneratedResources -update .

// ErrUnknownType is returned for an object type that no typed client of
// kubernetes.Interface lists and watches.
var ErrUnknownType = errors.New("informers: no typed client lists and watches this type")

// apiResource is how the factory lists and watches one built-in type through
// the user's clientset: the generated table (zz_generated.resources.go) has
// one per List+Watch client of kubernetes.Interface.
type apiResource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	objectType reflect.Type          // e.g. *corev1.Pod
	newObject  func() runtime.Object // a new, empty object of objectType
	list       func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) (runtime.Object, error)
	watch      func(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

// typedClient is the part of a generated typed client (PodInterface, …) the
// informer uses.
type typedClient[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// typed describes the type T served by the typed client that client returns
// for a namespace (ignored when cluster-scoped).
func typed[T any, PT interface {
	*T
	runtime.Object
}, L runtime.Object](group, version, res string, namespaced bool, client func(c kubernetes.Interface, namespace string) typedClient[L]) apiResource {
	return apiResource{
		gvr:        schema.GroupVersionResource{Group: group, Version: version, Resource: res},
		namespaced: namespaced,
		objectType: reflect.TypeFor[PT](),
		newObject:  func() runtime.Object { return PT(new(T)) },
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := client(c, ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		watch: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (watch.Interface, error) {
			return client(c, ns).Watch(ctx, opts)
		},
	}
}

// The generated table, indexed once.
var (
	resourceByType = map[reflect.Type]*apiResource{}
	resourceByGVR  = map[schema.GroupVersionResource]*apiResource{}
)

func init() {
	for i := range builtinResources {
		r := &builtinResources[i]
		resourceByType[r.objectType] = r
		resourceByGVR[r.gvr] = r
	}
}

// listerWatcher lists and watches r through c, in namespace if r is
// namespaced: through the wire on the REST client of r's group version with
// opts (wireOptions: the diet and tweak), or, when c has no usable REST
// client (client-go's fake clientset) or noWire, through c's typed client
// with tweak, as client-go's generated informer does. The fallback's String
// (pipeline.Stats().ListerWatcher) says why; fellBack reports it.
func (r *apiResource) listerWatcher(c kubernetes.Interface, namespace string, tweak internalinterfaces.TweakListOptionsFunc, opts []wire.Option, noWire bool) (lw cache.ListerWatcher, fellBack error) {
	typed := r.typedListerWatcher(c, namespace, tweak)
	if noWire {
		return restclient.Fallback(typed, "WithoutWire"), nil
	}
	if !r.namespaced {
		namespace = metav1.NamespaceAll
	}
	rc := restClients[r.gvr.GroupVersion()](c)
	if !restclient.Usable(rc) {
		err := fmt.Errorf("%T has no REST client for %v", c, r.gvr.GroupVersion())
		return restclient.Fallback(typed, err.Error()), err
	}
	w, err := wire.New(rc, wire.Resource{GVR: r.gvr, Namespace: namespace, Object: r.newObject()}, opts...)
	if err != nil { // options are checked by New; no built-in type fails (TestWireForEveryType)
		return restclient.Fallback(typed, err.Error()), err
	}
	return w, nil
}

// typedListerWatcher lists and watches r through c's typed client, in
// namespace if r is namespaced, with tweak applied to every request's
// options — what client-go's generated informer for the type does.
func (r *apiResource) typedListerWatcher(c kubernetes.Interface, namespace string, tweak internalinterfaces.TweakListOptionsFunc) cache.ListerWatcher {
	if !r.namespaced {
		namespace = metav1.NamespaceAll
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&opts)
			}
			return r.list(ctx, c, namespace, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&opts)
			}
			return r.watch(ctx, c, namespace, opts)
		},
	}
	// A client that cannot serve WatchList (client-go's fake clientset) says
	// so, and the reflector lists and watches instead.
	return cache.ToListWatcherWithWatchListSemantics(lw, c)
}

// NewFilteredListWatch returns a ListerWatcher for obj's type in namespace
// (ignored for cluster-scoped types; metav1.NamespaceAll for all), with
// tweak (may be nil) applied to the options of every list and watch
// request: the one the factory's informers use by default — the wire on
// client's REST client for the type's group version, with the diet — or,
// for a client without REST clients (client-go's fake clientset), the
// list/watch client-go's generated New<Type>Informer builds on client's
// typed client. Use it to give a custom informer — one with a field
// selector, say — to the factory's InformerFor:
//
//	f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
//		lw, _ := informers.NewFilteredListWatch(c, &corev1.Pod{}, "", onNode)
//		return pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, resync, indexers)
//	})
//
// The error wraps ErrUnknownType for a type kubernetes.Interface has no
// list/watch client for (a CRD: use a dynamic client).
func NewFilteredListWatch(client kubernetes.Interface, obj runtime.Object, namespace string, tweak internalinterfaces.TweakListOptionsFunc) (cache.ListerWatcher, error) {
	r, ok := resourceByType[reflect.TypeOf(obj)]
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrUnknownType, obj)
	}
	lw, _ := r.listerWatcher(client, namespace, tweak, append(slices.Clone(defaultWire), wire.WithTweakListOptions(tweak)), false)
	return lw, nil
}
