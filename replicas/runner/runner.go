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
	// Members configures the membership; its Annotations, Readable and
	// OnChange must be nil (the Runner sets the first two and does not use
	// the third).
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
	// handover documents. Required.
	Handler cache.ResourceEventHandler
	// Workers sets how Handler is called. 0 or 1: one call at a time,
	// across all slots (one mutex), as with client-go. More: each active
	// slot's informer calls it from Workers workers
	// (AddParallelEventHandler) — calls for one key are never concurrent
	// and keep their order, calls for different keys overlap, up to
	// Workers per active slot — so NewInformer must return an informer
	// that has that method, such as pipeline.NewSharedIndexInformer's
	// (New checks, by building one informer it never runs), and Handler
	// must be safe for concurrent use.
	Workers int
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
	// reader turns each successful list into readings (leases.go);
	// readings holds those of the last one, by member (this replica
	// included), and kinds the kind last logged per member.
	reader   *reader
	readings map[string]reading
	kinds    map[string]kind

	// fallback logs the first slot informer's fallback to client-side
	// filtering, so that a replica says it once, not once per slot.
	fallback sync.Once

	// tripped is set by a gate that refused an event because the replica
	// was fenced; the next round then stops every slot (as fenced), since
	// the handler has missed events.
	tripped atomic.Bool

	// dispatch serialises every call of Handler, across slots, when
	// Workers ≤ 1: held by a slot's gate while it calls Handler.
	dispatch sync.Mutex

	// crash, set by tests before cancelling Run's context, makes Run
	// return as a killed process would: no tombstones, no Lease release.
	crash atomic.Bool
}

// parallelInformer is an informer that can call one handler from several
// workers, ordered per key (pipeline.Informer).
type parallelInformer interface {
	AddParallelEventHandler(handler cache.ResourceEventHandler, workers int) (cache.ResourceEventHandlerRegistration, error)
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
	if cfg.Workers > 1 {
		if _, ok := cfg.NewInformer(&cache.ListWatch{}).(parallelInformer); !ok {
			return nil, fmt.Errorf("%w: Workers > 1 needs an informer with AddParallelEventHandler (pipeline.Informer)", ErrConfig)
		}
	}
	if cfg.Members.Annotations != nil || cfg.Members.Readable != nil || cfg.Members.OnChange != nil {
		return nil, fmt.Errorf("%w: Members.Annotations, Members.Readable and Members.OnChange must be nil", ErrConfig)
	}
	r := &Runner{cfg: cfg, logger: klog.Background(), hand: handover.New(cfg.Members.Identity, cfg.Slots), slots: map[int]*slot{},
		kinds: map[string]kind{}}
	if cfg.Logger != nil {
		r.logger = *cfg.Logger
	}
	mc := cfg.Members
	mc.Annotations = func() map[string]string { return r.hand.Published().Encode() }
	mc.Readable = func(a map[string]string) error { _, err := handover.Decode(a, cfg.Slots); return err }
	m, err := members.New(mc)
	if err != nil {
		return nil, err
	}
	r.members = m
	r.reader = newReader(cfg.Slots, m.Config().RenewDeadline)
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
			if r.crash.Load() {
				r.abandon()
				return nil
			}
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
	// The target is the sticky assignment of the slots the live members
	// whose Leases are readable (and not on standby) claim in them, this
	// replica's included (as written: the same Leases give every replica
	// the same target); the others are no members, and their claims
	// count as the reader's rule says (leases.go, doc.go). When the list
	// failed, the last readings stand in, and nothing is activated on
	// them.
	listed := rd.Leases != nil
	if listed {
		r.readings = r.reader.read(rd)
		r.logReadings()
	}
	var targetMembers []string
	held := map[string]handover.Published{}
	peers := map[string]handover.Published{}
	for _, name := range rd.Live {
		rg, ok := r.readings[name]
		if !ok {
			continue
		}
		if rg.kind == readable {
			targetMembers = append(targetMembers, name)
			held[name] = rg.published
		}
		if name != r.cfg.Members.Identity {
			peers[name] = rg.published
		}
	}
	r.execute(r.hand.Step(handover.View{
		Target:        handover.Target(targetMembers, r.cfg.Slots, held),
		Peers:         peers,
		ClaimsVisible: rd.Renewed && listed,
		Fenced:        r.members.Fenced() || r.tripped.Swap(false),
		CacheSynced:   func(s int) bool { return r.slots[s].inf.HasSynced() },
	}))
}

