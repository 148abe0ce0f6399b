package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// churner writes a create/update/delete mix to a target at a target rate for
// a bounded time or number of events.
//
// Every write carries its emission time: creates and updates in the
// annEmitted annotation, deletes in deletedAt (the deleted object's
// annotation is that of its last update). Created names are never reused, so
// a key is deleted at most once.
//
// Writers: w goroutines, each owning the keys i ≡ w (mod writers) and its own
// random source, so with one writer the sequence of operations depends only on
// the seed, and two runs with the same seed write the same
// stream.
type churner struct {
	t       target
	cfg     config
	writers int
	limiter *rate.Limiter // nil: as fast as possible

	budget                    atomic.Int64 // events left when cfg.churnEvents > 0
	creates, updates, deletes atomic.Uint64
	failed                    atomic.Uint64
	deletedAt                 sync.Map // key → emission unix nanos of its delete
	firstErr                  atomic.Pointer[error]

	startedAt, stoppedAt time.Time
}

func newChurner(t target, c config) *churner {
	writers := c.churnWorkers
	if writers == 0 {
		writers = 1
		if t.kind() == "cluster" {
			writers = 16
		}
	}
	g := &churner{t: t, cfg: c, writers: writers}
	if c.churnRate > 0 {
		burst := max(1, int(c.churnRate/100)) // 10ms worth
		g.limiter = rate.NewLimiter(rate.Limit(c.churnRate), burst)
	}
	g.budget.Store(int64(c.churnEvents))
	return g
}

// emitted returns the number of writes done so far.
func (g *churner) emitted() uint64 { return g.creates.Load() + g.updates.Load() + g.deletes.Load() }

// deleteStamps returns key → emission time (unix nanos) of every delete sent.
func (g *churner) deleteStamps() map[string]int64 {
	m := map[string]int64{}
	g.deletedAt.Range(func(k, v any) bool {
		m[k.(string)] = v.(int64)
		return true
	})
	return m
}

// report summarizes the churn after run returned.
func (g *churner) report() churnReport {
	r := churnReport{Seconds: g.stoppedAt.Sub(g.startedAt).Seconds(), Creates: g.creates.Load(),
		Updates: g.updates.Load(), Deletes: g.deletes.Load(), Emitted: g.emitted(), Failed: g.failed.Load()}
	if r.Seconds > 0 {
		r.Rate = float64(r.Emitted) / r.Seconds
	}
	return r
}

type podRef struct{ ns, name string }

// run churns until the duration or event budget is used up, ctx ends, or a
// write fails; a failed write of a real cluster is counted and the first
// error returned. With no bound (duration and events both 0) it returns at once.
func (g *churner) run(ctx context.Context, initialPods int) error {
	g.startedAt = time.Now()
	defer func() { g.stoppedAt = time.Now() }()
	if g.cfg.churnDuration == 0 && g.cfg.churnEvents == 0 {
		return nil
	}
	if g.cfg.churnDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.cfg.churnDuration)
		defer cancel()
	}
	var wg sync.WaitGroup
	for w := range g.writers {
		var live []podRef
		for i := w; i < initialPods; i += g.writers {
			live = append(live, podRef{g.t.namespace(i), podName(i)})
		}
		wg.Go(func() { g.write(ctx, w, live, initialPods) })
	}
	wg.Wait()
	if p := g.firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// write is one writer goroutine.
func (g *churner) write(ctx context.Context, w int, live []podRef, initialPods int) {
	rng := rand.New(rand.NewPCG(uint64(g.cfg.seed), uint64(w)))
	m := g.cfg.mix
	total := m.create + m.update + m.delete
	gens := map[podRef]int{}
	created := 0
	steady := len(live) // the writer's initial pods (steadyPods)
	for ctx.Err() == nil {
		if g.cfg.churnEvents > 0 && g.budget.Add(-1) < 0 {
			return
		}
		if g.limiter != nil {
			if g.limiter.Wait(ctx) != nil {
				return
			}
		}
		op := rng.IntN(total)
		if len(live) == 0 || op < m.create {
			op = 0 // create
			if m.create == 0 {
				return // nothing left to update or delete
			}
		} else if op < m.create+m.update {
			op = 1
		} else {
			op = 2
		}
		if g.cfg.steadyPods && op != 1 && m.create > 0 {
			// Hold the writer's pod count at its initial size: a create or
			// a delete is a create below it, a delete at or above it.
			op = 2
			if len(live) < steady || len(live) == 0 {
				op = 0
			}
		}
		var err error
		switch op {
		case 0:
			// Names never repeat: writer, then a per-writer counter.
			i := initialPods + created*g.writers + w
			ref := podRef{g.t.namespace(rng.IntN(g.cfg.namespaces)), fmt.Sprintf("churn-%d-%07d", w, created)}
			created++
			if err = g.t.create(ctx, ref.ns, ref.name, podSeed(g.cfg.seed, i), time.Now().UnixNano()); err == nil {
				live = append(live, ref)
				g.creates.Add(1)
			}
		case 1:
			ref := live[rng.IntN(len(live))]
			gens[ref]++
			if err = g.t.update(ctx, ref.ns, ref.name, gens[ref], func() int64 { return time.Now().UnixNano() }); err == nil {
				g.updates.Add(1)
			}
		case 2:
			j := rng.IntN(len(live))
			ref := live[j]
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			delete(gens, ref)
			g.deletedAt.Store(ref.ns+"/"+ref.name, time.Now().UnixNano())
			if err = g.t.delete(ctx, ref.ns, ref.name); err == nil {
				g.deletes.Add(1)
			}
		}
		if err != nil {
			if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				return
			}
			g.failed.Add(1)
			e := fmt.Errorf("churn: %w", err)
			g.firstErr.CompareAndSwap(nil, &e)
			return // this writer stops; the run reports the error
		}
	}
}
