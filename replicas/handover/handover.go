package handover

import "github.com/shardinformer/shardinformer/replicas"

// Phase is where one slot stands in one replica.
type Phase uint8

const (
	// Idle: no cache for the slot.
	Idle Phase = iota
	// Syncing: the slot's cache is listing and watching; nothing is
	// dispatched to handlers.
	Syncing
	// Synced: the slot's cache has synced and is kept up to date; nothing
	// is dispatched. Published as synced.
	Synced
	// Claimed: as Synced, and published as claimed; the replica waits for
	// a view read after the claim was written that shows no other claim.
	Claimed
	// Active: the slot's events are dispatched to handlers. Published as
	// claimed.
	Active
)

func (p Phase) String() string {
	return [...]string{"idle", "syncing", "synced", "claimed", "active"}[p]
}

// Published is what a replica writes in its Lease: per slot, whether its
// cache is synced and whether it claims the slot.
type Published struct {
	Synced, Claimed []bool
}

// View is one round's input to Step.
type View struct {
	// Target is the assignment of the members live in this view.
	Target replicas.Assignment
	// Peers holds what the other live members published, by name. A
	// member absent from Peers is not live in this view.
	Peers map[string]Published
	// ClaimsVisible: the view was read after the replica's latest
	// Published was written (in a Sync, the renewal succeeded).
	ClaimsVisible bool
	// Fenced: the replica's own renewals have failed for RenewDeadline;
	// its peers may drop it at any moment.
	Fenced bool
	// CacheSynced reports whether the cache of a Syncing slot has synced.
	CacheSynced func(slot int) bool
}

// Kind is what the shell must do for an Action.
type Kind uint8

const (
	// StartCache: start the slot's informer; dispatch nothing.
	StartCache Kind = iota
	// StopCache: stop the slot's informer and drop its cache.
	StopCache
	// Activate: dispatch the slot to handlers: OnAdd(obj, true) for each
	// cached object, then its events as they come.
	Activate
	// Deactivate: stop dispatching the slot, then OnDelete with a
	// cache.DeletedFinalStateUnknown for each cached object; done before
	// the next Published is written.
	Deactivate
)

func (k Kind) String() string {
	return [...]string{"start-cache", "stop-cache", "activate", "deactivate"}[k]
}

// Action is one thing the shell must do, in the order Step returns them.
type Action struct {
	Kind Kind
	Slot int
}

// Replica is the hand-over state machine of one replica. Owned by the
// replica's control goroutine; not safe for concurrent use. Must not be
// copied after the first Step.
type Replica struct {
	self  string
	phase []Phase
}

// New returns the state machine of replica self over slots slots, every
// slot Idle.
func New(self string, slots int) *Replica {
	return &Replica{self: self, phase: make([]Phase, slots)}
}

// Phase returns the phase of slot s.
func (r *Replica) Phase(s int) Phase { return r.phase[s] }

// Published returns what the replica must write in its Lease now.
func (r *Replica) Published() Published {
	p := Published{Synced: make([]bool, len(r.phase)), Claimed: make([]bool, len(r.phase))}
	for s, ph := range r.phase {
		p.Synced[s] = ph >= Synced
		p.Claimed[s] = ph >= Claimed
	}
	return p
}

// Step advances every slot by at most one phase according to v and
// returns the actions the shell must carry out, in order. It panics when
// v.Target has another slot count.
func (r *Replica) Step(v View) []Action {
	if v.Target.Slots() != len(r.phase) {
		panic("handover: view with another slot count")
	}
	var acts []Action
	stop := func(s int) {
		if r.phase[s] == Active {
			acts = append(acts, Action{Deactivate, s})
		}
		if r.phase[s] != Idle {
			acts = append(acts, Action{StopCache, s})
		}
		r.phase[s] = Idle
	}
	claimed := make([]bool, len(r.phase)) // claimed by a live peer
	for _, p := range v.Peers {
		for s, c := range p.Claimed {
			claimed[s] = claimed[s] || c
		}
	}
	for s := range r.phase {
		if v.Fenced {
			stop(s)
			continue
		}
		owner, _ := v.Target.SlotOwner(s)
		mine := owner == r.self
		switch r.phase[s] {
		case Idle:
			if mine {
				acts = append(acts, Action{StartCache, s})
				r.phase[s] = Syncing
			}
		case Syncing:
			switch {
			case !mine:
				stop(s)
			case v.CacheSynced(s):
				r.phase[s] = Synced
			}
		case Synced:
			switch {
			case !mine:
				stop(s)
			case !claimed[s]:
				r.phase[s] = Claimed
			}
		case Claimed:
			switch {
			case !mine:
				stop(s)
			case claimed[s]:
				r.phase[s] = Synced // withdraw; claim again when alone
			case v.ClaimsVisible:
				acts = append(acts, Action{Activate, s})
				r.phase[s] = Active
			}
		case Active:
			// Let go only when the new owner is live and has synced: the
			// slot is never left without a ready owner.
			if p, ok := v.Peers[owner]; !mine && ok && p.Synced[s] {
				stop(s)
			}
		}
	}
	return acts
}

// Target returns the assignment the live members step toward:
// replicas.Sticky of live over slots, each member holding the slots it
// claims in published (what the members' Leases carry, the replica's own
// included; members absent from published hold nothing). A replica that
// takes a slot it is given, or lets go of one it is not, leaves Target
// unchanged (replicas.Sticky), so replicas reading the Leases at
// different moments of a hand-over compute the same target. It panics
// when slots is not a valid slot count or a Published has another.
func Target(live []string, slots int, published map[string]Published) replicas.Assignment {
	held := map[string][]int{}
	for name, p := range published {
		if len(p.Claimed) != slots {
			panic("handover: published claims of another slot count")
		}
		for s, c := range p.Claimed {
			if c {
				held[name] = append(held[name], s)
			}
		}
	}
	a, err := replicas.Sticky(live, slots, held)
	if err != nil {
		panic(err)
	}
	return a
}
