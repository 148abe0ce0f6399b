package runner

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/shardinformer/shardinformer/replicas/handover"
	"github.com/shardinformer/shardinformer/replicas/members"
)

// kind is how a replica counts what a list showed of one member's Lease
// (doc.go, "Leases that cannot be read").
type kind uint8

const (
	// readable: as written; a member of the target.
	readable kind = iota
	// onStandby: readable, and on standby (members.StandbyAnnotation):
	// its claims count as written; not a member of the target.
	onStandby
	// unreadable: claims every slot, synced none; not a member.
	unreadable
	// expired: unreadable (or on standby) in every list for its
	// LeaseDuration: claims nothing; not a member.
	expired
	// otherSlots: written for another slot count (handover.ErrSlotCount):
	// claims every slot for as long as it is live; not a member.
	otherSlots
)

func (k kind) String() string {
	return [...]string{"readable", "on standby", "unreadable", "unreadable for its lease duration", "written for another slot count"}[k]
}

// reading is what a replica counts of one live member's Lease.
type reading struct {
	kind kind
	// published is what counts as the member's: as written (readable,
	// onStandby), every slot claimed and none synced (unreadable,
	// otherSlots), or nothing (expired).
	published handover.Published
	err       error // why it cannot be read; nil when readable or onStandby
}

// reader applies the rule for Leases that cannot be read (doc.go) to the
// Leases of each successful list. Owned by Run's goroutine; not safe for
// concurrent use.
type reader struct {
	slots int
	// gap: two successful lists further apart than this (from the start
	// of the earlier to the end of the later) start every stretch again —
	// the replica's RenewDeadline.
	gap       time.Duration
	prevStart time.Time // start of the previous successful list; zero before the first
	// stretches holds, per member whose last reading was neither readable
	// nor otherSlots, the run of such readings it is in.
	stretches map[string]stretch
}

// stretch is a run of consecutive lists that showed one Lease (one uid)
// unreadable or on standby, none further than reader.gap from the one
// before.
type stretch struct {
	uid   types.UID
	since time.Time // end of the run's first list
}

func newReader(slots int, gap time.Duration) *reader {
	return &reader{slots: slots, gap: gap, stretches: map[string]stretch{}}
}

// read returns the readings of the Leases of rd, a Round whose list
// succeeded, and advances the stretches.
func (r *reader) read(rd members.Round) map[string]reading {
	restart := r.prevStart.IsZero() || rd.ListEnd.Sub(r.prevStart) >= r.gap
	r.prevStart = rd.ListStart
	out := make(map[string]reading, len(rd.Leases))
	next := map[string]stretch{}
	for name, l := range rd.Leases {
		p, err := handover.Decode(l.Annotations, r.slots)
		standby, serr := l.Standby()
		if err == nil && serr != nil {
			p, err = claimAll(r.slots), serr
		}
		switch {
		case err == nil && !standby:
			out[name] = reading{kind: readable, published: p}
			continue
		case errors.Is(err, handover.ErrSlotCount):
			out[name] = reading{kind: otherSlots, published: p, err: err}
			continue
		}
		st, ok := r.stretches[name]
		if !ok || restart || st.uid != l.UID {
			st = stretch{uid: l.UID, since: rd.ListEnd}
		}
		next[name] = st
		switch {
		case err == nil:
			out[name] = reading{kind: onStandby, published: p}
		case rd.ListEnd.Sub(st.since) < l.Duration:
			out[name] = reading{kind: unreadable, published: p, err: err}
		default:
			out[name] = reading{kind: expired, published: handover.Published{
				Synced: make([]bool, r.slots), Claimed: make([]bool, r.slots)}, err: err}
		}
	}
	r.stretches = next
	return out
}

// claimAll is the conservative reading: every slot claimed, none synced.
func claimAll(slots int) handover.Published {
	p := handover.Published{Synced: make([]bool, slots), Claimed: make([]bool, slots)}
	for s := range p.Claimed {
		p.Claimed[s] = true
	}
	return p
}
