package ratelimit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// queue is the interface every behavioural test drives: client-go's.
type queue = workqueue.TypedRateLimitingInterface[string]

// advance lets d pass in the synctest bubble and waits until every goroutine
// of the bubble (the queues' delay goroutines among them) is blocked again.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

type getResult struct {
	key      string
	shutdown bool
}

// getAsync calls q.Get in a new goroutine and delivers the result.
func getAsync(q queue) <-chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		k, shutdown := q.Get()
		ch <- getResult{k, shutdown}
	}()
	return ch
}

// expectBlocked fails if the Get behind ch has returned.
func expectBlocked(t *testing.T, ch <-chan getResult) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		t.Fatalf("Get returned %q, shutdown=%v; want it still blocked", r.key, r.shutdown)
	default:
	}
}

// expectResult fails unless the Get behind ch has returned want.
func expectResult(t *testing.T, ch <-chan getResult, want getResult) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		if r != want {
			t.Fatalf("Get = %q, shutdown=%v; want %q, %v", r.key, r.shutdown, want.key, want.shutdown)
		}
	default:
		t.Fatalf("Get still blocked; want %q, shutdown=%v", want.key, want.shutdown)
	}
}

// mustGet takes a key that must be ready now.
func mustGet(t *testing.T, q queue, want string) {
	t.Helper()
	if q.Len() == 0 {
		t.Fatalf("Get: want %q, but nothing is ready", want)
	}
	if k, shutdown := q.Get(); shutdown || k != want {
		t.Fatalf("Get = %q, shutdown=%v; want %q", k, shutdown, want)
	}
}

// drainReady takes every ready key, calls Done on it and returns them in
// order.
func drainReady(t *testing.T, q queue) []string {
	t.Helper()
	var got []string
	for q.Len() > 0 {
		k, shutdown := q.Get()
		if shutdown {
			t.Fatalf("Get returned shutdown with %d ready", q.Len())
		}
		got = append(got, k)
		q.Done(k)
	}
	return got
}

// check verifies the queue's internal invariants. It must be called while
// no other goroutine uses the queue.
func (q *Queue[K]) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	q.out.Lock()
	q.fifo.Lock()
	inRing := map[K]int{}
	for _, sl := range q.readySlots() {
		if inRing[sl.key]++; inRing[sl.key] > 1 {
			bad("key %v twice in the ready FIFO", sl.key)
		}
		if h := q.hash(sl.key); sl.hash != h {
			bad("key %v in the FIFO with hash %#x, want %#x", sl.key, sl.hash, h)
		}
	}
	if p, r := q.out.popped.Load(), q.fifo.pushed; r-p != uint64(len(inRing)) {
		bad("pushed %d - popped %d != %d keys in the FIFO", r, p, len(inRing))
	}
	if p, e := q.out.popped.Load(), q.out.end.Load(); e-p != uint64(q.out.ready.len()) {
		bad("out: end %d - popped %d != %d keys", e, p, q.out.ready.len())
	}
	if n := q.fifo.n.Load(); n != int64(q.fifo.ready.len()) {
		bad("fifo.n %d, ready %d", n, q.fifo.ready.len())
	}
	if q.fifo.sleepers != 0 || q.fifo.waking != 0 || q.fifo.spinning {
		bad("idle queue with sleepers %d, waking %d, spinning %v", q.fifo.sleepers, q.fifo.waking, q.fifo.spinning)
	}
	q.fifo.Unlock()
	q.out.Unlock()

	ready, processing := 0, 0
	for i := range q.shards {
		s := &q.shards[i]
		s.mu.Lock()
		for k, e := range s.keys.all() {
			if want := q.hash(k) >> (64 - shardBits); want != uint64(i) {
				bad("key %v in shard %d, want %d", k, i, want)
			}
			if !q.queued(e) {
				processing++
				if inRing[k] != 0 {
					bad("key %v in flight and in the FIFO", k)
				}
				continue
			}
			ready++
			if inRing[k] != 1 {
				bad("ready key %v is %d times in the FIFO", k, inRing[k])
			}
			if e.dirty {
				bad("ready key %v marked dirty", k)
			}
		}
		s.mu.Unlock()
	}
	if ready != len(inRing) {
		bad("%d ready keys, %d in the FIFO", ready, len(inRing))
	}
	if n := q.inFlight(); n != uint64(processing) {
		bad("inFlight %d, %d keys in flight", n, processing)
	}

	q.delay.Lock()
	h := &q.delay.heap
	if len(h.byKey) != len(h.items) {
		bad("delay heap: %d items, %d in byKey", len(h.items), len(h.byKey))
	}
	for i, e := range h.items {
		if e.idx != i {
			bad("delay heap: item %d has idx %d", i, e.idx)
		}
		if h.byKey[e.key] != e {
			bad("delay heap: byKey[%v] is not item %d", e.key, i)
		}
		if i > 0 && h.less(i, (i-1)/2) {
			bad("delay heap: item %d below its parent", i)
		}
	}
	if q.delay.stopped && h.len() > 0 {
		bad("shut down with %d delayed keys", h.len())
	}
	q.delay.Unlock()
	return errors.Join(errs...)
}