// logReadings logs each member whose reading changed kind since the last
// list — an error when it cannot be read as written, a line when it can
// again — leaving out readings on standby amid unreadable ones, so that a
// Lease alternating between the two is logged once per change that counts.
func (r *Runner) logReadings() {
	for name, rg := range r.readings {
		prev, seen := r.kinds[name]
		switch {
		case seen && prev == rg.kind, !seen && rg.kind == readable:
		case rg.kind == onStandby && seen && (prev == unreadable || prev == expired):
			continue
		case rg.err != nil:
			r.logger.Error(rg.err, "replica's Lease cannot be read", "replica", name, "counted as", rg.kind.String())
		default:
			r.logger.Info("replica's Lease read", "replica", name, "state", rg.kind.String())
		}
		r.kinds[name] = rg.kind
	}
	for name := range r.kinds {
		if _, ok := r.readings[name]; !ok {
			delete(r.kinds, name)
		}
	}
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
			sl.gate = newGate(r.cfg.Handler, r.members.Fenced, &r.tripped)
			var reg cache.ResourceEventHandlerRegistration
			var err error
			if r.cfg.Workers > 1 {
				reg, err = sl.inf.(parallelInformer).AddParallelEventHandler(sl.gate, r.cfg.Workers)
			} else {
				sl.gate.serial = &r.dispatch
				reg, err = sl.inf.AddEventHandler(sl.gate)
			}
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

// abandon stops dispatch and every informer without telling the handler
// and without touching the Lease, as if the process had been killed: the
// Lease stays, still claiming the replica's slots, until peers find it
// expired. Tests only (crash).
func (r *Runner) abandon() {
	for s, sl := range r.slots {
		if sl.gate != nil {
			sl.gate.shut()
		}
		sl.cancel()
		<-sl.done
		delete(r.slots, s)
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
// can take every object the handler knows of out of its view. Checking
// fenced at every call stops dispatch at the renew deadline even when
// Run's goroutine is held up (in a slow request), before peers may take
// the slot over; the gate then stays shut, and the next round stops every
// slot as if fenced (the tombstones follow), since the handler has missed
// an event.
//
// Its calls come from the slot informer's listener workers, several at
// once with Workers > 1 (never two for one key: the informer orders them
// per key). Each holds mu for reading across the handler call; close and
// shut take it for writing, so they wait for the calls in flight, and no
// call starts after them. With Workers ≤ 1 each call also holds serial,
// the Runner's dispatch mutex, so Handler runs one call at a time across
// slots. Lock order: mu, serial, seenMu, then the membership's (fenced).
type gate struct {
	h       cache.ResourceEventHandler
	fenced  func() bool
	tripped *atomic.Bool // set when fenced refuses an event
	serial  *sync.Mutex  // nil with Workers > 1
	mu      sync.RWMutex
	active  atomic.Bool // cleared under mu held for writing, or by a refused call
	seenMu  sync.Mutex
	seen    map[string]any // key → last object passed; REQUIRES: seenMu held
}

func newGate(h cache.ResourceEventHandler, fenced func() bool, tripped *atomic.Bool) *gate {
	g := &gate{h: h, fenced: fenced, tripped: tripped, seen: map[string]any{}}
	g.active.Store(true)
	return g
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
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.serial != nil {
		g.serial.Lock()
		defer g.serial.Unlock()
	}
	if !g.active.Load() {
		return
	}
	if g.fenced() {
		g.active.Store(false) // the handler has missed this event: no more
		g.tripped.Store(true)
		return
	}
	g.seenMu.Lock()
	if deleted {
		delete(g.seen, key)
	} else {
		g.seen[key] = obj
	}
	g.seenMu.Unlock()
	// Per key, the informer calls pass one at a time, so the seen entry
	// and the handler's view of the key cannot be reordered.
	call()
}

// shut stops the gate after the calls in flight have returned.
func (g *gate) shut() {
	g.mu.Lock()
	g.active.Store(false)
	g.mu.Unlock()
}

// close shuts the gate, then hands the handler a tombstone for every
// object it was told of and not told deleted (one call at a time, on the
// caller's goroutine; with Workers ≤ 1 under serial).
func (g *gate) close() {
	g.shut()
	if g.serial != nil {
		g.serial.Lock()
		defer g.serial.Unlock()
	}
	g.seenMu.Lock()
	defer g.seenMu.Unlock()
	for key, obj := range g.seen {
		g.h.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
	}
	clear(g.seen)
}
