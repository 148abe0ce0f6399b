package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/cache"
)

// Timer brackets the timed region of a workload; *testing.B implements it,
// and cmd/profile uses it to start and stop a profile.
type Timer interface {
	StartTimer()
	StopTimer()
}

// NopTimer is a Timer that does nothing.
type NopTimer struct{}

func (NopTimer) StartTimer() {}
func (NopTimer) StopTimer()  {}

// Metric is one reported value; Unit follows testing.B.ReportMetric ("events/s").
type Metric struct {
	Unit  string
	Value float64
}

// Result is what one run of a workload measured.
type Result struct {
	Elapsed time.Duration
	Metrics []Metric
}

func (r *Result) add(unit string, v float64) { r.Metrics = append(r.Metrics, Metric{unit, v}) }

// handlerTimeout bounds every wait for handlers, so a bug hangs a benchmark
// for minutes rather than forever. It is not a performance assertion.
const handlerTimeout = 10 * time.Minute

// Sync times an initial sync: from creating the informer until it has synced
// and each of handlers handlers has seen every initial add. It reports
// objects/s, heap-B/object (heap retained once synced, minus the fake API's
// watch buffer, per object), cache-B/object (the same minus the per-object
// copy of the Pod struct that client-go's reflector allocates when it lists,
// i.e. the informer's own structures per object), allocs/object, and
// cpu-ns/object with its split by role (see cpuProbe). The env
// must not be started; it is stopped again on return.
func (e *Env) Sync(t Timer, handlers int) (Result, error) {
	var res Result
	e.resetWatchCounts()
	var regs []Registration
	for range max(1, handlers) {
		regs = append(regs, Registration{Handler: NewHandler(0)})
	}
	heap0 := heapInUse()
	m0 := mallocs()
	probe := startCPU(t)
	t.StartTimer()
	start := time.Now()
	err := e.Start(regs...)
	res.Elapsed = time.Since(start)
	t.StopTimer()
	probe.end()
	defer e.Stop()
	if err != nil {
		return res, err
	}
	m1 := mallocs()
	heap1 := heapInUse()
	runtime.KeepAlive(e.informer)
	if err := e.CheckWatch(); err != nil {
		return res, err
	}
	n := float64(e.cfg.Objects)
	heap := float64(int64(heap1)-int64(heap0)-e.watchBufferBytes()) / n
	cacheBytes := heap
	if !e.cfg.WatchList {
		cacheBytes -= float64(podAlloc())
	}
	res.add("objects/s", n/res.Elapsed.Seconds())
	res.add("heap-B/object", heap)
	res.add("cache-B/object", cacheBytes)
	res.add("allocs/object", float64(m1-m0)/n)
	probe.report(&res, n, "object")
	return res, nil
}

// waitSynced waits for HasSynced without client-go's 100 ms polling period.
func waitSynced(inf cache.SharedIndexInformer) error { return waitFor(inf.HasSynced) }

