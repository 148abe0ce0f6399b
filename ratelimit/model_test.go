package ratelimit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/time/rate"
)

// state is where a key is in the model's life cycle; absent means idle.
type state uint8

const (
	stateReady state = iota + 1
	stateProcessing
	stateProcessingDirty
)

// model is the reference the queue is checked against: a map of key states,
// a slice for the ready order and a map of delayed keys, with time advanced
// only by the test. It follows client-go's workqueue semantics.
type model struct {
	now      time.Time
	state    map[string]state // absent: idle
	ready    []string
	delayed  map[string]modelDelay
	failures map[string]int
	seq      int
	shutDown bool
}

type modelDelay struct {
	due time.Time
	seq int
}

const (
	modelBase = 100 * time.Millisecond
	modelMax  = 800 * time.Millisecond
)

func newModel() *model {
	return &model{now: time.Now(), state: map[string]state{}, delayed: map[string]modelDelay{}, failures: map[string]int{}}
}

func (m *model) add(k string) {
	switch m.state[k] {
	case 0:
		m.state[k] = stateReady
		m.ready = append(m.ready, k)
	case stateProcessing:
		m.state[k] = stateProcessingDirty
	}
}

func (m *model) addAfter(k string, d time.Duration) {
	if d <= 0 {
		m.add(k)
		return
	}
	due := m.now.Add(d)
	if old, ok := m.delayed[k]; ok && !due.Before(old.due) {
		return
	}
	m.seq++
	m.delayed[k] = modelDelay{due, m.seq}
}

// step advances time and makes due keys ready in (due, seq) order.
func (m *model) step(d time.Duration) {
	m.now = m.now.Add(d)
	var due []string
	for k, e := range m.delayed {
		if !e.due.After(m.now) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b string) int {
		ea, eb := m.delayed[a], m.delayed[b]
		if c := ea.due.Compare(eb.due); c != 0 {
			return c
		}
		return ea.seq - eb.seq
	})
	for _, k := range due {
		delete(m.delayed, k)
		m.add(k)
	}
}

