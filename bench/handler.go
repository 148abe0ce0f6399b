package bench

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Handler is the benchmarks' cache.ResourceEventHandler. It counts calls with
// atomics, so it is safe for AddParallelEventHandler; optionally it burns a
// fixed amount of CPU per update, records each update's latency, or stalls
// while its gate is closed. Build it with NewHandler; it must not be copied.
type Handler struct {
	work int // spin iterations per update (see Work)

	adds     atomic.Int64
	wantAdds atomic.Int64
	addsDone atomic.Pointer[chan struct{}]

	updates    atomic.Int64 // update calls, ever
	finals     atomic.Int64 // calls for the last event of a key in the armed batch
	finalGen   atomic.Int64
	wantFinals atomic.Int64
	done       atomic.Pointer[chan struct{}]

	everyWant atomic.Int64 // update calls, ever, at which everyDone closes
	everyDone atomic.Pointer[chan struct{}]

	lat  atomic.Pointer[latencyRec]
	gate atomic.Pointer[chan struct{}] // non-nil: closed gate; calls wait on it
}

var _ cache.ResourceEventHandler = (*Handler)(nil)

// NewHandler returns a handler that does work spin iterations of CPU work per
// update (0 for none; see Work).
func NewHandler(work int) *Handler {
	h := &Handler{work: work}
	h.finalGen.Store(math.MaxInt64)
	h.everyWant.Store(math.MaxInt64)
	return h
}

// OnAdd implements cache.ResourceEventHandler.
func (h *Handler) OnAdd(any, bool) {
	if h.adds.Add(1) == h.wantAdds.Load() {
		close(*h.addsDone.Load())
	}
}

// OnUpdate implements cache.ResourceEventHandler.
func (h *Handler) OnUpdate(_, newObj any) {
	if g := h.gate.Load(); g != nil {
		<-*g
	}
	if h.work > 0 {
		spin(h.work)
	}
	gen := newObj.(*corev1.Pod).Generation
	if r := h.lat.Load(); r != nil {
		r.record(gen)
	}
	if h.updates.Add(1) == h.everyWant.Load() {
		close(*h.everyDone.Load())
	}
	if gen >= h.finalGen.Load() && h.finals.Add(1) == h.wantFinals.Load() {
		close(*h.done.Load())
	}
}

// OnDelete implements cache.ResourceEventHandler.
func (h *Handler) OnDelete(any) {}

// Updates returns the number of update calls so far.
func (h *Handler) Updates() int64 { return h.updates.Load() }

// expectAdds arms the initial-add count waited for by waitAdds. Call it before
// the informer starts.
func (h *Handler) expectAdds(n int64) {
	ch := make(chan struct{})
	h.adds.Store(0)
	h.addsDone.Store(&ch)
	h.wantAdds.Store(n)
}

func (h *Handler) waitAdds(timeout time.Duration) error {
	select {
	case <-*h.addsDone.Load():
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("bench: handler saw %d of %d initial adds after %v", h.adds.Load(), h.wantAdds.Load(), timeout)
	}
}

// arm prepares the handler for a batch; the returned channel is closed once
// it has seen the last event of every key in the batch. Call it before the
// batch's first write: the write synchronizes before the handler's calls.
func (h *Handler) arm(b batch) <-chan struct{} {
	ch := make(chan struct{})
	h.finals.Store(0)
	h.done.Store(&ch)
	h.wantFinals.Store(b.finals)
	h.finalGen.Store(b.finalGen)
	return ch
}

// armEvery prepares the handler for a batch of n updates all of which it must
// see; the returned channel is closed after n more update calls. Call it
// before the batch's first write.
func (h *Handler) armEvery(n int64) <-chan struct{} {
	ch := make(chan struct{})
	h.everyDone.Store(&ch)
	h.everyWant.Store(h.updates.Load() + n)
	return ch
}

// stall closes the handler's gate: update calls block until release.
func (h *Handler) stall() {
	ch := make(chan struct{})
	h.gate.Store(&ch)
}

// release opens the gate and lets blocked calls go on.
func (h *Handler) release() {
	if g := h.gate.Swap(nil); g != nil {
		close(*g)
	}
}

// latencyRec holds, per event of a batch, the time it was written to the fake
// API and the time from then until the handler was called. Each index is
// written by the producer before the write and by one handler call after it.
type latencyRec struct {
	t0       time.Time
	firstGen int64
	stamps   []int64 // ns since t0 at the write
	lats     []int64 // ns from the write to the handler call; -1: not seen
}

func newLatencyRec(b batch) *latencyRec {
	r := &latencyRec{t0: time.Now(), firstGen: b.firstGen, stamps: make([]int64, b.n), lats: make([]int64, b.n)}
	for i := range r.lats {
		r.lats[i] = -1
	}
	return r
}

func (r *latencyRec) stamp(i int) { r.stamps[i] = int64(time.Since(r.t0)) }

func (r *latencyRec) record(gen int64) {
	if i := gen - r.firstGen; i >= 0 && i < int64(len(r.lats)) {
		r.lats[i] = int64(time.Since(r.t0)) - r.stamps[i]
	}
}

// Work returns the number of spin iterations that take about d of CPU on
// this machine, calibrated once per process (the fastest of several
// trials, so that a noisy neighbour inflates the work rather than hiding it).
func Work(d time.Duration) int {
	return int(float64(d) / spinNanos())
}

var spinNanos = sync.OnceValue(func() float64 {
	const n = 200_000
	best := time.Duration(math.MaxInt64)
	for range 15 {
		start := time.Now()
		spin(n)
		best = min(best, time.Since(start))
	}
	return float64(best) / n
})

var spinSink atomic.Uint64

// spin does n rounds of xorshift: pure CPU work, no memory traffic.
func spin(n int) {
	x := uint64(n) | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	spinSink.Store(x)
}

var errTimeout = errors.New("bench: timed out waiting for handlers")
