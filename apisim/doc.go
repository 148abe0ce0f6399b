// Package apisim is an in-process simulated Kubernetes API server, served
// over HTTP on loopback, so that informers run through a real client-go
// client — HTTP, content negotiation, decoding, reflector, pager — exactly
// as against a cluster. It serves pods, configmaps, apps/v1 deployments, a
// custom resource (WidgetsResource, served as the API server serves custom
// resources) and coordination.k8s.io/v1 leases, the one resource clients may
// also write over HTTP (for membership and leader election). It feeds the load generator (client-go's informer and
// ours side by side on 100k pods) and the tests.
//
// # Usage
//
//	s, err := apisim.New(apisim.Config{})      // validates; starts nothing
//	err = s.Load(pods)                           // bulk fill, takes ownership
//	err = s.Start()                              // listen on 127.0.0.1:0
//	defer s.Close()                              // ends watches, waits for goroutines
//	cfg := s.RESTConfig()                        // no client rate limit
//	cfg.ContentType = apisim.ContentTypeProtobuf // or leave JSON
//	cs, err := kubernetes.NewForConfig(cfg)
//	// … informers on cs; meanwhile churn in process:
//	s.Modify("ns", "name", func(p *corev1.Pod) { p.Labels["x"] = "y" })
//	s.ConfigMaps().Create(apisim.NewConfigMap("ns", "cfg", 1))
//	s.Widgets().Modify("ns", "w", func(u *unstructured.Unstructured) { … })
//
// The in-process API of a resource is an Objects[T] (Pods, ConfigMaps,
// Deployments, Widgets, Leases); Server.Create, Update, Modify, Delete, Load, Get,
// List and Len are its pod shorthands. The builders NewPod (≈9–10 KB of
// JSON, 14–17 KB with managedFields), NewConfigMap (≈2–4 KB), NewDeployment
// (≈8–9 KB, its template built like NewPod's pod) and NewWidget (≈1 KB)
// make realistic objects, deterministic per seed. The client side is
// client-go's: the typed clientset and informer factory for the built-in
// types, the dynamic client and dynamicinformer for every resource, the
// metadata client and metadatainformer for every resource.
//
// Fault injection: DropWatches ends every watch (clients re-watch from their
// last resourceVersion); Compact(rv) drops history like etcd compaction
// (resuming from older versions gets 410 Expired and the client relists);
// SetUnavailable(true) is an outage (watches dropped, requests 503) during
// which in-process writes go on — what the client missed surfaces after it
// relists, deletes as cache.DeletedFinalStateUnknown.
//
// # Protocol
//
// Resources: /api/v1/{pods,configmaps}, /apis/apps/v1/deployments and
// /apis/example.shardinformer.io/v1/widgets, each cluster-wide, under
// /namespaces/{ns}/, and /namespaces/{ns}/{resource}/{name} (GET of one
// object). GET of a collection lists or, with watch=true (or 1), watches.
// /version, /api, /api/v1, /apis, /apis/{group} and /apis/{group}/{version}
// answer discovery (legacy JSON; resources sorted by name, verbs get, list
// and watch, and for leases create, delete and update); /healthz, /livez,
// /readyz. Other paths are 404, other methods 405, all errors
// metav1.Status objects with the API server's codes, reasons and messages.
//
// Leases (/apis/coordination.k8s.io/v1/namespaces/{ns}/leases) are also
// written over HTTP, with JSON or protobuf bodies, as client-go's Lease
// client and leader election write them: POST creates (201; AlreadyExists
// 409; a set resourceVersion 400; the namespace defaults to the URL's, a
// different one is 400), PUT updates (200; the body's resourceVersion and
// uid, when set, must be the stored ones, else 409 Conflict — optimistic
// concurrency; an empty resourceVersion updates unconditionally; a name
// other than the URL's is 400; a missing lease 404), DELETE deletes (200
// with the final state; DeleteOptions preconditions on resourceVersion and
// uid, else 409). Each write is one watch event, like an in-process write.
//
// LIST honours limit/continue (the token carries the snapshot RV and the
// next key; 410 Expired once that RV is compacted), resourceVersion and
// resourceVersionMatch (unset: most recent; "0", with resourceVersionMatch
// unset or NotOlderThan: any, served current and whole, the limit ignored,
// as by the API server's watch cache — with a continue token, the rest of
// the token's snapshot, whole, no token; NotOlderThan another RV: current,
// paged; Exact, and the legacy "RV with limit means Exact"; an RV the
// store has not reached waits ResourceVersionWait and then fails with the
// "Too large resource version" 504), labelSelector, and fieldSelector with
// the API server's field labels: for pods metadata.name, metadata.namespace,
// spec.nodeName (alias spec.host), spec.restartPolicy, spec.schedulerName,
// spec.serviceAccountName, spec.hostNetwork, status.phase, status.podIP
// (the first of status.podIPs), status.podIPs (accepted, never set, as
// there) and status.nominatedNodeName; for the others metadata.name and
// metadata.namespace; other labels are 400 with the API server's message.
// remainingItemCount is set on pages without label and field selectors.
// Pages are consistent snapshots: the store is a persistent B+tree, so a
// list's snapshot is one pointer; paginated snapshots are cached
// (Config.ListSnapshots) and otherwise rebuilt by undoing history.
//
// WATCH streams events after resourceVersion; "" or "0" first sends the
// current state as synthetic ADDED events. sendInitialEvents=true with
// resourceVersionMatch=NotOlderThan (WatchList, client-go's default since
// 1.35) sends the state, then a BOOKMARK annotated
// k8s.io/initial-events-end: "true" at the snapshot's RV, then live events.
// allowWatchBookmarks gets BOOKMARKs every BookmarkInterval; a bookmark's
// object is an empty object of the resource (or PartialObjectMetadata)
// carrying the RV. timeoutSeconds ends the watch cleanly, capped at
// MaxWatchTimeout. A watch from a compacted RV gets an ERROR event with a
// 410 Expired Status, as from the API server's watch cache. With a
// selector, an object moving into the selection is delivered as ADDED and
// one moving out as DELETED.
//
// Encodings: application/json and application/vnd.kubernetes.protobuf,
// negotiated from Accept as the API server negotiates (goautoneg's clause
// order, the server's serializer order, its parameter rules; built-in
// resources first pass go-restful's route check, which refuses e.g.
// "application/*"). Watch responses are "application/json" (concatenated
// JSON WatchEvents) or "application/vnd.kubernetes.protobuf;stream=watch"
// (length-delimited frames of meta/v1 WatchEvent holding the
// "k8s\x00"-enveloped object). The framing is written by hand so that an
// object's bytes are reused without copying; tests check it is
// byte-identical to apimachinery's serializers. The custom resource is
// stored and served as JSON: a client preferring protobuf gets JSON, one
// accepting only protobuf gets 406, and list items carry their kind.
//
// Metadata: Accept application/json (or
// application/vnd.kubernetes.protobuf);as=PartialObjectMetadataList;
// g=meta.k8s.io;v=v1 on a LIST, as=PartialObjectMetadata on a GET or
// WATCH (events and bookmarks), returns meta.k8s.io PartialObjectMetadata
// objects instead of whole ones — what client-go's metadata client and
// metadatainformer ask for — for every resource, custom ones in protobuf
// too; v1beta1 is served as well. A transformation that does not fit the
// request fails as on the API server: PartialObjectMetadata on a LIST and
// PartialObjectMetadataList on a GET are 406 (for a custom resource's GET,
// a 500 "content is not a list"). Table and other transformations are not
// served: such a clause is skipped.
//
// Shard selectors (KEP-5866): with Config.ShardedListAndWatch, LIST and
// WATCH take shardSelector=shardRange(object.metadata.uid, '0x…', '0x…'),
// ranges joined by ||, and return only objects whose FNV-1a 64 hash of the
// field (or of object.metadata.namespace) lies in one of the ranges, as
// package shardselector parses and evaluates them exactly like
// kube-apiserver v1.36. A watch delivers only events of objects in range
// (a uid never changes, so objects never move in or out). Typed lists echo
// the selector, canonicalised, in metadata.shardInfo.selector;
// PartialObjectMetadataList and custom resource lists do not (the API
// server's do not either), and remainingItemCount ignores the selector as
// there. A selector that does not parse is a 500 "invalid shard selector:
// …" (reason unset), as from the API server. Without the switch (the
// default, like the feature gate) the parameter is ignored, however
// malformed. conformance_e2e_test.go (build tag e2e) checks these answers
// against a real kube-apiserver v1.36.3 with the gate on and off.
//
// # Design
//
// Every resource lives in one store: one persistent B+tree keyed by
// "<group>/<resource>/<namespace>/<name>", one resourceVersion counter and
// one history ring, like etcd's revisions (the API server's per-resource
// watch caches differ: here History is shared, so churn of one resource
// shortens the others' resumable history). A resource is a descriptor —
// names, discovery entry, codec (typed protobuf/JSON, or unstructured
// JSON), field labels — and lists, watches, encodings and discovery are
// generic over it; adding one is one entry in resource.go.
//
// Writers (Objects' Create, Update, Modify, Delete, Load) serialize on one
// mutex for microseconds: they derive a new tree, put the event into the
// history ring, publish the new state (tree + RV) with one atomic store,
// and wake the watchers. Load publishes up to 1024 objects at once (one
// event each), modifying in place the tree nodes the batch itself built, so
// that a bulk load copies each path once per batch. Everything else reads
// without locks: lists and gets load the current state; each watch
// request's goroutine reads the history ring from its cursor, skips other
// resources' events, and writes to its own connection, so no lock is held
// while writing to a socket and a slow client blocks nobody.
//
// Each object version is encoded at most once per encoding (whole object
// or PartialObjectMetadata, JSON or protobuf), lazily, by whichever request
// needs it first (per-object mutex), and those bytes are reused by every
// list and watcher. PartialObjectMetadata in protobuf is a sub-slice of the
// object's own protobuf encoding (its field 1 is ObjectMeta, exactly the
// message PartialObjectMetadata is). Large lists and initial event streams
// encode missing items on all cores ahead of the writer. A superseded
// version drops its decoded object once an encoding of the whole object
// exists, so history costs byte slices, not pointer-rich objects the GC must
// scan; with EncodedOnly current versions do too.
//
// With EncodedOnly versions are also compact, so that a million realistic
// pods take under a GiB of heap (bench/results/apisim-1m.md): every write
// (and Load, on all cores) encodes its version in the resource's primary
// encoding (protobuf; JSON for custom resources) at once and drops the
// decoded form; other encodings are made when first asked for, as without
// the option. Each encoding is stored as a delta (delta.go: copies out of a
// reference and literal bytes) against the first encoding of its template —
// the objects of a namespace with one generateName, i.e. a ReplicaSet's
// pods, which differ only in names, ids, IPs and times: ≈300 bytes instead
// of ≈5.5 KB of protobuf. Label sets are interned per resource, and key,
// uid and selectable fields share one string. Responses decode deltas into
// a per-request buffer (≈0.3 µs a pod), so the bytes served are those of
// the whole encoding (compact_test.go checks every kind of response against
// a server without the option under random writes). References and interned
// sets are never freed: memory grows with the distinct templates and label
// sets ever stored, which suits replicas of a few templates, not every
// object its own.
//
// A watcher that falls more than WatchBuffer events behind the newest write
// (counting only events that arrived after it went live) is closed by the
// writer that notices, with a write deadline cutting a blocked write; the
// client re-watches from its last RV, and if that is no longer in History
// it relists.
//
// Goroutines: Start starts the accept loop; net/http runs one goroutine per
// connection; a large list or initial event stream runs GOMAXPROCS encoder
// goroutines that exit before its request returns. Close stops them all and
// waits. Lock order: store.mu, then watcher.mu; snapshotCache.mu,
// sharedParts.mu and object.encMu are leaves.
//
// # Differences from the API server
//
// Writes over HTTP are served for leases only (POST, PUT and DELETE; PATCH,
// deletecollection, dryRun and field managers are not); other resources
// are written in process (HTTP writes get 405). An update
// that changes nothing still makes a new version. Responses are never
// gzip-compressed, never YAML, CBOR or Table, and never pretty-printed.
// A WATCH asking for
// PartialObjectMetadataList gets PartialObjectMetadata events (the API
// server cannot encode its fallback). Discovery is legacy only
// (no aggregated apidiscovery.k8s.io). There is no authentication,
// admission, defaulting or validation of object contents. A CEL syntax
// error in a shard selector has the API server's status and prefix but
// not cel-go's wording. Lists are modelled on a watch cache that holds every
// snapshot since the last compaction and whose resourceVersion is the
// store's, shared by every resource: the API server's watch cache is per
// resource (a list at "0" carries the resourceVersion of the resource's
// last event, or of a progress notification), and it hands a continue token
// it holds no snapshot for to etcd, which pages it also at
// resourceVersion "0" (k8s.io/apiserver v0.36.3's cacher; not exercised by
// listrv_e2e_test.go). Without the watch cache (--watch-cache=false)
// resourceVersion "0" pages too (TestListResourceVersionZeroWithoutWatchCache).
//
// # client-go in tests
//
// client-go v0.37 reads feature gates from KUBE_FEATURE_<Name> environment
// variables; tests switch WatchList with
// k8s.io/client-go/features/testing.SetFeatureDuringTest(t,
// clientfeatures.WatchListClient, on) and check via Stats that the reflector
// really listed (off) or streamed (on).
package apisim
