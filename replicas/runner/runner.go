package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardinformer/shardinformer/replicas"
	"github.com/shardinformer/shardinformer/replicas/handover"
	"github.com/shardinformer/shardinformer/replicas/members"
	"github.com/shardinformer/shardinformer/replicas/rangelw"
	"github.com/shardinformer/shardinformer/shardselector"
)

// Config configures a Runner.
type Config struct {
	// Members configures the membership; its Annotations and OnChange
	// must be nil (the Runner sets the first and does not use the second).
	Members members.Config
	// Slots is the slot count of the group (replicas.Assign); every
	// replica of a group must use the same. Default 16: each slot costs
	// one informer (one list and one watch) while the replica holds it.
	Slots int
	// Inner lists and watches the whole resource; each slot's informer
	// wraps it in a rangelw.ListerWatcher. Required.
	Inner cache.ListerWatcher
	// NewInformer builds one slot's informer on lw. Required.
	NewInformer func(lw cache.ListerWatcher) cache.SharedIndexInformer
	// Handler receives the events of the active slots, as package
	// handover documents. It is never called concurrently with itself.
	// Required.
	Handler cache.ResourceEventHandler
	// Logger, default klog.Background().
	Logger *klog.Logger
	// Hooks are passed to every slot's rangelw.ListerWatcher (Fallback is
	// called once per slot informer that falls back).
	Hooks rangelw.Hooks
}

// ErrConfig is matched by the errors of New for an invalid Config.
var ErrConfig = errors.New("runner: invalid config")

// Runner runs one replica of a group: membership, hand-over, one informer
// per slot it syncs or holds, and the gated dispatch to Handler. Build it
// with New; must not be copied.
type Runner struct {
	cfg     Config
	logger  klog.Logger
	members *members.Membership
	hand    *handover.Replica // owned by Run's goroutine

	// Owned by Run's goroutine.
	slots map[int]*slot

	// fallback logs the first slot informer's fallback to client-side
	// filtering, so that a replica says it once, not once per slot.
	fallback sync.Once

	// tripped is set by a gate that refused an event because the replica
	// was fenced; the next round then stops every slot (as fenced), since
	// the handler has missed events.
	tripped atomic.Bool

	// dispatch serialises every call of Handler, across slots: held by a
	// slot's gate while it calls Handler.
	dispatch sync.Mutex
}

// slot is the informer of one slot and, while active, its gate.
type slot struct {
	inf    cache.SharedIndexInformer
	cancel context.CancelFunc
	done   chan struct{} // closed when the informer's goroutine exits
	gate   *gate         // nil unless active
	reg    cache.ResourceEventHandlerRegistration
}

// New validates cfg and returns a Runner. It starts nothing and does no
// I/O.
func New(cfg Config) (*Runner, error) {
	if cfg.Slots == 0 {
		cfg.Slots = 16
	}
	if _, err := replicas.Assign(nil, cfg.Slots); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Inner == nil || cfg.NewInformer == nil || cfg.Handler == nil {
		return nil, fmt.Errorf("%w: Inner, NewInformer and Handler are required", ErrConfig)
	}
	if cfg.Members.Annotations != nil || cfg.Members.OnChange != nil {
		return nil, fmt.Errorf("%w: Members.Annotations and Members.OnChange must be nil", ErrConfig)
	}
	r := &Runner{cfg: cfg, logger: klog.Background(), hand: handover.New(cfg.Members.Identity, cfg.Slots), slots: map[int]*slot{}}
	if cfg.Logger != nil {
		r.logger = *cfg.Logger
	}
	mc := cfg.Members
	mc.Annotations = func() map[string]string { return r.hand.Published().Encode() }
	m, err := members.New(mc)
	if err != nil {
		return nil, err
	}
	r.members = m
	return r, nil
}

// Run runs rounds (members.Sync, handover.Step, the actions) every
// RenewInterval of the membership's clock until ctx is done; then it
// deactivates every active slot (Handler sees the tombstones), stops every
// informer, deletes the replica's Lease, and returns — after every
// goroutine it started has exited. A Runner runs once.
func (r *Runner) Run(ctx context.Context) error {
	mc := r.members.Config()
	t := mc.Clock.NewTicker(mc.RenewInterval)
	defer t.Stop()
	for {
		r.round(ctx)
		select {
		case <-ctx.Done():
			r.execute(r.hand.Step(handover.View{Target: r.emptyTarget(), Fenced: true}))
			return r.members.Release()
		case <-t.C():
		}
	}
}

