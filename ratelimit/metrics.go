package ratelimit

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// metrics are a queue's metrics, created once from a
// workqueue.MetricsProvider. They are reported as client-go reports them:
//
//   - depth: +1 when a key becomes pending (ready, or added again while in
//     flight), -1 when Get hands it out. It counts keys added again while
//     in flight, which Len does not.
//   - adds: +1 with each depth increment (deduplicated adds do not count).
//   - latency: at Get, seconds since the key became pending.
//   - work: at Done, seconds since Get.
//   - unfinished, longest: every update period while keys are in flight,
//     the sum and the maximum of their seconds in flight, then 0 once none
//     is.
//   - retries: +1 per AddAfter or AddRateLimited before ShutDown.
//
// The metric implementations must be safe for concurrent use (those of
// Prometheus are): the queue calls them from whichever goroutine runs the
// operation, sometimes with a shard lock held, so they must not block or
// call the queue.
type metrics struct {
	depth               workqueue.GaugeMetric
	adds, retries       workqueue.CounterMetric
	latency, work       workqueue.HistogramMetric
	unfinished, longest workqueue.SettableGaugeMetric
	period              time.Duration
}

func newMetrics(p workqueue.MetricsProvider, name string, period time.Duration) *metrics {
	return &metrics{
		depth:      p.NewDepthMetric(name),
		adds:       p.NewAddsMetric(name),
		latency:    p.NewLatencyMetric(name),
		work:       p.NewWorkDurationMetric(name),
		unfinished: p.NewUnfinishedWorkSecondsMetric(name),
		longest:    p.NewLongestRunningProcessorSecondsMetric(name),
		retries:    p.NewRetriesMetric(name),
		period:     period,
	}
}

// startUpdater starts the unfinished-work goroutine unless it runs or the
// queue shut down. Called by Get after a key went in flight.
func (q *Queue[K]) startUpdater() {
	q.upd.Lock()
	defer q.upd.Unlock()
	if q.upd.running.Load() || q.upd.stopped {
		return
	}
	q.upd.running.Store(true)
	q.wg.Add(1) // before stopBackground's Wait: stopped is false
	go q.updateLoop()
}

// updateLoop is the unfinished-work goroutine. Every update period it sets
// the unfinished-work and longest-running gauges; after setting them to 0
// (nothing in flight) it exits, unless a Get put a key in flight meanwhile.
//
// Exit and restart cannot both miss a key: Get increments out.popped, then
// reads upd.running; this goroutine clears upd.running, then counts the
// keys in flight (Queue.inFlight, which reads out.popped last). Both are
// sequentially consistent atomics, so at least one of the two sees the
// other's write and keeps a goroutine running.
func (q *Queue[K]) updateLoop() {
	defer q.wg.Done()
	ticker := q.clock.NewTicker(q.m.period)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C():
		case <-q.stop:
			return
		}
		if q.shutDown.Load() {
			return // as client-go, the gauges keep their last values
		}
		total, longest, n := q.unfinished()
		q.m.unfinished.Set(total.Seconds())
		q.m.longest.Set(longest.Seconds())
		if n > 0 {
			continue
		}
		q.upd.Lock()
		q.upd.running.Store(false)
		q.upd.Unlock()
		if q.inFlight() == 0 {
			return
		}
		q.upd.Lock()
		restart := !q.upd.running.Load() && !q.upd.stopped
		if restart {
			q.upd.running.Store(true)
		}
		q.upd.Unlock()
		if !restart {
			return // a Get started another, or the queue shut down
		}
	}
}

// unfinished returns the total and the longest time in flight of the keys
// in flight now, and how many there are.
func (q *Queue[K]) unfinished() (total, longest time.Duration, n int) {
	now := q.now()
	for i := range q.shards {
		s := &q.shards[i]
		s.mu.Lock()
		popped := q.out.popped.Load()
		for _, e := range s.keys.all() {
			if e.ticket >= popped || !e.started {
				continue // ready, or Get has not recorded its start yet
			}
			d := now - e.start
			total += d
			longest = max(longest, d)
			n++
		}
		s.mu.Unlock()
	}
	return total, longest, n
}
