// Package rangelw restricts a cache.ListerWatcher to the hash ranges a
// replica owns: it asks the server to filter with ListOptions.ShardSelector
// (KEP-5866) and filters again on the client with shardselector.Hash, so
// that an informer built on it holds exactly the objects of its ranges
// whether or not the server applies the selector.
//
// # Server-side and client-side filtering
//
// Every List and Watch carries the selector. A server with the
// ShardedListAndWatch feature gate on returns only the objects in range
// and echoes the selector in a typed list's metadata.shardInfo; a server
// without it (the gate is alpha and off by default in 1.36, absent before)
// ignores the parameter and returns everything. The wrapper cannot learn
// which from a watch or from a metadata or custom resource list (those
// never echo shardInfo), so it always filters: each listed object and each
// Added, Modified or Deleted event whose hash lies outside the ranges is
// dropped. The cost is one FNV-1a of the uid per object; the saving of
// server-side filtering (each replica decodes about 1/N of the stream) is
// lost when the server ignores the selector, and the wrapper then says so:
//
//   - Mode reports Unknown until the first evidence, then Server (a typed
//     list echoed shardInfo) or Client (an object outside the ranges
//     arrived: the server did not filter). A list without shardInfo is no
//     evidence, since metadata and custom resource lists never carry it,
//     and while every object happens to lie in range there is nothing to
//     fall back from. Client is final: once seen, it is not revised.
//   - On the switch to Client the wrapper logs one line at info level
//     ("shardSelector not applied by the server; filtering client-side")
//     and calls Hooks.Fallback once.
//   - Hooks.Dropped counts the objects filtered out on the client.
//
// Bookmarks and Error events pass untouched, so the reflector's
// resourceVersion still advances when every event of a stretch is dropped,
// and WatchList's initial-events-end bookmark arrives. A uid never
// changes, so an object never moves in or out of range: no Modified event
// needs turning into an Added or Deleted. (With FieldNamespace the same
// holds, a namespace being immutable too.)
//
// # Concurrency
//
// A ListerWatcher is safe for concurrent use and must not be copied. Each
// Watch starts one goroutine, the filter goroutine of that watch, which
// forwards events until the inner watch ends or Stop is called; after
// Stop it exits without waiting for the consumer to read (it never blocks
// on a reader that has gone). Hooks are called from the goroutine calling
// List or from a filter goroutine, possibly concurrently; they must not
// block.
//
// # Usage
//
//	sel, _ := assignment.Selector(self)
//	lw, err := rangelw.New(rangelw.Config{
//		Inner:    cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything()),
//		Selector: sel,
//		Hooks:    rangelw.Hooks{Fallback: func() { fallbacks.Inc() }, Dropped: func(n int) { dropped.Add(float64(n)) }},
//	})
//	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
package rangelw
