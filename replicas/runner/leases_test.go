package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardinformer/shardinformer/apisim"
	"github.com/shardinformer/shardinformer/replicas/handover"
	"github.com/shardinformer/shardinformer/replicas/members"
)

// TestReader follows one member's Lease through a reader's lists, 1s
// apart (RenewDeadline 2.5s, LeaseDuration 4s), and checks how each list
// counts it: readable as written; unreadable claiming every slot until
// LeaseDuration has passed since the first list of its stretch, then
// claiming nothing; on standby as written, neither ending nor starting a
// stretch's clock; a stretch ended by a readable list, and started again
// by a gap of RenewDeadline between lists or by another uid; written for
// another slot count, claiming every slot however long; a malformed
// standby annotation unreadable.
func TestReader(t *testing.T) {
	const slots = 8
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mine := handover.Published{Synced: make([]bool, slots), Claimed: make([]bool, slots)}
	mine.Synced[3], mine.Claimed[3] = true, true
	good := mine.Encode()
	withStandby := func(a map[string]string, v string) map[string]string {
		out := map[string]string{members.StandbyAnnotation: v}
		for k, x := range a {
			out[k] = x
		}
		return out
	}
	garbage := map[string]string{handover.AnnotationSynced: "00", handover.AnnotationClaimed: "not hex"}
	sixteen := handover.Published{Synced: make([]bool, 16), Claimed: make([]bool, 16)}.Encode()

	r := newReader(slots, 2500*time.Millisecond)
	at := t0
	uid := types.UID("u1")
	step := func(gap time.Duration, ann map[string]string, want kind) {
		t.Helper()
		at = at.Add(gap)
		rd := members.Round{ListStart: at, ListEnd: at.Add(10 * time.Millisecond),
			Leases: map[string]members.Lease{"p": {UID: uid, Annotations: ann, Duration: 4 * time.Second}}}
		got := r.read(rd)["p"]
		if got.kind != want {
			t.Fatalf("at %v: %v (%v), want %v", at.Sub(t0), got.kind, got.err, want)
		}
		claimed := slices.Index(got.published.Claimed, false) < 0
		none := slices.Index(got.published.Claimed, true) < 0 && slices.Index(got.published.Synced, true) < 0
		switch want {
		case readable, onStandby:
			if !slices.Equal(got.published.Claimed, mine.Claimed) || !slices.Equal(got.published.Synced, mine.Synced) || got.err != nil {
				t.Fatalf("at %v: %v read as %v, %v; want as written", at.Sub(t0), want, got.published, got.err)
			}
		case unreadable, otherSlots:
			if !claimed || slices.Contains(got.published.Synced, true) || got.err == nil {
				t.Fatalf("at %v: %v read as %v, %v; want every slot claimed, none synced, an error", at.Sub(t0), want, got.published, got.err)
			}
		case expired:
			if !none || got.err == nil {
				t.Fatalf("at %v: expired read as %v, %v; want nothing, an error", at.Sub(t0), got.published, got.err)
			}
		}
	}
	second := time.Second
	step(0, withStandby(good, "false"), readable)
	step(second, good, readable) // no standby annotation: an earlier version
	step(second, garbage, unreadable)
	step(second, garbage, unreadable)
	step(second, withStandby(good, "true"), onStandby)
	step(second, garbage, unreadable) // 3s after the stretch's first list
	step(second, garbage, expired)    // 4s
	step(second, withStandby(good, "true"), onStandby)
	step(second, garbage, expired)
	step(second, good, readable) // the stretch ends
	step(second, garbage, unreadable)
	step(second, garbage, unreadable)
	step(second, garbage, unreadable)
	step(3*second, garbage, unreadable) // a gap of RenewDeadline: a new stretch
	step(second, garbage, unreadable)
	step(second, garbage, unreadable)
	step(second, garbage, unreadable)
	step(second, garbage, expired)
	uid = "u2" // deleted and created again
	step(second, garbage, unreadable)
	step(second, withStandby(good, "maybe"), unreadable)
	for range 10 {
		step(second, sixteen, otherSlots)
	}
	step(second, garbage, unreadable) // otherSlots ended the stretch
}

// garbling wraps P's Lease client: while garble is set, each list is
// preceded, with probability 1/3, by someone else's garbage in P's Lease
// — after P's renewal, before its list.
type garbling struct {
	coordinationv1client.LeaseInterface
	rng    *rand.Rand
	garble bool
	write  func()
}