// round runs one round on Run's goroutine.
func (r *Runner) round(ctx context.Context) {
	// A hung request must not stall the rounds: bounded by RenewDeadline.
	sctx, cancel := context.WithTimeout(ctx, r.members.Config().RenewDeadline)
	rd, err := r.members.Sync(sctx)
	cancel()
	if err != nil && ctx.Err() == nil {
		r.logger.Error(err, "membership round")
	}
	target, err := replicas.Assign(rd.Live, r.cfg.Slots)
	if err != nil {
		panic(err) // slot count validated by New; names are non-empty holders
	}
	peers := map[string]handover.Published{}
	for name, ann := range rd.Annotations {
		if name == r.cfg.Members.Identity {
			continue
		}
		p, err := handover.Decode(ann, r.cfg.Slots)
		if err != nil {
			r.logger.Error(err, "peer's slot annotations unreadable; counting it as claiming every slot", "peer", name)
		}
		peers[name] = p
	}
	r.execute(r.hand.Step(handover.View{
		Target:        target,
		Peers:         peers,
		ClaimsVisible: rd.Renewed,
		Fenced:        r.members.Fenced() || r.tripped.Swap(false),
		CacheSynced:   func(s int) bool { return r.slots[s].inf.HasSynced() },
	}))
}

// execute carries out the actions in order, on Run's goroutine.
func (r *Runner) execute(acts []handover.Action) {
	for _, a := range acts {
		switch a.Kind {
		case handover.StartCache:
			r.startCache(a.Slot)
		case handover.StopCache:
			sl := r.slots[a.Slot]
			delete(r.slots, a.Slot)
			sl.cancel()
			<-sl.done
		case handover.Activate:
			sl := r.slots[a.Slot]
			sl.gate = &gate{h: r.cfg.Handler, mu: &r.dispatch, fenced: r.members.Fenced, tripped: &r.tripped, active: true, seen: map[string]any{}}
			reg, err := sl.inf.AddEventHandler(sl.gate)
			if err != nil {
				panic(fmt.Sprintf("runner: add handler to a running informer: %v", err))
			}
			sl.reg = reg
		case handover.Deactivate:
			sl := r.slots[a.Slot]
			sl.gate.close()
			_ = sl.inf.RemoveEventHandler(sl.reg)
			sl.gate, sl.reg = nil, nil
		}
	}
}

func (r *Runner) startCache(s int) {
	target := r.emptyTarget()
	sel := shardselector.Selector{Field: shardselector.FieldUID, Ranges: []shardselector.Range{target.SlotRange(s)}}
	hooks := r.cfg.Hooks
	hooks.Fallback = func() {
		r.fallback.Do(func() {
			r.logger.Info("shardSelector not applied by the server; filtering client-side", "slot", s, "selector", sel.String())
		})
		if r.cfg.Hooks.Fallback != nil {
			r.cfg.Hooks.Fallback()
		}
	}
	var quiet klog.Logger // the zero Logger discards: the line above replaces rangelw's, one per slot
	lw, err := rangelw.New(rangelw.Config{Inner: r.cfg.Inner, Selector: sel, Logger: &quiet, Hooks: hooks})
	if err != nil {
		panic(err) // a slot's range is never empty
	}
	ctx, cancel := context.WithCancel(context.Background())
	sl := &slot{inf: r.cfg.NewInformer(lw), cancel: cancel, done: make(chan struct{})}
	r.slots[s] = sl
	go func() { // the slot's informer goroutine; StopCache waits for it
		defer close(sl.done)
		sl.inf.RunWithContext(ctx)
	}()
}

func (r *Runner) emptyTarget() replicas.Assignment {
	a, _ := replicas.Assign(nil, r.cfg.Slots)
	return a
}

// gate passes a slot's events to the handler while the slot is active and
// the replica is not fenced, and remembers what it passed, so that close
// can take every object the handler knows of out of its view. Its calls
// hold the Runner's dispatch mutex. Checking fenced at every call stops
// dispatch at the renew deadline even when Run's goroutine is held up (in
// a slow request), before peers may take the slot over; the gate then
// stays shut, and the next round stops every slot as if fenced (the
// tombstones follow), since the handler has missed an event.
type gate struct {
	h       cache.ResourceEventHandler
	mu      *sync.Mutex
	fenced  func() bool
	tripped *atomic.Bool   // set when fenced refuses an event
	active  bool           // REQUIRES: mu held
	seen    map[string]any // key → last object passed; REQUIRES: mu held
}

func (g *gate) OnAdd(obj any, isInInitialList bool) {
	g.pass(obj, func() { g.h.OnAdd(obj, isInInitialList) }, false)
}

func (g *gate) OnUpdate(oldObj, newObj any) {
	g.pass(newObj, func() { g.h.OnUpdate(oldObj, newObj) }, false)
}

func (g *gate) OnDelete(obj any) { g.pass(obj, func() { g.h.OnDelete(obj) }, true) }

func (g *gate) pass(obj any, call func(), deleted bool) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.active {
		return
	}
	if g.fenced() {
		g.active = false // the handler has missed this event: no more
		g.tripped.Store(true)
		return
	}
	if deleted {
		delete(g.seen, key)
	} else {
		g.seen[key] = obj
	}
	call()
}

// close stops the gate, then hands the handler a tombstone for every
// object it was told of and not told deleted.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active = false
	for key, obj := range g.seen {
		g.h.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
	}
	clear(g.seen)
}