func (m *model) inFlight() []string {
	var ks []string
	for k, s := range m.state {
		if s == stateProcessing || s == stateProcessingDirty {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// TestAgainstModel runs random operation sequences on a queue and on the
// model and compares the ready order, every key's state, the delayed keys,
// Len, NumRequeues and what Get returns after each operation. Each sequence
// runs in a synctest bubble: time passes only in the steps the sequence
// takes, and the delay goroutine has added every due key before the
// comparison.
func TestAgainstModel(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		synctest.Test(t, func(t *testing.T) { runModel(t, uint64(seed), 400) })
	}
}

func runModel(t *testing.T, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, 0))
	cfg := Config[string]{Limit: rate.Inf, BaseDelay: modelBase, MaxDelay: modelMax}
	if seed%2 == 1 {
		cfg.Name = "model"
		cfg.MetricsProvider = newRecProvider() // exercises the times bookkeeping
	}
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer q.ShutDown()
	m := newModel()
	nkeys := 3 + rng.IntN(40) // enough for the ready ring to wrap and grow
	key := func() string { return fmt.Sprintf("k%02d", rng.IntN(nkeys)) }
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		tail := log[max(0, len(log)-15):]
		t.Fatalf("seed %d after %d ops: %s\nlast ops:\n  %s", seed, len(log), fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
	}
	for range ops {
		switch op := rng.IntN(100); {
		case op < 25:
			k := key()
			log = append(log, "Add "+k)
			q.Add(k)
			if !m.shutDown {
				m.add(k)
			}
		case op < 35:
			k, d := key(), time.Duration(rng.IntN(8)-2)*50*time.Millisecond
			log = append(log, fmt.Sprintf("AddAfter %s %v", k, d))
			q.AddAfter(k, d)
			if !m.shutDown {
				m.addAfter(k, d)
			}
		case op < 42:
			k := key()
			log = append(log, "AddRateLimited "+k)
			q.AddRateLimited(k)
			n := m.failures[k]
			m.failures[k]++ // as client-go, the limiter counts even after ShutDown
			if !m.shutDown {
				m.addAfter(k, min(modelBase<<min(n, 20), modelMax))
			}
		case op < 45:
			k := key()
			log = append(log, "Forget "+k)
			q.Forget(k)
			delete(m.failures, k)
		case op < 70:
			log = append(log, "Get")
			switch {
			case len(m.ready) > 0:
				want := m.ready[0]
				m.ready = m.ready[1:]
				m.state[want] = stateProcessing
				if k, shutdown := q.Get(); shutdown || k != want {
					fail("Get = %q, shutdown=%v; want %q", k, shutdown, want)
				}
			case m.shutDown:
				if k, shutdown := q.Get(); !shutdown {
					fail("Get after shutdown with nothing ready = %q", k)
				}
			default:
				log[len(log)-1] = "Get skipped: would block"
			}
		case op < 88:
			inFlight := m.inFlight()
			if len(inFlight) == 0 {
				continue
			}
			k := inFlight[rng.IntN(len(inFlight))]
			log = append(log, "Done "+k)
			q.Done(k)
			if m.state[k] == stateProcessingDirty {
				m.state[k] = stateReady
				m.ready = append(m.ready, k)
			} else {
				delete(m.state, k)
			}
		case op < 99:
			d := time.Duration(rng.IntN(7)) * 50 * time.Millisecond
			log = append(log, fmt.Sprintf("Step %v", d))
			advance(d)
			m.step(d)
		default:
			if rng.IntN(4) != 0 {
				continue // about two runs in three shut down, at a random point
			}
			log = append(log, "ShutDown")
			q.ShutDown()
			m.shutDown = true
			clear(m.delayed)
		}
		compareModel(q, m, fail)
	}
}

func compareModel(q *Queue[string], m *model, fail func(string, ...any)) {
	synctest.Wait() // a Get or Done may have started the updater
	if got := q.Len(); got != len(m.ready) {
		fail("Len = %d, want %d", got, len(m.ready))
	}
	if err := q.check(); err != nil {
		fail("invariants: %v", err)
	}
	q.out.Lock()
	q.fifo.Lock()
	var ready []string
	for _, sl := range q.readySlots() {
		ready = append(ready, sl.key)
	}
	q.fifo.Unlock()
	q.out.Unlock()
	states := map[string]state{}
	for i := range q.shards {
		s := &q.shards[i]
		s.mu.Lock()
		for k, e := range s.keys.all() {
			switch {
			case q.queued(e):
				states[k] = stateReady
			case e.dirty:
				states[k] = stateProcessingDirty
			default:
				states[k] = stateProcessing
			}
		}
		s.mu.Unlock()
	}
	q.delay.Lock()
	delayed := map[string]time.Time{}
	for k, e := range q.delay.heap.byKey {
		delayed[k] = e.due
	}
	q.delay.Unlock()
	if !slices.Equal(ready, m.ready) {
		fail("ready = %v, want %v", ready, m.ready)
	}
	for k, s := range m.state {
		if states[k] != s {
			fail("state of %s = %d, want %d", k, states[k], s)
		}
	}
	if len(states) != len(m.state) {
		fail("%d keys tracked, want %d", len(states), len(m.state))
	}
	if len(delayed) != len(m.delayed) {
		fail("%d delayed keys, want %d", len(delayed), len(m.delayed))
	}
	for k, e := range m.delayed {
		if !delayed[k].Equal(e.due) {
			fail("%s due at %v, want %v", k, delayed[k], e.due)
		}
	}
	for k, n := range m.failures {
		if got := q.NumRequeues(k); got != n {
			fail("NumRequeues(%s) = %d, want %d", k, got, n)
		}
	}
}