func (g *garbling) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if g.garble && g.rng.IntN(3) == 0 {
		g.write()
	}
	return g.LeaseInterface.List(ctx, o)
}

// TestReaderAgainstQuarantine checks the argument of doc.go on random
// schedules: a replica P and a peer Q run rounds at random moments of one
// fake clock (Q pausing, now and then, for longer than RenewDeadline),
// someone else writes garbage into P's Lease in phases (sometimes between
// P's renewal and its list), and labels or deletes it at any time, and Q's
// reader reads each of Q's lists. Whenever Q
// lets go of P's claims (P unreadable for its LeaseDuration) or goes by
// them on standby, P must be fenced. After the garbage stops, P becomes
// readable and unfenced again. Each schedule must have let go at least
// once, so that the check is not vacuous.
func TestReaderAgainstQuarantine(t *testing.T) {
	const slots = 8
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for seed := range uint64(6) {
		ns := fmt.Sprint("ctrl-", seed)
		lc := cs.CoordinationV1().Leases(ns)
		rng := rand.New(rand.NewPCG(seed, 7))
		clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		foreign := func(garbage bool) {
			cur, err := lc.Get(ctx, "g-p", metav1.GetOptions{})
			if err != nil {
				return
			}
			if garbage {
				cur.Annotations[handover.AnnotationClaimed] = "garbage"
			} else {
				cur.Annotations[fmt.Sprint("other-", rng.IntN(3))] = fmt.Sprint(rng.IntN(100))
			}
			_, _ = lc.Update(ctx, cur, metav1.UpdateOptions{})
		}
		g := &garbling{LeaseInterface: lc, rng: rng, write: func() { foreign(true) }}
		claims := handover.Published{Synced: make([]bool, slots), Claimed: make([]bool, slots)}
		claims.Claimed[2], claims.Synced[2] = true, true
		newMember := func(id string, leases coordinationv1client.LeaseInterface) *members.Membership {
			m, err := members.New(members.Config{Leases: leases, Group: "g", Identity: id, Clock: clk,
				Annotations: func() map[string]string { return claims.Encode() },
				Readable:    func(a map[string]string) error { _, err := handover.Decode(a, slots); return err }})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		p, q := newMember("p", g), newMember("q", lc)
		r := newReader(slots, q.Config().RenewDeadline)
		letGo, standby := 0, 0
		garbage, paused := true, false // phases of about 20 steps
		for i := range 1200 {
			if rng.IntN(20) == 0 {
				garbage = !garbage
			}
			if rng.IntN(20) == 0 {
				paused = !paused // Q runs no round: gaps longer than RenewDeadline
			}
			g.garble = garbage
			clk.Step(time.Duration(rng.IntN(2000)) * time.Millisecond)
			if rng.IntN(2) == 0 {
				_, _ = p.Sync(ctx)
			}
			if garbage && rng.IntN(6) == 0 {
				foreign(true)
			}
			if rng.IntN(20) == 0 {
				foreign(false)
			}
			if rng.IntN(100) == 0 {
				_ = lc.Delete(ctx, "g-p", metav1.DeleteOptions{}) // P creates it again: another uid
			}
			if paused || rng.IntN(2) == 0 {
				continue
			}
			rd, err := q.Sync(ctx)
			if err != nil || rd.Leases == nil {
				continue
			}
			rg, ok := r.read(rd)["p"]
			if !ok {
				continue
			}
			switch rg.kind {
			case expired:
				letGo++
			case onStandby:
				standby++
			default:
				continue
			}
			if !p.Fenced() {
				t.Fatalf("seed %d, step %d: Q reads P %v, and P is not fenced", seed, i, rg.kind)
			}
		}
		g.garble = false
		// The garbage has stopped: P and Q renew on time until P is back.
		back := false
		for range 20 {
			clk.Step(5 * time.Second)
			_, _ = p.Sync(ctx)
			rd, err := q.Sync(ctx)
			if err == nil && rd.Leases != nil && r.read(rd)["p"].kind == readable && !p.Fenced() {
				back = true
				break
			}
		}
		if !back || letGo == 0 {
			t.Fatalf("seed %d: P back %v; Q let go of P's claims %d times, read it on standby %d times", seed, back, letGo, standby)
		}
		t.Logf("seed %d: Q let go of P's claims in %d lists, read it on standby in %d", seed, letGo, standby)
	}
}
