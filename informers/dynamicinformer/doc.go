// Package dynamicinformer is k8s.io/client-go/dynamic/dynamicinformer with
// shardinformer's informers: the same constructors under the same names
// and a factory that satisfies client-go's DynamicSharedInformerFactory,
// so the migration is the import path:
//
//	import "github.com/shardinformer/shardinformer/informers/dynamicinformer" // was "k8s.io/client-go/dynamic/dynamicinformer"
//
//	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, resync, "shop", tweak)
//	widgets := factory.ForResource(widgetsGVR) // informer and lister, on ours
//
// # Lists and watches: the wire, with the diet
//
// The client-go-shaped constructors and New list and watch through package
// wire on the REST client under the dynamic client (so its host,
// credentials, throttling, retries and error handling are the user's):
// streamed, decoded on several goroutines into the unstructured objects the
// dynamic client returns, with the requests and errors the dynamic client
// has, the namespace and the tweak function applied to every request as
// client-go's factory applies them, and with wire's memory diet
// (wire.WithDiet: managedFields dropped, strings interned). So the cached
// objects have no managedFields, and must not be modified in place
// (client-go's rule; KUBE_CACHE_MUTATION_DETECTOR=true checks it).
// NewForConfig does the same on REST clients of its own built from the
// config (which also decode CBOR). WithWireOptions tunes the wire for both
// (workers, window, content type; wire.WithoutDiet() turns the diet off);
// WithoutWire restores client-go's path, the dynamic client's own List and
// Watch — for a client that does more than send requests through its REST
// client.
//
// A client without a REST client (client-go's fake dynamic client) falls
// back to that path by itself, and says so: once per factory in a log line
// at V(2), and for each informer in pipeline's Stats().ListerWatcher
// ("client-go list/watch (*fake.FakeDynamicClient has no REST client)"; a
// wire informer shows "wire widgets.v1.example.com in shop: json, 2
// workers, diet (…)", a WithoutWire one "client-go list/watch
// (WithoutWire)").
//
// Options: WithNamespace, WithTweakListOptions, WithTransform,
// WithPipelineOptions (shards, full-ring policy, observer; each informer is
// named "dynamic <resource>.<group>" first, for logs and promadapter's
// informer label), WithWireOptions, WithoutWire. Listers are client-go's
// dynamiclister over our indexer.
//
// ForResource keeps one informer per GroupVersionResource. Start (or
// StartWithContext) runs the informers asked for so far and not yet
// started, each in a goroutine of the factory; WaitForCacheSync reports
// the started ones; Shutdown waits until every informer started has
// returned — and an informer returns only after every goroutine it started
// has exited — and makes later Starts do nothing: client-go's semantics,
// checked by the same tests against client-go's factory. Constructors start
// nothing. A resource without version or resource name makes ForResource
// panic with an error wrapping ErrInvalidResource (client-go's signature
// has no error); a nil client or config and invalid pipeline or wire
// options (checked also where the wire goes unused) make New and
// NewForConfig fail (the client-go-shaped constructors panic on a nil
// client).
package dynamicinformer