// waitFor polls cond every 50 µs until it holds, or fails after handlerTimeout.
func waitFor(cond func() bool) error {
	deadline := time.Now().Add(handlerTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			return errTimeout
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// UpdateOptions says how Updates produces its batch and what it waits for.
type UpdateOptions struct {
	// Readers is the number of goroutines looping over ByIndex(namespace)
	// plus GetByKey meanwhile.
	Readers int
	// Live makes the producer write the batch while the informer drains it,
	// competing for the CPU as a reflector decoding a watch stream does; the
	// timed region runs from the first write. Otherwise the batch is written
	// behind the shut watch gate and only the informer's drain is timed.
	Live bool
	// Every waits until every handler has been called for every update;
	// otherwise for the last update of every key (all of them while each key
	// is updated at most once).
	Every bool
}

// Updates writes n updates (one per pod and round, the pods in turn) to the
// fake API and times the informer delivering them to handlers hs: behind the
// watch gate (the drain of a backlog) or live (see UpdateOptions). It reports
// events/s, deliveries/s (handler calls, all handlers), reads/s when there
// are readers, allocs/event (every allocation in the process during the
// timed region) when there are none, and cpu-ns/event (the whole process's
// CPU time in the timed region per event) with its split by role when
// BENCH_CPU_SPLIT_HZ is set (see cpuProbe). The env must be started with
// handlers hs.
func (e *Env) Updates(t Timer, n int, hs []*Handler, o UpdateOptions) (Result, error) {
	var res Result
	b := e.newBatch(n)
	upd := e.updates(n)
	e.commit(b)
	dones := make([]<-chan struct{}, len(hs))
	before := make([]int64, len(hs))
	for i, h := range hs {
		before[i] = h.Updates()
		if o.Every {
			dones[i] = h.armEvery(int64(n))
		} else {
			dones[i] = h.arm(b)
		}
	}
	if !o.Live {
		e.lw.gate.shut()
		defer e.lw.gate.lift()
		if err := e.produce(upd, nil, nil); err != nil {
			return res, err
		}
	}
	runtime.GC()
	stopReaders := startReaders(e.Indexer(), e.set, o.Readers)
	m0 := mallocs()
	probe := startCPU(t)
	t.StartTimer()
	start := time.Now()
	var err error
	if o.Live {
		err = e.produce(upd, nil, nil)
	} else {
		e.lw.gate.lift()
	}
	if err == nil {
		err = waitAll(dones)
	}
	res.Elapsed = time.Since(start)
	t.StopTimer()
	probe.end()
	m1 := mallocs()
	reads := stopReaders()
	if err != nil {
		return res, err
	}
	if err := e.CheckWatch(); err != nil {
		return res, err
	}
	var deliveries int64
	for i, h := range hs {
		deliveries += h.Updates() - before[i]
	}
	sec := res.Elapsed.Seconds()
	res.add("events/s", float64(n)/sec)
	res.add("deliveries/s", float64(deliveries)/sec)
	if o.Readers > 0 {
		res.add("reads/s", float64(reads)/sec)
	} else {
		res.add("allocs/event", float64(m1-m0)/float64(n))
	}
	probe.report(&res, float64(n), "event")
	if want := int64(n) * int64(len(hs)); deliveries != want {
		// Only possible when a key is updated more than once per batch and
		// overflow was merged per key: say so rather than hide it.
		res.add("coalesced-frac", 1-float64(deliveries)/float64(want))
	}
	return res, nil
}

// Latency writes n updates at eventsPerSec (0: as fast as possible) and
// reports, over every event, the time from just before the fake API's write
// (which pushes the event into the watch) until handler h was called: p50-ns,
// p99-ns, max-ns, and the achieved events/s. The pacing allows bursts of 1 ms
// worth of events, so that timer granularity does not lower the rate. The env
// must be started with h.
func (e *Env) Latency(t Timer, n int, h *Handler, eventsPerSec float64) (Result, error) {
	var res Result
	b := e.newBatch(n)
	upd := e.updates(n)
	e.commit(b)
	rec := newLatencyRec(b)
	h.lat.Store(rec)
	defer h.lat.Store(nil)
	done := h.arm(b)
	var lim *rate.Limiter
	if eventsPerSec > 0 {
		lim = rate.NewLimiter(rate.Limit(eventsPerSec), max(1, int(eventsPerSec/1000)))
	}
	runtime.GC()
	probe := startCPU(t)
	t.StartTimer()
	start := time.Now()
	err := e.produce(upd, lim, rec)
	produced := time.Since(start)
	if err == nil {
		err = waitAll([]<-chan struct{}{done})
	}
	res.Elapsed = time.Since(start)
	t.StopTimer()
	probe.end()
	if err != nil {
		return res, err
	}
	if err := e.CheckWatch(); err != nil {
		return res, err
	}
	lats := slices.DeleteFunc(slices.Clone(rec.lats), func(v int64) bool { return v < 0 })
	if len(lats) == 0 {
		return res, fmt.Errorf("bench: no latency recorded")
	}
	slices.Sort(lats)
	res.add("events/s", float64(n)/produced.Seconds())
	res.add("p50-ns", float64(lats[len(lats)/2]))
	res.add("p99-ns", float64(lats[len(lats)*99/100]))
	res.add("max-ns", float64(lats[len(lats)-1]))
	probe.report(&res, float64(n), "event")
	return res, nil
}

// Stalled starts the informer with two handlers, lets both see the initial
// list, then stalls one (its calls block) and writes n updates, each a newly
// allocated object as a decoder would produce. It waits until the other
// handler has seen the last event of every key, or until maxWait (a full
// ring under Block holds it up for good), then measures the heap with the
// stalled handler still stuck. It reports the normal handler's
// deliveries/s and done-frac (the share of events it saw), backlog-events
// (events still buffered in the fake API's watch channel, which the informer
// has not received: non-zero only when it stopped reading, as under Block)
// and heap-growth-B/event: heap growth per event written beyond the update
// objects in excludedBytes (one version per key, and the fake API's
// backlog), that is what the informer retains beyond one version per key.
// The env must not be started; it is stopped again on return.
func (e *Env) Stalled(t Timer, n int, maxWait time.Duration) (Result, error) {
	var res Result
	e.resetWatchCounts()
	normal, stalled := NewHandler(0), NewHandler(0)
	if err := e.Start(Registration{Handler: normal}, Registration{Handler: stalled}); err != nil {
		e.Stop()
		return res, err
	}
	defer e.Stop()
	defer stalled.release()
	b := e.newBatch(n)
	done := normal.arm(b)
	stalled.stall()
	heap0 := heapInUse()
	t.StartTimer()
	start := time.Now()
	var err error
	for i := range n {
		u := e.updateAt(i)
		if _, err = e.cluster.UpdateKeyed(u.key, u.pod); err != nil {
			break
		}
	}
	e.commit(b)
	if err == nil {
		select {
		case <-done:
		case <-time.After(maxWait - time.Since(start)):
		}
	}
	res.Elapsed = time.Since(start)
	t.StopTimer()
	if err != nil {
		return res, err
	}
	seen := normal.Updates()
	heap1 := heapInUse()
	// Read after the heap: an event the informer receives in between is
	// charged to it rather than excluded.
	backlog := e.cluster.Backlog()
	if err := e.CheckWatch(); err != nil {
		return res, err
	}
	res.add("deliveries/s", float64(seen)/res.Elapsed.Seconds())
	res.add("done-frac", float64(seen)/float64(n))
	res.add("backlog-events", float64(backlog))
	res.add("heap-growth-B/event", float64(int64(heap1)-int64(heap0)-e.excludedBytes(n, backlog))/float64(n))
	return res, nil
}

// excludedBytes returns the heap bytes that heap-growth-B/event does not
// charge to the informer, after a batch of n updates written one per key in
// turn (updateAt), of which the last backlog are still in the fake API's
// watch channel: one Pod struct (podAlloc) per update object that is
//
//   - the newest version of its key, held by the fake API's store: the last
//     min(n, objects) events;
//   - buffered in the watch channel, never received by the informer: the
//     last backlog events;
//   - the newest version of its key that the informer has received, which it
//     holds (in its cache, or queued for it) in place of the fake API's newest
//     while it lags behind: the last min(objects, n-backlog) events it
//     received.
//
// Since any objects consecutive events have distinct keys, these are the
// last min(n, backlog+objects) events. What is left is what the informer
// retains beyond one version per key: older versions a stalled handler pins,
// and its own structures. With the informer keeping up (backlog 0) this is
// the fake API's newest versions, which are also the informer's. The
// resourceVersion strings of the excluded objects (a few bytes each) and the
// channel's slots (allocated when the watch opened) are not subtracted.
// It assumes the batch is the env's first, so the versions the batch replaces
// are the pod set's, which stay live; with -benchtime 1x it is.
func (e *Env) excludedBytes(n, backlog int) int64 {
	return int64(min(n, backlog+e.cfg.Objects)) * podAlloc()
}

// produce writes upd to the fake API in order, optionally paced and stamped.
// It passes each update's precomputed key (UpdateKeyed), so that the
// producer, which shares the CPUs with the informer under test, does no more
// per event than the fake API's store and watch need.
func (e *Env) produce(upd []update, lim *rate.Limiter, rec *latencyRec) error {
	ctx := context.Background()
	for i, u := range upd {
		if lim != nil {
			if err := lim.Wait(ctx); err != nil {
				return err
			}
		}
		if rec != nil {
			rec.stamp(i)
		}
		if _, err := e.cluster.UpdateKeyed(u.key, u.pod); err != nil {
			return err
		}
	}
	return nil
}

func waitAll(dones []<-chan struct{}) error {
	timeout := time.After(handlerTimeout)
	for _, d := range dones {
		select {
		case <-d:
		case <-timeout:
			return errTimeout
		}
	}
	return nil
}

// startReaders starts n reader goroutines, each looping over one
// ByIndex(namespace) and one GetByKey, until the returned function is called;
// it returns the number of loops done.
func startReaders(ix cache.Indexer, set *podSet, n int) (stop func() int64) {
	var (
		quit  atomic.Bool
		total atomic.Int64
		wg    sync.WaitGroup
	)
	for r := range n {
		wg.Go(func() { // reader goroutine
			var reads, found int64
			for i := r * 7919; !quit.Load(); i++ {
				objs, err := ix.ByIndex(cache.NamespaceIndex, set.namespaces[i%len(set.namespaces)])
				if err != nil {
					panic(err)
				}
				if _, ok, _ := ix.GetByKey(set.keys[(i*31)%len(set.keys)]); ok {
					found++
				}
				found += int64(len(objs))
				reads++
			}
			total.Add(reads)
			runtime.KeepAlive(found)
		})
	}
	return func() int64 {
		quit.Store(true)
		wg.Wait()
		return total.Load()
	}
}
