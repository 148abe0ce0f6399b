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
// The informers list and watch metav1.PartialObjectMetadata through the
// metadata client, with the namespace and tweak function applied to every
// request, as client-go's factory does; package wire does not decode
// metadata-only responses, so there is no wire variant here. Options:
// WithNamespace, WithTweakListOptions, WithTransform, WithPipelineOptions
// (each informer is named "metadata <resource>.<group>" first). Listers are
// client-go's metadatalister over our indexer.
//
// Lifecycle, goroutines and bad input are as in package dynamicinformer
// (the two share their factory): one informer per GroupVersionResource,
// client-go's Start/WaitForCacheSync/Shutdown semantics, checked by the
// same tests against client-go's factory; constructors start nothing;
// ForResource panics with ErrInvalidResource for a resource without version
// or name; the client-go-shaped constructors panic and New fails on a nil
// client or invalid pipeline options.
package metadatainformer
