// Package informers is k8s.io/client-go/informers with shardinformer's
// informers: the same constructors and options under the same names, and a
// factory that satisfies client-go's informers.SharedInformerFactory, so the
// migration is the import path:
//
//	import "github.com/shardinformer/shardinformer/informers" // was "k8s.io/client-go/informers"
//
//	factory := informers.NewSharedInformerFactoryWithOptions(client, resync,
//		informers.WithNamespace("shop"),
//		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "tier=web" }))
//	pods := factory.Core().V1().Pods()      // client-go's generated accessor…
//	lister := pods.Lister()                 // …and lister, on our informer
//	factory.StartWithContext(ctx)
//	factory.WaitForCacheSyncWithContext(ctx)
//
// Every typed accessor of every generated group (Core, Apps, Batch, …) and
// ForResource return our informer; pipeline.Unwrap(pods.Informer()) reaches it
// behind client-go's typed wrapper, for AddParallelEventHandler and Stats.
// WithPipelineOptions and WithPipelineOptionsFor pass pipeline options
// (shards, full-ring policy, observer, name) to the informers. NewInformer
// and NewInformerFunc have client-go's cache.NewSharedIndexInformer signature
// for code that takes a constructor (for controller-runtime, see package
// crcache).
//
// # Why a factory of our own rather than an adapter around client-go's
//
// client-go's generated accessors call the factory's InformerFor with a
// newFunc that builds client-go's informer, its list/watch closing over the
// factory's namespace and tweak function. Those live in unexported fields of
// the factory and of the built informer: an adapter around an already built
// factory cannot see them, so an informer it substituted would list
// everything — a label selector matching nothing still cached every pod — and
// an accessor called before the adapter existed would have put client-go's
// informer in the factory for good. So the constructors here take the options
// themselves and the factory hands client-go's generated group constructors
// (core.New and the others) a view of itself whose InformerFor builds our
// informer for the requested type, with the factory's namespace and tweak
// function, ignoring the generated newFunc.
//
// # Lists and watches: the wire, with the diet
//
// Our informers list and watch through package wire by default: streamed,
// split and decoded on several goroutines, with its memory diet
// (wire.WithDiet: managedFields dropped, strings interned, slices
// compacted, identical parts of pods shared and unchanged parts of a pod's
// previous version reused). The requests go through the clientset's
// per-group REST clients (c.CoreV1().RESTClient(), from a table generated
// by reflection over kubernetes.Interface: zz_generated.resources.go; go
// generate ./informers; a test fails when it is stale), so its host,
// credentials, throttling, retries and error handling are the user's, with
// the namespace (ignored for cluster-scoped types) and tweak function
// applied as client-go's generated informer applies them. So the cached
// objects have no managedFields, and — the diet's aliasing contract, also
// client-go's — must not be modified in place: parts of them may be shared
// with other objects. KUBE_CACHE_MUTATION_DETECTOR=true checks it, for
// shared parts too (package pipeline, wire). A transform may change a
// pod's metadata in place, its spec or status on a copy it returns (wire's
// doc, "Transforms"). WithWireOptions tunes the wire (wire.WithoutDiet()
// turns the diet off); WithoutWire restores client-go's path: the typed
// client's List and Watch, wrapped by cache.ToListWatcherWithWatchListSemantics
// — for a clientset whose typed clients do more than send requests through
// their REST clients.
//
// A clientset without REST clients (client-go's fake clientset returns nil
// ones) falls back to that path by itself, and says so: once per factory in
// a log line at V(2), and for each informer in pipeline's
// Stats().ListerWatcher ("client-go list/watch (*fake.Clientset has no REST
// client for v1)"; a wire informer shows "wire pods.v1 in shop: protobuf,
// 2 workers, diet (…)"). NewFilteredListWatch exposes the same choice, with
// the default wire options. Informers are built with client-go's default
// namespace index.
//
// # Failing loudly
//
// The factory never hands out client-go's informer. InformerFor, client-go's
// extension point, returns the existing informer for the type if there is one;
// otherwise the newFunc it is given must build ours, and if it builds another
// (client-go's NewFilteredPodInformer, say) InformerFor panics with an error
// wrapping ErrNotOurs before storing it — a wiring mistake found at start-up,
// where client-go's signature leaves no error to return. Invalid options make
// New fail and the client-go-shaped constructors panic, at construction.
//
// # Lifecycle and goroutines
//
// The informers are kept in a client-go factory built with the transform,
// custom-resync and informer-name options, which thus apply them exactly as
// client-go does (resync per type, transform set before start); its Start,
// WaitForCacheSync and Shutdown are the factory's. Start runs each informer's
// RunWithContext in a goroutine of that factory; Shutdown returns once every
// one has returned, and RunWithContext returns only after every goroutine the
// informer started has exited. The constructors start nothing.
//
// # Dynamic and metadata informers
//
// Counterparts of client-go's dynamicinformer and metadatainformer factories
// are the subpackages dynamicinformer and metadatainformer, with client-go's
// constructors and this package's pipeline and wire options. Their
// ForResource is given the GVR, so they need no table: they list and watch
// the GVR through the wire (unstructured objects, or metadata only) on the
// REST client under the user's dynamic or metadata client
// (internal/restclient finds it), with the diet by default, namespace and
// tweak applied as here — or, for client-go's fakes and with WithoutWire,
// through the client's own list and watch, visibly as here. Having no
// InformerFor to delegate to, they keep their informers per GVR themselves
// (internal/gvrfactory), with the Start/WaitForCacheSync/Shutdown semantics
// of client-go's factories, proven by the same tests run against those.
//
// # controller-runtime
//
// controller-runtime's cache.Options.NewInformer (NewInformer here) is
// handed controller-runtime's own list/watch, whose closures hide the
// resource, namespace and selectors, so an informer built there decodes as
// controller-runtime does. Package crcache is the option that carries the
// whole stack (manager.Options.NewCache: crcache.New); its doc says how it
// learns each informer's request.
package informers
