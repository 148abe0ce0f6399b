package bench

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/watch"
)

// gate holds back the events of every watch it guards while it is shut. The
// Updates workload shuts it, writes its whole batch to the fake API (which
// buffers the events per watch), and lifts it when the timer starts: the
// informer then drains the batch at its own pace, and the benchmark's
// producer, which would otherwise take CPU from the informer under test for
// every event, is not part of the measurement. Open by default.
type gate struct {
	mu   sync.Mutex                    // serialises shut and lift
	open atomic.Pointer[chan struct{}] // closed while the gate is open
}

func newGate() *gate {
	g := &gate{}
	ch := make(chan struct{})
	close(ch)
	g.open.Store(&ch)
	return g
}

// shut holds back events from now on.
func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-*g.open.Load():
		ch := make(chan struct{})
		g.open.Store(&ch)
	default: // already shut
	}
}

// lift lets events through again.
func (g *gate) lift() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-*g.open.Load():
	default:
		close(*g.open.Load())
	}
}

// pass waits until the gate is open; false if stop is closed first.
func (g *gate) pass(stop <-chan struct{}) bool {
	select {
	case <-*g.open.Load():
		return true
	case <-stop:
		return false
	}
}

// gatedWatch forwards the events of a watch through a gate. Its forwarding
// goroutine plays the part of client-go's StreamWatcher, which decodes each
// event from the HTTP stream and hands it to the reflector: one goroutine
// handoff per event, the same for every implementation.
type gatedWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

// gatedWatchBuffer is the forwarder's channel capacity: enough to batch the
// handoffs, small against the fake API's own buffer.
const gatedWatchBuffer = 1024

func newGatedWatch(inner watch.Interface, g *gate) *gatedWatch {
	w := &gatedWatch{inner: inner, out: make(chan watch.Event, gatedWatchBuffer), stop: make(chan struct{})}
	go func() { // forwarder goroutine: owns out
		defer close(w.out)
		for ev := range inner.ResultChan() {
			if !g.pass(w.stop) {
				return
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *gatedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *gatedWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}