// recProvider is a workqueue.MetricsProvider that records every call.
type recProvider struct {
	mu      sync.Mutex
	metrics map[string]*recMetric // by kind: depth, adds, latency, ...
	names   map[string]string     // kind -> name it was created with
}

// recMetric records the calls to one metric.
type recMetric struct {
	p      *recProvider
	value  float64   // gauge or counter value
	values []float64 // gauge value after each change
	obs    []float64 // histogram observations
	sets   []float64 // settable gauge values
}

func newRecProvider() *recProvider {
	return &recProvider{metrics: map[string]*recMetric{}, names: map[string]string{}}
}

func (p *recProvider) get(kind string) *recMetric {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.metrics[kind]
	if m == nil {
		m = &recMetric{p: p}
		p.metrics[kind] = m
	}
	return m
}

// snapshot returns a copy of the record of kind.
func (p *recProvider) snapshot(kind string) recMetric {
	m := p.get(kind)
	p.mu.Lock()
	defer p.mu.Unlock()
	return recMetric{value: m.value, values: append([]float64(nil), m.values...),
		obs: append([]float64(nil), m.obs...), sets: append([]float64(nil), m.sets...)}
}

func (p *recProvider) create(kind, name string) *recMetric {
	m := p.get(kind)
	p.mu.Lock()
	p.names[kind] = name
	p.mu.Unlock()
	return m
}

func (m *recMetric) add(d float64) {
	m.p.mu.Lock()
	m.value += d
	m.values = append(m.values, m.value)
	m.p.mu.Unlock()
}
func (m *recMetric) Inc() { m.add(1) }
func (m *recMetric) Dec() { m.add(-1) }
func (m *recMetric) Set(v float64) {
	m.p.mu.Lock()
	m.sets = append(m.sets, v)
	m.p.mu.Unlock()
}
func (m *recMetric) Observe(v float64) {
	m.p.mu.Lock()
	m.obs = append(m.obs, v)
	m.p.mu.Unlock()
}

func (p *recProvider) NewDepthMetric(n string) workqueue.GaugeMetric { return p.create("depth", n) }
func (p *recProvider) NewAddsMetric(n string) workqueue.CounterMetric {
	return p.create("adds", n)
}
func (p *recProvider) NewLatencyMetric(n string) workqueue.HistogramMetric {
	return p.create("latency", n)
}
func (p *recProvider) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	return p.create("work", n)
}
func (p *recProvider) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.create("unfinished", n)
}
func (p *recProvider) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.create("longest", n)
}
func (p *recProvider) NewRetriesMetric(n string) workqueue.CounterMetric {
	return p.create("retries", n)
}

// readySlots returns the ready FIFO's slots, oldest first.
// REQUIRES: out's and fifo's locks held.
func (q *Queue[K]) readySlots() []slot[K] {
	var sls []slot[K]
	for _, r := range []*ring[slot[K]]{&q.out.ready, &q.fifo.ready} {
		for i := range r.len() {
			sls = append(sls, r.at(i))
		}
	}
	return sls
}
