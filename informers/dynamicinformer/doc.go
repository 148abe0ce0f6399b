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
// The client-go-shaped constructors and New list and watch through the
// dynamic client, with the namespace and the tweak function applied to
// every request, as client-go's factory does. NewForConfig lists and
// watches through package wire instead: streamed, decoded on several
// goroutines into the same unstructured objects, with wire's options
// (WithWireOptions: workers, window, managedFields dropped, …). Options:
// WithNamespace, WithTweakListOptions, WithTransform, WithPipelineOptions
// (shards, full-ring policy, observer; each informer is named
// "dynamic <resource>.<group>" first, for logs and promadapter's informer
// label). Listers are client-go's dynamiclister over our indexer.
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
// has no error); a nil client or config and invalid options make New and
// NewForConfig fail (the client-go-shaped constructors panic on a nil
// client).
package dynamicinformer
