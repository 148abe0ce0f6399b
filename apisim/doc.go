// Package apisim is an in-process simulated Kubernetes API server for pods,
// served over HTTP on loopback, so that informers run through a real
// client-go REST client — HTTP, content negotiation, decoding, reflector,
// pager — exactly as against a cluster. It feeds the load generator (client-go's
// informer and ours side by side on 100k pods) and the tests.
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
//
// NewPod builds realistic pods (≈9–10 KB of JSON, 14–17 KB with
// managedFields), deterministic per seed.
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
// GET /api/v1/pods and /api/v1/namespaces/{ns}/pods list or, with watch=true
// (or 1), watch; /api/v1/namespaces/{ns}/pods/{name} gets one pod; /api,
// /api/v1, /apis and /version answer discovery; /healthz, /livez, /readyz.
// Other paths are 404, other methods 405, all errors metav1.Status objects
// with the API server's codes and reasons.
//
// LIST honours limit/continue (the token carries the snapshot RV and the
// next key; 410 Expired once that RV is compacted), resourceVersion and
// resourceVersionMatch (unset: most recent; "0": any, served current;
// NotOlderThan; Exact, and the legacy "RV with limit means Exact"; an RV the
// store has not reached waits ResourceVersionWait and then fails with the
// "Too large resource version" 504), labelSelector, and fieldSelector on
// metadata.name, metadata.namespace, spec.nodeName, spec.restartPolicy,
// spec.schedulerName, spec.serviceAccountName, spec.hostNetwork,
// status.phase, status.podIP and status.nominatedNodeName (others: 400).
// remainingItemCount is set on unfiltered pages. Pages are consistent
// snapshots: the store is a persistent B+tree, so a list's snapshot is one
// pointer; paginated snapshots are cached (Config.ListSnapshots) and
// otherwise rebuilt by undoing history.
//
// WATCH streams events after resourceVersion; "" or "0" first sends the
// current state as synthetic ADDED events. sendInitialEvents=true with
// resourceVersionMatch=NotOlderThan (WatchList, client-go's default since
// 1.35) sends the state, then a BOOKMARK annotated
// k8s.io/initial-events-end: "true" at the snapshot's RV, then live events.
// allowWatchBookmarks gets BOOKMARKs every BookmarkInterval. timeoutSeconds
// ends the watch cleanly, capped at MaxWatchTimeout. A watch from a
// compacted RV gets an ERROR event with a 410 Expired Status, as from the
// API server's watch cache. With a selector, an object moving into the
// selection is delivered as ADDED and one moving out as DELETED.
//
// Encodings: application/json and application/vnd.kubernetes.protobuf,
// negotiated from Accept with q-values (*/* means JSON; as=Table and other
// transformations are not served). Watch responses are
// "application/json" (concatenated JSON WatchEvents) or
// "application/vnd.kubernetes.protobuf;stream=watch" (length-delimited
// frames of meta/v1 WatchEvent holding the "k8s\x00"-enveloped object). The
// framing is written by hand so that an object's bytes are reused without
// copying; tests check it is byte-identical to apimachinery's serializers.
//
// # Design
//
// Writers (Create, Update, Modify, Delete, Load) serialize on one mutex for
// microseconds: they derive a new tree, put the event into the history
// ring, publish the new state (tree + RV) with one atomic store, and wake
// the watchers. Everything else reads without locks: lists and gets load the
// current state; each watch request's goroutine reads the history ring from
// its cursor and writes to its own connection, so no lock is held while
// writing to a socket and a slow client blocks nobody.
//
// Each object version is encoded at most once per content type, lazily, by
// whichever request needs it first (per-object mutex), and those bytes are
// reused by every list and watcher. Large lists and initial event streams
// encode missing items on all cores ahead of the writer. A superseded
// version drops its decoded *Pod once its protobuf encoding exists, so
// history costs byte slices, not pointer-rich objects the GC must scan.
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
// waits. Lock order: store.mu, then watcher.mu; snapshotCache.mu and
// object.encMu are leaves.
//
// # Differences from the API server
//
// Writes are in-process only (HTTP POST/PUT/PATCH/DELETE get 405). An update
// that changes nothing still makes a new version. Responses are never
// gzip-compressed. Limit is honoured for resourceVersion="0" too. There is
// no authentication, admission, defaulting or validation of pod contents.
//
// # client-go in tests
//
// client-go v0.37 reads feature gates from KUBE_FEATURE_<Name> environment
// variables; tests switch WatchList with
// k8s.io/client-go/features/testing.SetFeatureDuringTest(t,
// clientfeatures.WatchListClient, on) and check via Stats that the reflector
// really listed (off) or streamed (on).
package apisim
