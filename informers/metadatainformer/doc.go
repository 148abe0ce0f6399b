// Package metadatainformer is k8s.io/client-go/metadata/metadatainformer
// with shardinformer's informers: the same constructors and WithTransform
// under the same names and a factory that satisfies client-go's
// SharedInformerFactory, so the migration is the import path:
//
//	import "github.com/shardinformer/shardinformer/informers/metadatainformer" // was "k8s.io/client-go/metadata/metadatainformer"
//
//	factory := metadatainformer.NewSharedInformerFactory(client, resync)
//	pods := factory.ForResource(podsGVR) // PartialObjectMetadata informer and lister, on ours
//
// # Lists and watches: the wire, with the diet
//
// The informers list and watch metav1.PartialObjectMetadata through package
// wire's metadata mode on the REST client under the metadata client (so its
// host, credentials, throttling, retries and error handling are the
// user's): the metadata client's requests (Accept
// …;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, protobuf first), its
// objects and errors, streamed and decoded on several goroutines, with the
// namespace and the tweak function applied to every request as client-go's
// factory applies them, and with wire's memory diet (wire.WithDiet:
// managedFields cut from the bytes, metadata strings interned). So the
// cached metadata has no managedFields, and must not be modified in place
// (client-go's rule; KUBE_CACHE_MUTATION_DETECTOR=true checks it).
// WithWireOptions tunes the wire (workers, window, wire.JSON;
// wire.WithoutDiet() turns the diet off; wire.CBOR is refused, as the
// metadata client has none); WithoutWire restores client-go's path, the
// metadata client's own List and Watch — for a client that does more than
// send requests through its REST client.
//
// A client without a REST client (client-go's fake metadata client) falls
// back to that path by itself, and says so: once per factory in a log line
// at V(2), and for each informer in pipeline's Stats().ListerWatcher
// ("client-go list/watch (*fake.FakeMetadataClient has no REST client)"; a
// wire informer shows "wire pods.v1 in shop: metadata only, protobuf, 2
// workers, diet (…)", a WithoutWire one "client-go list/watch
// (WithoutWire)").
//
// Options: WithNamespace, WithTweakListOptions, WithTransform,
// WithPipelineOptions (each informer is named "metadata
// <resource>.<group>" first), WithWireOptions, WithoutWire. Listers are
// client-go's metadatalister over our indexer.
//
// Lifecycle, goroutines and bad input are as in package dynamicinformer
// (the two share their factory): one informer per GroupVersionResource,
// client-go's Start/WaitForCacheSync/Shutdown semantics, checked by the
// same tests against client-go's factory; constructors start nothing;
// ForResource panics with ErrInvalidResource for a resource without version
// or name; the client-go-shaped constructors panic and New fails on a nil
// client or invalid pipeline or wire options (checked also where the wire
// goes unused).
package metadatainformer
