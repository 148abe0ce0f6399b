// Package crcache is controller-runtime's cache on shardinformer: every
// informer is pipeline's and lists and watches through package wire
// (streaming, decoding on several goroutines in the server's order) with
// its memory diet (wire.WithDiet), while the cache itself — options,
// defaulting, readers, informer maps — is controller-runtime's own, not a
// fork. One option of the manager:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		NewCache: crcache.New,
//		Cache:    cache.Options{ /* DefaultNamespaces, ByObject, … as usual */ },
//	})
//
// NewFunc tunes it: WithPipelineOptions (shards, full-ring policy,
// observer…), WithWireOptions (after the default diet: wire.WithoutDiet,
// wire.WithWorkers…) and WithoutWire. pipeline.Unwrap reaches our informer
// behind the cache's GetInformer (for a single-namespace cache; a
// multi-namespace cache's informer is controller-runtime's aggregate), for
// AddParallelEventHandler and Stats; Stats().ListerWatcher says what it
// lists and watches: "wire pods.v1 in shop: protobuf, 2 workers, diet (…);
// label selector "tier=web"".
//
// # How
//
// New calls controller-runtime's cache.New with two of the options
// replaced: NewInformer builds our informer, and HTTPClient is a copy of
// the configured one (cache.Options.HTTPClient, or rest.HTTPClientFor the
// config, as controller-runtime defaults it) whose transport records and
// fails, without sending, any request whose context carries a probe
// marker; every other request goes through unchanged. controller-runtime
// hands NewInformer a cache.ListWatch whose closures hide the resource,
// namespace and selectors it computed for the informer (from
// DefaultNamespaces, ByObject, the Default* selectors, a metadata.namespace
// field selector…). So NewInformer calls its List and Watch once each with
// a probe context: the recorded requests show exactly the path, namespace,
// label and field selectors and bookmark choice controller-runtime would
// send, and the Accept header its client would ask with. The wire's
// ListerWatcher then requests that resource and namespace (below the
// host's path prefix, if any), with those selectors set on every list and
// watch and allowWatchBookmarks on every watch, asking for protobuf where
// controller-runtime would (built-in types unless the config's ContentType
// says otherwise; metadata-only objects always) and JSON otherwise (or
// CBOR if it would). It sends them on the REST client controller-runtime
// builds for the type (apiutil.RESTClientForGVK; for metadata-only
// objects, the metadata client's), on the configured HTTP client, so
// credentials, connections, throttling, retries and error decoding are
// the same. The probe is in memory and costs microseconds per informer;
// it runs in NewInformer, under the lock of controller-runtime's informer
// map, as building the informer does anyway.
//
// Why not another way: NewInformer alone sees only the closures. Computing
// the requests from cache.Options would repeat controller-runtime's
// defaulting (a hundred lines that change between versions: namespaces
// inherited by ByObject, "all other namespaces" turned into
// metadata.namespace!= field selectors, namespaces taken from field
// selectors) and could drift from it silently; reading its requests can
// not, and whatever the probe cannot read falls back visibly. A transport
// alone cannot help: client-go decodes after it.
//
// Objects: typed ones are decoded with the cache's scheme (cache.Options.
// Scheme, defaulted to client-go's as controller-runtime does); unstructured
// ones as the dynamic client decodes them; metadata-only ones
// (metav1.PartialObjectMetadata) as the metadata client does, and, as
// controller-runtime's list loop and newGVKFixupWatcher do, with their
// GroupVersionKind set before they reach the informer (lists on the
// caller's goroutine; watches by one goroutine per watch that sets it on
// each event's object, like the watch.Filter controller-runtime uses, but
// one that also ends when the consumer stops reading after Stop).
//
// Everything else is controller-runtime's, through the informer it
// configures: transforms (DefaultTransform, ByObject Transform,
// cache.TransformStripManagedFields) via SetTransform, the readers and
// UnsafeDisableDeepCopy, DefaultWatchErrorHandler, SyncPeriod as the
// informer's resync, indexers (IndexField), RemoveInformer,
// ReaderFailOnMissingInformer. The tests run the same behavioural checks
// against controller-runtime's cache and this one on one server.
//
// # The diet
//
// The diet's visible difference is managedFields: they are dropped while
// decoding, so objects are controller-runtime's with
// cache.TransformStripManagedFields (which can stay: it finds nothing to
// strip). Its sharing puts transforms under package wire's rule
// ("Transforms" in its doc): a transform may change an object's metadata
// in place (labels, annotations, managedFields, as
// TransformStripManagedFields does), but a pod's spec or status only on a
// copy it returns, since parts of them may be shared with other pods.
// WithWireOptions(wire.WithoutDiet()) decodes objects as client-go does;
// steps can be turned on again after it (wire.WithDropManagedFields…).
//
// # Fallbacks
//
// WithoutWire builds our informer on controller-runtime's own list/watch
// (client-go's decoding, full objects). The same happens, for one
// informer, when the probe cannot read what that list/watch requests — it
// sent no request or several, or a parameter crcache does not know, as a
// changed controller-runtime might — or the wire cannot serve it (an
// option it refuses for the type). The informer's Stats().ListerWatcher
// then says "controller-runtime list/watch (reason)", and each reason is
// logged once per cache at klog V(2) (internal/lwdesc, which the
// factories' fallbacks use too). Should controller-runtime ever build its list/watch on another
// HTTP client, the probe's list would be sent for real — one list of the
// resource, answered, and taken as a reason to fall back.
//
// # Concurrency
//
// New and NewFunc start nothing; the cache's Start runs the informers as
// controller-runtime does, and each informer's RunWithContext returns only
// after every goroutine it started has exited. controller-runtime calls
// NewInformer under one informer map's lock, and a cache has several maps
// (one per namespace, one per ByObject entry), so informers may be built
// concurrently: the per-cache builder is read-only after New but for its
// set of logged fallback reasons (a sync.Map). The probing transport is
// safe for concurrent use, as the wrapped transport must be.
package crcache
