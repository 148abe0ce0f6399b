package target

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

// Churner writes a create/update/delete mix to a target at a target rate for
// a bounded time or number of events.
//
// Every write carries its emission time: creates and updates in the
// AnnEmitted annotation, deletes in DeleteStamps (the deleted object's
// annotation is that of its last update). Created names are never reused, so
// a key is deleted at most once.
//
// Writers: w goroutines, each owning the keys i ≡ w (mod writers) and its own
// random source, so with one writer the sequence of operations depends only on
// the seed, and two runs with the same seed write the same
// stream. Emitted and DeleteStamps are safe to call while Run runs; Counts,
// StartedAt and StoppedAt after it returned.
type Churner struct {
	t       Target
	cfg     Config
	writers int
	limiter *rate.Limiter // nil: as fast as possible

	budget                    atomic.Int64 // events left when cfg.ChurnEvents > 0
	creates, updates, deletes atomic.Uint64
	failed                    atomic.Uint64
	deletedAt                 sync.Map // key → emission unix nanos of its delete
	firstErr                  atomic.Pointer[error]

	startedAt, stoppedAt time.Time // written by Run
}

// ChurnCounts is what a churn did: its writes by kind and how long it ran.
type ChurnCounts struct {
	Seconds                   float64
	Creates, Updates, Deletes uint64
	Failed                    uint64 // writes that returned an error
}

// Emitted is creates+updates+deletes.
func (c ChurnCounts) Emitted() uint64 { return c.Creates + c.Updates + c.Deletes }

// NewChurner returns a churn of t as c says (the Churn fields, Mix,
// SteadyPods, Namespaces, Seed). It starts nothing.
func NewChurner(t Target, c Config) *Churner {
	writers := c.ChurnWorkers
	if writers == 0 {
		writers = 1
		if t.Kind() == KindCluster {
			writers = 16
		}
	}
	g := &Churner{t: t, cfg: c, writers: writers}
	if c.ChurnRate > 0 {
		burst := max(1, int(c.ChurnRate/100)) // 10ms worth
		g.limiter = rate.NewLimiter(rate.Limit(c.ChurnRate), burst)
	}
	g.budget.Store(int64(c.ChurnEvents))
	return g
}

// Emitted returns the number of writes done so far.
func (g *Churner) Emitted() uint64 { return g.creates.Load() + g.updates.Load() + g.deletes.Load() }

// DeleteStamps returns key → emission time (unix nanos) of every delete sent.
func (g *Churner) DeleteStamps() map[string]int64 {
	m := map[string]int64{}
	g.deletedAt.Range(func(k, v any) bool {
		m[k.(string)] = v.(int64)
		return true
	})
	return m
}

// StartedAt and StoppedAt are when Run started and returned.
func (g *Churner) StartedAt() time.Time { return g.startedAt }
func (g *Churner) StoppedAt() time.Time { return g.stoppedAt }

// Counts summarizes the churn after Run returned.
func (g *Churner) Counts() ChurnCounts {
	return ChurnCounts{Seconds: g.stoppedAt.Sub(g.startedAt).Seconds(), Creates: g.creates.Load(),
		Updates: g.updates.Load(), Deletes: g.deletes.Load(), Failed: g.failed.Load()}
}

type podRef struct{ ns, name string }

// Run churns until the duration or event budget is used up, ctx ends, or a
// write fails; a failed write of a real cluster is counted and the first
// error returned. With no bound (duration and events both 0) it returns at
// once. initialPods is the number of pods Populate created. Call it once.
func (g *Churner) Run(ctx context.Context, initialPods int) error {
	g.startedAt = time.Now()
	defer func() { g.stoppedAt = time.Now() }()
	if g.cfg.ChurnDuration == 0 && g.cfg.ChurnEvents == 0 {
		return nil
	}
	if g.cfg.ChurnDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.cfg.ChurnDuration)
		defer cancel()
	}
	var wg sync.WaitGroup
	for w := range g.writers {
		var live []podRef
		for i := w; i < initialPods; i += g.writers {
			live = append(live, podRef{g.t.Namespace(i), PodName(i)})
		}
		wg.Go(func() { g.write(ctx, w, live, initialPods) }) // one of Run's writers; Run waits for it
	}
	wg.Wait()
	if p := g.firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// write is one writer goroutine.
func (g *Churner) write(ctx context.Context, w int, live []podRef, initialPods int) {
	rng := rand.New(rand.NewPCG(uint64(g.cfg.Seed), uint64(w)))
	m := g.cfg.Mix
	total := m.Create + m.Update + m.Delete
	gens := map[podRef]int{}
	created := 0
	steady := len(live) // the writer's initial pods (SteadyPods)
	for ctx.Err() == nil {
		if g.cfg.ChurnEvents > 0 && g.budget.Add(-1) < 0 {
			return
		}
		if g.limiter != nil {
			if g.limiter.Wait(ctx) != nil {
				return
			}
		}
		op := rng.IntN(total)
		if len(live) == 0 || op < m.Create {
			op = 0 // create
			if m.Create == 0 {
				return // nothing left to update or delete
			}
		} else if op < m.Create+m.Update {
			op = 1
		} else {
			op = 2
		}
		if g.cfg.SteadyPods && op != 1 && m.Create > 0 {
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
			ref := podRef{g.t.Namespace(rng.IntN(g.cfg.Namespaces)), fmt.Sprintf("churn-%d-%07d", w, created)}
			created++
			if err = g.t.Create(ctx, ref.ns, ref.name, PodSeed(g.cfg.Seed, i), time.Now().UnixNano()); err == nil {
				live = append(live, ref)
				g.creates.Add(1)
			}
		case 1:
			ref := live[rng.IntN(len(live))]
			gens[ref]++
			if err = g.t.Update(ctx, ref.ns, ref.name, gens[ref], func() int64 { return time.Now().UnixNano() }); err == nil {
				g.updates.Add(1)
			}
		case 2:
			j := rng.IntN(len(live))
			ref := live[j]
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			delete(gens, ref)
			g.deletedAt.Store(ref.ns+"/"+ref.name, time.Now().UnixNano())
			if err = g.t.Delete(ctx, ref.ns, ref.name); err == nil {
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
