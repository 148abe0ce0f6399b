// Package bench runs client-go v0.37.2's SharedIndexInformer and shardinformer
// on identical workloads in the same `go test -bench` invocation, so that
// benchstat can compare them:
//
//	bench/run.sh                       # what `make bench` runs; writes bench/results/
//	BENCH_OBJECTS=2000 go test -run '^$' -bench . -benchtime 1x -cpu 2 ./bench/   # quick check
//	benchstat -col /impl bench/results/raw.txt
//
// Sub-benchmarks are named impl=client-go/... and impl=shardinformer/... with
// the same key=value segments after that (objects=100000/handlers=4/readers=0),
// so `benchstat -col /impl` puts the two side by side. Each benchmark op is one
// whole workload run (a sync, or a batch of updates timed end to end), so the
// suite runs with -benchtime 1x and -count for repetitions; setup (building
// pods, filling the fake API, the informer's initial sync for the update
// workloads) happens with the timer stopped. The targets are for GOMAXPROCS=2
// (-cpu 2). Nothing here fails on timing.
//
// # Workloads
//
//   - BenchmarkInitialSync: from creating the informer until HasSynced and
//     every handler (handlers=1 and 4) has seen every initial add. Run with
//     LIST+WATCH (list=list: the fake API opts out of WatchList through
//     IsWatchListSemanticsUnSupported) and with WatchList (list=watchlist: the
//     initial list streams as watch events ending in the initial-events-end
//     bookmark). Reports objects/s, allocs/object, heap-B/object and
//     cache-B/object (below).
//   - BenchmarkUpdates: BENCH_UPDATES updates (default = objects; run.sh
//     uses 5 × objects), the cached pods in turn, timed until every handler
//     has seen the last event of every updated key; handlers=1 and 4 with
//     readers=0, and handlers=1 with readers=1 and 4 goroutines looping over
//     ByIndex(namespace) plus GetByKey. Each in two producer modes:
//     producer=gate writes the batch to the fake API with the watch gate shut
//     (see gate.go) and times from lifting the gate: the informer's drain rate
//     of a backlog, the producer taking no CPU from it; producer=live times
//     from the first write while the producer goes on writing as the informer
//     drains, as a reflector decoding a watch stream does, so the two compete
//     for the CPU (the realistic case; the same producer for both
//     implementations). Reports events/s, deliveries/s (handler calls over
//     all handlers), reads/s (one ByIndex + one GetByKey each) and
//     allocs/event (readers=0 only).
//   - BenchmarkCPUHandler: one handler burning 20 µs of CPU per event
//     (calibrated spin loop, not a sleep): client-go's single handler
//     goroutine against AddParallelEventHandler with GOMAXPROCS workers,
//     BENCH_CPU_UPDATES updates (default two per pod), timed until the handler
//     has been called for every one of them (a coalescing informer would
//     never finish); producer=gate and producer=live as above.
//   - BenchmarkStalledHandler: a handler blocked for the whole run beside a
//     normal one; BENCH_STALL_UPDATES (default 2 × objects) updates, each a
//     newly allocated object as a decoder would produce. Reports the normal
//     handler's deliveries/s and done-frac (share of events it saw within
//     BENCH_STALL_WAIT_MS; under Block it is held up for good once the stalled
//     handler's rings fill), backlog-events (events still in the fake API's
//     watch channel at the end) and heap-growth-B/event (below). client-go
//     runs as policy=grow (its listeners' buffers are unbounded);
//     shardinformer runs each FullRingPolicy.
//   - BenchmarkLatency: time from just before the fake API's write (which
//     pushes the event into the watch channel) until the handler is called,
//     p50-ns/p99-ns/max-ns over every event, at BENCH_RATE events/s (default
//     50000, paced with golang.org/x/time/rate allowing bursts of 1 ms worth
//     of events) and at saturation (rate=max). The handler finds each event's
//     write time in a side table indexed by the object's Generation.
//   - BenchmarkDecodeSync: the one benchmark with HTTP and decoding. An
//     initial sync of BENCH_DECODE_OBJECTS (default 10000) realistic pods with
//     managedFields from apisim in this process (protobuf, encoded before the
//     timed region), for each core on client-go's decoder, on the wire
//     decoder and on wire+diet, with LIST+WATCH and with WatchList:
//     objects/s, heap-B/object, allocs/object and cpu-ns/object (the whole
//     process, the server's writes included). It splits a gain into the
//     decoder's share and the core's (issue 11).
//   - BenchmarkSyncParts: the same pods, the parts of that sync timed alone:
//     part=serve, apisim writing a LIST or WatchList and a client reading its
//     bytes over loopback without decoding (B/object, ns/object); part=decode,
//     client-go's watch decoder on one goroutine over those WatchList bytes
//     in memory, dropping each pod (keep=false, as replaying decode
//     benchmarks do) or keeping all (keep=true, as a store does: the heap
//     grows by every pod, so GC marking and fresh pages are paid too).
//
// Micro-benchmarks of the parts (ring, fifo, index) and package wire's
// decoding benchmarks live in those packages; run.sh runs them too and
// bench/summary puts the wire figures beside client-go's decoder.
//
// # Feed and objects
//
// Except in BenchmarkDecodeSync, input comes from internal/fakeapi with
// DeepCopy off: both informers receive the very same pre-built *corev1.Pod
// pointers, so decoding is excluded and the input is identical. Pods are realistic (labels, annotations, owner,
// two containers with env, resources, probes, status; see apisim.NewPod), built once
// per process; updates are shallow copies (their own ObjectMeta and status
// structs, shared maps and slices) numbered through Generation. Under the
// default full-ring policy every update reaches every handler while its
// backlog is within budget, so deliveries = events × handlers; if that ever
// differs, a coalesced-frac metric says by how much.
//
// The producer shares the CPUs with the informer under test in the live mode
// (0.35 to 0.5 µs per event at 100k objects: the fake API's store, the
// resourceVersion, the channel send; on two cores that is a large share, the
// same for both implementations). The gate mode takes it out: the batch is
// written before the timed region and the drain is timed. Every watch passes
// through a forwarding goroutine (gate.go) standing in for client-go's
// StreamWatcher, one handoff per event for both. Latency and StalledHandler
// write during the timed region, paced or not. Producers write with fakeapi's
// UpdateKeyed and keys computed once per process, laid out back to back in
// memory, so that the fake API does not read each object's cold strings to
// build its key.
//
// The fake API's watch buffer is sized for every event of a run, so a watch is
// never closed for lagging, and its history is kept at one event (its
// trimming copies the history on every write). A wrapper around its
// ListerWatcher counts lists and watches: any relist or re-watch fails the
// benchmark, since it would invalidate the numbers.
//
// # Memory metrics
//
// heap-B/object is the live heap after the sync (two runtime.GC, then
// runtime.ReadMemStats) minus the live heap before it, minus the fake API's
// watch channel buffer, divided by objects. Under list=list it includes the
// copy of each Pod struct that client-go's reflector allocates from the list
// (ExtractListWithAlloc); cache-B/object subtracts that too, leaving what the
// informer's own structures (store, indexes, queues, rings) cost per object.
// The objects themselves are shared with the fake API and not counted.
//
// heap-growth-B/event (stalled handler) is what the informer retains per
// event written beyond one version per key: live heap with the handler still
// stalled minus live heap before the updates, minus one Pod struct per update
// object that is the newest version of its key (held by the fake API's store
// for every implementation), the newest version of its key that the informer
// has received, or still buffered in the fake API's watch channel: since
// consecutive updates go to the keys in turn, that is min(events,
// backlog-events + objects) objects (Env.excludedBytes). An informer that
// keeps reading its watch (client-go, Coalesce, Grow) has no backlog, so what
// remains is the old versions its stalled handler pins plus its structures.
// Under Block the informer stops reading once its queues are full and the
// rest of the events wait in the fake API's channel (sized to hold every
// event, where a real API server would close the watch): that is the fake
// API's memory, not the informer's. A policy with bounded memory shows
// B/event falling as BENCH_STALL_UPDATES grows; unbounded growth shows a
// constant. Updates here are about 1.3 KB shallow copies; with decoded
// objects (~10 KB) every pinned old version costs several times more.
//
// allocs/event and allocs/object count every allocation in the process during
// the timed region, the fake API's included where it writes then (the same for
// both implementations).
//
// # CPU metrics
//
// cpu-ns/event (Updates, CPUHandler, Latency) and cpu-ns/object (InitialSync)
// are the process's user+system CPU time (getrusage) over the timed region,
// divided by its events: less disturbed than wall time by other processes on
// a shared machine, and the figure that bounds throughput when the cores are
// busy (Latency's at a fixed rate: what a quiet stream costs per event).
// With BENCH_CPU_SPLIT_HZ=<rate> (100 is the runtime's default rate) each
// timed region also runs under a CPU profile (runtime/pprof) and every sample
// is charged to a role by its stack (cpusplit.go), reported as
// <role>-ns/event: producer (the fake API and the forwarding goroutine, the
// same for both implementations), reflector (client-go's Reflector reading the
// watch), informer (the implementation under test: client-go's DeltaFIFO,
// indexer and processor, or our store, queues, partitions, rings and
// workers), handler, readers, gc, sched (the scheduler parking and waking
// goroutines, futexes, idle Ps looking for work) and other. The innermost
// frame that belongs to a role wins, so a wake-up inside a channel send is
// sched and a map write inside a queue is the informer's. The profiler's own
// allocations then count in allocs/event. BENCH_CPU_PROFILE_DIR=<dir> also
// writes each of those profiles there, named after the benchmark, for
// `go tool pprof`. Since producer and reflector do the same work per event
// for both implementations, P, client-go's producer+reflector ns/event, bounds
// any informer at GOMAXPROCS/P events/s on saturated cores; against
// client-go's events/s that is the ceiling of the ratio (C/P, with C
// client-go's cpu-ns/event, when client-go itself keeps the cores busy).
package bench
