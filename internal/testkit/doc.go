// Package testkit is the test kit shared by the module's tests (and by the
// benchmarks' and tools' tests): what they used to copy from each other.
//
//   - Recorder: a cache.ResourceEventHandler that logs every call per key and
//     checks, as calls arrive, what every informer must keep: per key, calls
//     never overlap (for a serial handler, no calls do), an add comes only for
//     an absent key and an update or delete only for a present one, an
//     update's old object is the one the handler was last given, and
//     resourceVersions only move forward. Tests wait on it (WaitFor,
//     WaitEvent, WaitKnown) and compare it with the server (Diff).
//   - LW: a cache.ListerWatcher wrapper that counts LIST, WATCH and WatchList
//     requests and 410 answers, fails chosen watches, rewrites lists, and cuts
//     the informer off the server (Disconnect, Reconnect). It keeps the
//     wrapped ListerWatcher's WatchList choice. The fake cluster to wrap is
//     package internal/fakeapi, whose ListerWatcher honours WatchList (the
//     initial events, then the k8s.io/initial-events-end bookmark) or opts out
//     of it (IsWatchListSemanticsUnSupported), per its Config.WatchList;
//     ListModes runs a test under both.
//   - Impl: client-go's informer or ours behind one constructor signature, so
//     that one behavioural test runs against both (ClientGo here; ours in
//     package testkit/ours, kept apart so that package pipeline's own tests
//     can use this one without an import cycle).
//   - Eventually and EventuallyWhy poll a condition; Run runs an informer
//     until the test ends; Goroutines and CheckLeaks find goroutines that
//     outlive what started them.
//
// Every wait ends as soon as its condition holds; the deadline (Guard) only
// turns a hang into a failure and is never a timing assertion.
package testkit
