// Package wire is a cache.ListerWatcher that owns the path from an HTTP
// response to decoded objects: it streams LIST and WATCH bodies instead of
// reading them whole, splits them into items and frames at the wire level,
// decodes those on W goroutines while the transfer goes on, and hands the
// results on in the server's order. Optionally it puts objects on a memory
// diet while decoding. It serves client-go's informers and reflectors as
// well as pipeline's, so a report can tell the wire's share of a gain from
// the core's.
//
// # Usage
//
//	lw, err := wire.NewForConfig(restConfig, wire.Resource{
//		GVR:    schema.GroupVersionResource{Version: "v1", Resource: "pods"},
//		Object: &corev1.Pod{}, // nil: unstructured, for any resource (CRDs);
//		// &metav1.PartialObjectMetadata{}: metadata only, for any resource
//	}, wire.WithWorkers(4), wire.WithDiet())
//	inf := pipeline.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers)
//	// or: cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, indexers)
//
// New takes a rest.Interface instead: any REST client of the server (for
// example clientset.CoreV1().RESTClient(), or the one under a dynamic or
// metadata client), like cache.NewListWatchFromClient.
// Options: WithWorkers (default GOMAXPROCS), WithWindow (default 16 per
// worker), WithLabelSelector, WithFieldSelector, WithTweakListOptions (applied
// last, like an informer factory's), WithContentType (Protobuf where the type
// has it, the default; JSON; or CBOR, see CBOR below), WithMaxFrameSize (default 16 MiB, client-go's
// watch limit), and the diet: WithDropManagedFields, WithInterning,
// WithCompaction, WithSharing, or all four with WithDiet; WithSharedValues
// also shares identical maps of pods (opt-in, see Memory diet).
//
// # Requests and errors
//
// Requests go through client-go's rest.Request, built as the client wire
// mirrors builds its List and Watch, then Stream: for typed objects a
// typed clientset's (Get, the group version's path, NamespaceIfScoped,
// Resource, VersionedParams, and Timeout from TimeoutSeconds); for
// unstructured objects the dynamic client's and for metadata-only ones
// the metadata client's (the collection's whole path by AbsPath, so an
// error response without a Status names no resource; VersionedParams; no
// timeout, but on the metadata client's watches). New refuses a group,
// version, resource or namespace that is not a valid path segment. So
// client-side throttling (lists), Retry-After
// retries of 429 and 5xx, warning handlers, metrics of the transport and the
// transformation of error responses are client-go's own, and the reflector
// sees the errors the mirrored client's ListWatch gives it:
//
//	response                              List returns / Watch returns
//	non-2xx with a Status body (JSON or   *errors.StatusError with that Status
//	  protobuf): 410 Expired, 429, 5xx…   (IsResourceExpired, IsTooManyRequests…)
//	non-2xx without a Status body         errors.NewGenericServerResponse's
//	                                      StatusError, as client-go builds it
//	200 whose body is a Status            List: errors.FromObject(status)
//	transport error                       the error / Watch: an empty closed
//	                                      watch for a probable EOF or timeout
//	malformed or truncated list body      an error (never a partial list)
//
// Watch events follow client-go's watch.StreamWatcher and rest/watch.Decoder:
//
//	stream                                the consumer sees
//	ADDED/MODIFIED/DELETED/BOOKMARK       the event, in order (the WatchList
//	  (k8s.io/initial-events-end too)       bookmark included)
//	ERROR with a Status (410 Expired…)    an ERROR event with that *metav1.Status
//	clean end of stream                   the result channel closes
//	end inside a frame, io.ErrUnexpected- the channel closes, no ERROR event
//	  EOF, probable EOF, timeout
//	any other read or decode error        one ERROR event whose Status is the
//	  (invalid frame, unknown kind, bad     client's (500, InternalError, cause
//	  event type, frame over the maximum)   ClientWatchDecoding), then the close
//
// A decode error of frame N is reported only after the events of the frames
// before it were delivered; frames after it are dropped.
//
// Differences from client-go, all for input no API server sends, each with a
// test: a frame or item longer than the maximum frame size is refused as soon
// as its length prefix is read (client-go first reads up to 16 MiB of it, and
// closes quietly if the stream ends sooner); a list is refused with an error,
// not decoded, if after its first item it has a second "items" member, a kind
// that changes, or a key that encoding/json's case-insensitive matching would
// take for kind, apiVersion, items or metadata (client-go decodes all of
// these, in ways that depend on member order); when protobuf was requested, a
// watch body that starts with '{' or whitespace is read as JSON (see
// Sniffing). Unlike rest.Request.Watch and Do, a connection error is not
// retried inside the call (Stream does not): List returns it and Watch returns
// an empty watch, and the reflector's own backoff retries. Watch requests are
// not client-side throttled, as client-go's are not.
//
// # Sniffing
//
// rest.Request.Stream returns the body without its Content-Type, so the
// format is read from the first bytes: a list is protobuf if it starts with
// the envelope's magic "k8s\x00", JSON otherwise. A JSON watch stream starts
// with '{' or whitespace; a protobuf one with the 4-byte big-endian length of
// its first frame, whose first byte is below 0x09 because frames are at most
// 128 MiB (the bound on WithMaxFrameSize). When protobuf was requested
// anything else is read as protobuf. A CBOR body from the API server starts
// with the self-described tag (0xd9 0xd9 0xf7), and any byte but '{' starts
// a CBOR data item, so when CBOR was requested anything but '{' is read as
// CBOR. Otherwise everything is JSON (for metadata-only objects, which are
// never CBOR, a body with the CBOR tag too). Only content types that were
// requested can come back, so this is unambiguous for any server.
//
// # CBOR
//
// With WithContentType(CBOR) requests accept CBOR (RFC 8949) and JSON;
// kube-apiserver serves CBOR, for built-in and custom resources, with the
// CBORServingAndStorage feature gate (alpha in 1.32–1.36) and falls back to
// JSON without it. internal/cborwire finds item and event boundaries
// without decoding (well-formedness only; nesting up to 10,000 levels, as
// apimachinery's decoder): a list body's items are handed to the workers
// one by one while it streams in, and its other members (metadata, kind,
// apiVersion) are decoded at the end by client-go's decoder, as one map; a
// watch stream (application/cbor-seq) is split into events, whose objects
// client-go's decoder decodes on the workers. With the diet's drop,
// managedFields are cut from the bytes first (apimachinery would decode
// them and transcode their FieldsV1 to JSON: about half of a pod's CBOR
// decode). Objects equal client-go's
// (apimachinery's CBOR serializer, as a clientset or dynamic client uses
// it with client-go's ClientsAllowCBOR gate), map keys sorted or not. The
// rest of the diet applies after decoding. Where client-go's CBOR framer (fxamacker/cbor
// with its default limits) refuses a watch event nested deeper than 32
// levels or with more than 131,072 array elements or map pairs, wire
// delivers it. apimachinery's CBOR decoding is reflection-based: about 7x
// protobuf's CPU per pod, and for custom resources more than wire's JSON
// decode, for bodies 0.8x the size of JSON (bench/results/wire.md). So
// Protobuf stays the default; CBOR is for servers and networks that prefer
// it.
//
// # Decoding
//
// Items and frames in the canonical form the API server writes take a fast
// path: a protobuf item is unmarshalled straight from its bytes (client-go
// copies a watch object twice first: into the WatchEvent's RawExtension and
// the envelope's runtime.Unknown); a JSON item is unmarshalled with the same
// case-sensitive decoder client-go uses. Anything else — a Status, an object
// of another kind, repeated or unknown envelope fields, a key encoding/json
// could match case-insensitively — is decoded by client-go's own decoders
// (the clientset's for typed resources, the dynamic client's for
// unstructured), so odd input decodes, or fails, as it would in client-go.
// Differential tests (objects at random, lists and watch streams, both
// formats, typed and unstructured, served over HTTP and compared with the
// typed and dynamic clients) and fuzz targets (every splitter and framer
// against client-go's decoders) check that the two paths agree.
//
// Typed objects come back as client-go's typed clients return them: lists
// as the type's list (*corev1.PodList) with TypeMeta cleared, watch objects
// with TypeMeta cleared, list items as encoded. Unstructured objects come
// back as the dynamic client returns them, metadata-only objects as the
// metadata client does (see below).
//
// # Metadata-only objects
//
// Resource.Object &metav1.PartialObjectMetadata{} lists and watches the
// metadata of any resource, built-in or custom, as client-go's metadata
// client (k8s.io/client-go/metadata, under client-go's metadatainformer)
// does. Lists accept
// application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,
// the same in JSON, then plain JSON; watches the same with
// as=PartialObjectMetadata; with WithContentType(JSON) the protobuf clause
// is left out, and CBOR is refused by New (the metadata client has none).
// The server answers with meta.k8s.io/v1 PartialObjectMetadataList and
// PartialObjectMetadata objects, which take the fast paths above (the
// object's metadata is its protobuf field 1, as for built-in types). They
// come back as the metadata client returns them: a
// *metav1.PartialObjectMetadataList with TypeMeta cleared and items as
// encoded (JSON items keep their kind, protobuf ones have none), watch
// objects as *metav1.PartialObjectMetadata with TypeMeta cleared.
//
// Anything else is decoded by the metadata client's decoders
// (apimachinery's meta internal-version scheme, which knows meta.k8s.io's
// kinds and Status) and treated as that client treats it, with its error
// messages: a list body that is a Status is its error (or, for Success,
// "unexpected object"), as is one of another meta.k8s.io kind
// (v1beta1's list); a list of a kind the scheme does not know — a server
// that ignored the transformation and sent whole objects — is read, as
// JSON, by encoding/json into the metadata of its items, and fails in
// protobuf; a watch object of such a kind ends the watch with an ERROR
// event. Resource.Scheme is not used. Everything else is the wire's as
// for other objects: streaming, decoding on the workers in the server's
// order, WatchList, bad input and the frame limit, and the diet —
// managedFields cut from the bytes, metadata strings interned (as for
// other typed objects: namespace, generateName, labels, annotation keys,
// owner references, finalizers); compaction and sharing are for pods and
// change nothing here. TestMetadataDifferential (random metadata over
// HTTP, lists paged or not, watch streams with bookmarks and the WatchList
// bookmark, protobuf and JSON, the requests compared too),
// TestMetadataAgainstAPISim, TestMetadataBadLists,
// TestMetadataBadWatchStreams, TestMetadataAPIErrors and the fuzz targets
// FuzzMetadataList and FuzzMetadataWatch compare it with the metadata
// client.
//
// # Goroutines, ordering and memory
//
// A List runs on its caller's goroutine, which reads the body and splits
// it. With one worker it decodes each item itself. With W workers it starts
// an ordered.Pool of W decoder goroutines and a collector goroutine that
// takes the decoded items out in order and appends them to the list; List
// returns after all of them exited.
//
// A watch with one worker has one goroutine that reads a frame, decodes it
// and sends the event, like client-go's StreamWatcher (no handoff). With W
// workers, a reader goroutine frames the stream and submits each frame to
// the pool, W decoder goroutines decode, and an emitter goroutine sends the
// events in order on the unbuffered result channel. The reader owns the body
// and the framing state; the emitter owns the result channel; each frame's
// buffer belongs to the reader until it is submitted and to its decoder
// after.
//
// At most Window frames or items are in flight — read and not yet delivered
// (or appended) — so memory is bounded by Window times the frame size, not
// by the stream. A full window makes the reader wait, so the consumer's pace
// reaches the TCP connection and the server. Stop closes the body and a
// done channel, which unblocks the reader, the workers, the emitter and a
// pending send; it returns once every goroutine of the watch has exited,
// also when the consumer is not reading.
//
// # Memory diet
//
// The diet lives in internal/diet, beside the codec, which calls it at a
// seam of five points (internal/diet's doc.go): diet.New once per
// ListerWatcher, Applier.Apply on every object decoded, Applier.ProtoPod
// instead of decoding a protobuf pod when sharing, DecodePod for the
// protobuf pods it does not share, and Config.On, Sharing and String. The
// codec keeps the bytes: the drop of managedFields is its own, the diet
// never sees a frame or a format. The file names below are internal/diet's.
//
// WithDropManagedFields cuts metadata.managedFields out of each object's
// bytes before it is unmarshalled — protobuf: field 17 of the ObjectMeta in
// field 1, with the metadata's length prefix rewritten in place; JSON: the
// "managedFields" members of "metadata" — so it costs no decoding and no
// heap. (Malformed bytes inside managedFields then go unnoticed.)
//
// WithInterning makes objects share one copy of strings that repeat across
// objects: a hand-written walk for pods (the hot type), a reflective one for
// other typed objects and for unstructured content (strings up to 256
// bytes, not names, uids or resourceVersions). Each decoder goroutine has
// its own interner — a direct-mapped cache of 8Ki recently seen strings,
// with a second chance for strings that were used — so a lookup is a hash
// and a compare, with no lock, atomic or shared cache line; the
// ListerWatcher keeps one interner per worker across its lists and
// watches. Two workers may each hold a copy of a string: one copy per
// worker, not per object. A protobuf pod's labels and annotations are
// interned as they are decoded, straight from the bytes (presize.go,
// metaStrings): a string already cached is not allocated at all, and the
// maps need no second pass.
//
// WithCompaction moves a pod's slices into arrays of their exact length:
// the generated unmarshalers append repeated fields one by one and leave up
// to half of each array unused.
//
// WithSharing makes pods share one copy of each part that is identical
// across them and holds no map — for replicas of one template most of the
// spec: owner references, finalizers, containers' env, envFrom, ports,
// command, args, probes, lifecycle and security contexts, volume sources,
// tolerations, image pull secrets, the pod's security context, host IPs.
// Volume mounts are not shared: the service account token's volume has a
// random name per pod. Each decoder has its own cache of parts, two-way
// set-associative with a second chance for parts that were used, that
// grows from 1Ki to 64Ki slots while it turns over, so that it holds the
// parts of every template in use and pods share them in whatever order
// they arrive (a watch's creates as much as a list's namespaces).
//
// Protobuf pods are shared before they are decoded (shareproto.go): a
// part's key is its bytes as they arrive — the run of its field's
// occurrences in the enclosing message — so the pod's bytes are walked
// once, each part looked up, the parts found cut out of the bytes (the
// enclosing length prefixes rewritten, pbwire.Cutter) and the rest
// unmarshalled, compacted and interned; then the cached values are put in
// place. A hit costs a hash and a compare: no decoding, allocation,
// interning or compaction. A part not found is decoded with its pod; the
// first time its bytes are seen only their hash is remembered (most misses
// are parts unique to one pod: owner references, env lists, volume
// sources), and from the second sighting on it is cached, under a copy of
// its bytes, once the pod is compacted and interned, so a value is offered
// to other pods only once its own pod no longer changes it. Each template
// thus keeps one unshared copy more (its first pod's). Equal bytes decode to equal values, so only equal
// values are shared; shapes the walk does not follow (a repeated field
// whose occurrences are not adjacent, a singular one that repeats, a
// metadata, spec or status message that repeats) fall back to sharing
// after decoding. JSON pods, and pods decoded by client-go's decoders, are
// shared after decoding, keyed by the protobuf encoding of each part (an
// empty list inside a shared part may then come back as nil or the other
// way round: equal under apiequality.Semantic and encoded alike).
// WithDiet is all four.
//
// WithSharing also shares parts between versions of one pod (protobuf;
// versions.go). Most updates leave a pod's spec unchanged (the kubelet
// writes its status, controllers its labels and annotations), and many its
// status too. The ListerWatcher remembers, per pod key, the pod it decoded
// last (by a weak pointer, which keeps nothing alive) and 128-bit digests
// of the bytes of its spec and status; a pod whose spec or status bytes
// have its previous version's digest takes that version's value instead
// of decoding it — a shallow copy, with the maps in it copied unless
// WithSharedValues. An update of an annotation then decodes the metadata
// alone (BenchmarkUpdateDecode); a relist reuses what did not change. The
// table costs about 130 bytes per pod (BenchmarkHeapPerPod); entries of
// collected pods are swept as new keys arrive.
//
// WithSharedValues (opt-in, not part of WithDiet) also shares the parts
// that hold maps: resource requirements (four ResourceLists, 2.7 KB per
// pod, because a Go map holds at least eight slots), node selector and
// affinity.
//
// Aliasing contract. Objects from an informer's cache must not be modified
// in place — client-go's rule too; copy with DeepCopy first. With sharing
// the rule matters more: a change to a shared part of one pod (an env
// entry, a probe) shows in every pod sharing it and is a data race with
// every reader of those pods; the cache then no longer equals the server,
// and nothing reports it. A shared map is worse: two goroutines writing to
// it at once stop the program (fatal error: concurrent map writes), and
// that is why maps are shared only on request. Strings are immutable, so
// interning alone is invisible. With KUBE_CACHE_MUTATION_DETECTOR=true
// (client-go's cache mutation detector, which package pipeline runs) every
// value the diet hands a pod from another object — a shared part, its
// previous version's spec or status — is first compared with what the
// pod's own bytes decode to, and a difference panics, naming the pod and
// the part (mutation.go): a mutation is caught also after the object it
// was made through has left the detector's window.
//
// Transforms. client-go (since 1.27) lets an informer's TransformFunc
// modify the object it is given in place, since no one else has seen it
// yet. With sharing someone has: the parts of a pod reached through a
// slice or a pointer (containers' env, tolerations, owner references,
// volume sources) may be shared with other pods, and the
// decoder of the pod's next version reads its spec and status to reuse
// them — possibly on another goroutine while the transform runs, and
// whatever the transform left there. So with WithSharing a transform may
// change in place the pod's metadata only: assign its fields
// (pod.ManagedFields = nil) and add to or delete from its label and
// annotation maps, which are the pod's own. A spec or status it changes on
// a shallow copy of the pod that it returns (q := *pod; q.Status.Conditions
// = nil; return &q), and a slice's elements on a copy of the slice
// (TestTransformWithSharing).
//
// Most of WithCompaction's work is done while decoding, with or without
// the diet: protobuf pods are unmarshalled into slices (and label,
// annotation and node selector maps) allocated at their final size,
// counted from the bytes first (presize.go), instead of growing by
// doubling (and, with the diet, being copied to their exact length
// afterwards). With the diet that cuts what the decode allocates by a
// third, and it leaves the collector less garbage while a cache fills.
//
// What each step saves (heap per cached pod, by field class) and costs
// (CPU per pod) is measured in bench/results/wire.md, with the commands.
//
// # Performance
//
// bench/results/wire.md has the figures and the commands that reproduce
// them: BenchmarkWatchDecode (watch decode per event, wall and process CPU,
// against client-go's StreamWatcher and the single-core floor of a plain
// proto unmarshal; keep=true holds every decoded pod as a store does, so
// the collector's marking counts), BenchmarkListDecode, BenchmarkDiet,
// BenchmarkDietDecode and BenchmarkUpdateDecode (the diet's steps, in
// internal/diet), BenchmarkHeapPerPod, and the
// profile of a 100k-pod initial sync. bench/results/sync.md has the
// end-to-end sync against client-go.
//
// # Fuzzing
//
// The fuzz targets (FuzzProtoWatch, FuzzJSONWatch, FuzzCBORWatch,
// FuzzProtoList, FuzzJSONList, FuzzCBORList, FuzzDropManagedFieldsProto,
// FuzzDropManagedFieldsJSON, FuzzDropManagedFieldsCBOR,
// FuzzMetadataList, FuzzMetadataWatch (served over HTTP to
// the metadata client and to wire) here, FuzzSharePod in internal/diet,
// FuzzReadValue in internal/jsonwire) run their seed corpora (testdata/fuzz)
// with go test; `make fuzz` (hack/fuzz.sh) runs each for a few seconds.
package wire
