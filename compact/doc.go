// Package compact is an opt-in store form for very large caches: each cached object is kept as a
// few hundred bytes the garbage collector does not scan, and decoded when it is read.
//
// An object's stored form, an *Object, is its encoding — protobuf for the Kubernetes types,
// JSON for unstructured objects and other types — written as a delta against the first encoding
// of its template (package internal/delta): the objects of one template, the pods of a
// ReplicaSet, differ only in names, ids, addresses and times, so a pod's kilobytes of protobuf
// become a few hundred bytes. A template is an object's namespace with its generateName, or with
// its controller's uid, or its namespace alone; the first object of a template is its reference
// and is stored whole, in the template. Templates are held weakly by the codec and live as long
// as an Object refers to them.
//
// A cached pod then costs the garbage collector a handful of pointers (the key, the Object, its
// bytes) instead of the ~70 objects of a decoded pod, and its bytes hold none (what that
// saves at 1M pods, and what it costs, is measured in bench/results/scale-1m.md). The price is paid on
// reads: each object
// a reader gets is decoded (a delta applied and the encoding decoded, a pod by wire.UnmarshalPod:
// tens of microseconds), unless it is among the Config.Decoded objects decoded last, which the codec keeps and
// shares between readers. GetByKey of a recent object is a map lookup; ByIndex of 1000 objects or
// a List of the cache decode as many objects (compact.BenchmarkRead states the costs).
//
// # Use
//
// The pipeline takes it as an option (pipeline.WithCompactStore, informers.WithCompactStore):
// the reflector's and the queues' transform encodes each object as it arrives — so the
// WatchList's initial objects are held encoded until they are stored — the cache stores the
// Objects, and the index functions, the handlers and the cache's readers get decoded objects
// (index.WithCodec). Events keep their semantics; a handler's old object in OnUpdate is decoded
// from the cache, so it is equal to the object the handler was given before, but not the same
// pointer unless it was still among the decoded objects. It is decoded like the new object
// (Codec.DecodeLike): a pod's spec or status whose encoding did not change is the new pod's, not
// decoded again (wire.UnmarshalPodLike), as the diet shares a pod with its previous version.
//
// # Memory limit
//
// The cache is small, but what passes through it is not: every event's objects are decoded for
// the handlers, and during the initial sync the decoded pods are garbage as fast as they arrive.
// With the Go runtime's default GOGC=100 alone, the heap grows to about twice what is live before
// each collection, and the process's peak resident set is several times its retained heap. Set a
// soft memory limit (GOMEMLIMIT, or runtime/debug.SetMemoryLimit) at about 90% of the memory the
// process may use, as for any container with a memory limit: the collector then runs as the
// limit nears instead of letting the heap double.
//
// # Contracts
//
//   - Decode(Encode(obj)) equals obj as apimachinery's semantic equality has it: protobuf does
//     not tell a nil slice or map from an empty one, and a resource.Quantity or a time is
//     normalised; for unstructured objects JSON keeps strings, booleans, int64 and float64
//     numbers, maps and slices as they are (a float64 with an integral value, say 1.0, comes back
//     as the int64 1). TestRoundTrip checks every type of client-go's scheme with fuzzed values.
//   - Encode never loses an object: one it cannot encode (another type, no metadata, an encoding
//     error) is returned as it is and stored as it is (Stats.Unencoded).
//   - Decoded objects are shared: readers and handlers must not modify them, as with any cache.
//   - Codec is safe for concurrent use. Encode takes the codec's template lock once per object;
//     Decode takes one of 16 locks of the decoded objects, for a map operation.
package compact
