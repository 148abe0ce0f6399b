package members

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/shardinformer/shardinformer/apisim"
)

// leases starts a simulated API server and returns a typed Lease client of
// namespace "ctrl" talking to it over HTTP.
func leases(t *testing.T) (*apisim.Server, coordinationv1client.LeaseInterface) {
	t.Helper()
	s, err := apisim.New(apisim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := s.RESTConfig()
	cfg.ContentType = apisim.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, cs.CoordinationV1().Leases("ctrl")
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func member(t *testing.T, l coordinationv1client.LeaseInterface, id string, clk *clocktesting.FakeClock) *Membership {
	t.Helper()
	m, err := New(Config{Leases: l, Group: "g", Identity: id, LeaseDuration: 15 * time.Second, RenewInterval: 5 * time.Second, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustSync(t *testing.T, m *Membership, want ...string) {
	t.Helper()
	round, err := m.Sync(t.Context())
	if err != nil {
		t.Fatalf("%s: Sync: %v", m.Self(), err)
	}
	got := round.Live
	if !round.Renewed || len(round.Leases) != len(want) || round.ListEnd.Before(round.ListStart) || round.ListStart.IsZero() {
		t.Fatalf("%s: round %+v", m.Self(), round)
	}
	if !slices.Equal(got, want) || !slices.Equal(m.Members(), want) {
		t.Fatalf("%s: live %v (Members %v), want %v", m.Self(), got, m.Members(), want)
	}
}

// TestJoinExpire: three replicas join and see each other; one stops
// renewing and is dropped by the others exactly when LeaseDuration has
// passed on their clock since they last saw its Lease change, and not
// before; it comes back when it renews again. Each replica has its own
// fake clock, set hours apart, to show that liveness does not depend on
// synchronised clocks.
func TestJoinExpire(t *testing.T) {
	_, l := leases(t)
	ca, cb, cc := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0.Add(3*time.Hour)), clocktesting.NewFakeClock(t0.Add(-5*time.Hour))
	a, b, c := member(t, l, "a", ca), member(t, l, "b", cb), member(t, l, "c", cc)
	mustSync(t, a, "a")
	mustSync(t, b, "a", "b")
	mustSync(t, c, "a", "b", "c")
	mustSync(t, a, "a", "b", "c")
	mustSync(t, b, "a", "b", "c")

	// c stops. a and b renew every 5s; at 10s c's Lease is 10s unchanged
	// for both.
	for range 2 {
		ca.Step(5 * time.Second)
		cb.Step(5 * time.Second)
		mustSync(t, a, "a", "b", "c")
		mustSync(t, b, "a", "b", "c")
	}
	// a last saw c change at a's first Sync after c's, i.e. 10s ago: at
	// 14.999s it is still live, at 15s gone.
	ca.Step(5*time.Second - time.Millisecond)
	mustSync(t, a, "a", "b", "c")
	ca.Step(time.Millisecond)
	mustSync(t, a, "a", "b")
	cb.Step(5 * time.Second)
	mustSync(t, b, "a", "b")

	// c renews: back at the others' next Sync.
	mustSync(t, c, "a", "b", "c")
	mustSync(t, a, "a", "b", "c")
}

// TestLeaseDeletedBehindItsBack: a replica whose Lease is deleted by
// someone else gets NotFound from its renewal, is not live in that Sync's
// list, and creates its Lease again at the next Sync.
func TestLeaseDeletedBehindItsBack(t *testing.T) {
	_, l := leases(t)
	clk := clocktesting.NewFakeClock(t0)
	a := member(t, l, "a", clk)
	mustSync(t, a, "a")
	if err := l.Delete(t.Context(), "g-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The update finds no Lease: error, and a's Lease is gone from the
	// list.
	round, err := a.Sync(t.Context())
	if live := round.Live; !apierrors.IsNotFound(err) || len(live) != 0 || round.Renewed {
		t.Fatalf("Sync after deletion: %v %v; want NotFound and nobody live", live, err)
	}
	// The next Sync creates it again.
	mustSync(t, a, "a")
}

// TestUnavailable: when the server refuses every request, Sync returns
// an error for the renewal and the list, and judges the Leases seen before
// at the current time: the members stay until LeaseDuration has passed
// since their last observed change, then all drop out, this replica
// included — a replica cut off from the API server stops counting itself
// when its peers stop counting it.
func TestUnavailable(t *testing.T) {
	s, l := leases(t)
	ca, cb := clocktesting.NewFakeClock(t0), clocktesting.NewFakeClock(t0)
	a, b := member(t, l, "a", ca), member(t, l, "b", cb)
	mustSync(t, a, "a")
	mustSync(t, b, "a", "b")
	mustSync(t, a, "a", "b")
	s.SetUnavailable(true)
	for _, step := range []time.Duration{0, 15*time.Second - time.Millisecond, time.Millisecond} {
		ca.Step(step)
		round, err := a.Sync(t.Context())
		live := round.Live
		want := []string{"a", "b"}
		if ca.Since(t0) >= 15*time.Second {
			want = nil
		}
		if !apierrors.IsServiceUnavailable(err) || !slices.Equal(live, want) {
			t.Fatalf("after %v unavailable: %v %v, want %v and 503", ca.Since(t0), live, err, want)
		}
	}
	s.SetUnavailable(false)
	mustSync(t, a, "a")
	mustSync(t, b, "a", "b")
}

// TestConflict: a write to the replica's Lease by someone else that leaves
// its annotations readable makes its renewal a 409, after which the same
// Sync reads the Lease again and updates that version, keeping the foreign
// write: the replica is not fenced, not on standby.
func TestConflict(t *testing.T) {
	_, l := leases(t)
	clk := clocktesting.NewFakeClock(t0)
	a := member(t, l, "a", clk)
	mustSync(t, a, "a")
	cur, err := l.Get(t.Context(), "g-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Annotations["x"] = "y"
	if _, err := l.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	mustSync(t, a, "a")
	after, _ := l.Get(t.Context(), "g-a", metav1.GetOptions{})
	if after.Annotations["x"] != "y" || after.Annotations[StandbyAnnotation] != "false" || !after.Spec.RenewTime.Time.Equal(clk.Now()) || a.Fenced() {
		t.Errorf("renewal after a foreign write: annotations %v, renewed %v (now %v), fenced %v", after.Annotations, after.Spec.RenewTime, clk.Now(), a.Fenced())
	}
}

// TestForeignLeases: Leases of another group, without the label, or
// without a holder are no members; a Lease left by an earlier run of
// this identity is replaced — deleted and created anew, with another uid,
// so that its past counts for nothing — not duplicated, and the replica is
// not fenced.
func TestForeignLeases(t *testing.T) {
	_, l := leases(t)
	ctx := t.Context()
	mk := func(name string, labels map[string]string, holder *string) {
		_, err := l.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: holder},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("other", map[string]string{GroupLabel: "h"}, ptr.To("x"))
	mk("unlabelled", nil, ptr.To("y"))
	mk("noholder", map[string]string{GroupLabel: "g"}, nil)
	mk("g-a", map[string]string{GroupLabel: "g"}, ptr.To("stale"))
	left, _ := l.Get(ctx, "g-a", metav1.GetOptions{})
	a := member(t, l, "a", clocktesting.NewFakeClock(t0))
	mustSync(t, a, "a")
	got, _ := l.Get(ctx, "g-a", metav1.GetOptions{})
	if *got.Spec.HolderIdentity != "a" || got.Spec.RenewTime == nil || got.UID == left.UID || a.Fenced() {
		t.Errorf("replaced lease: %+v, uid %s (left: %s), fenced %v", got.Spec, got.UID, left.UID, a.Fenced())
	}
}

// TestRun drives Run with a fake ticker: it syncs at once, calls OnChange
// with each new set, syncs again on each tick, and when ctx is done
// deletes its Lease and returns, so that a peer drops it at its next Sync
// without waiting for expiry.
func TestRun(t *testing.T) {
	_, l := leases(t)
	clk := clocktesting.NewFakeClock(t0)
	changes := make(chan []string, 10)
	m, err := New(Config{Leases: l, Group: "g", Identity: "a", Clock: clk, OnChange: func(live []string) { changes <- live }})
	if err != nil {
		t.Fatal(err)
	}
	peer := member(t, l, "b", clocktesting.NewFakeClock(t0))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- m.Run(ctx, func(err error) { t.Errorf("Run: %v", err) }) }()
	if got := <-changes; !slices.Equal(got, []string{"a"}) {
		t.Fatalf("first OnChange %v", got)
	}
	mustSync(t, peer, "a", "b")
	// Each tick is one Sync; the one after the peer joined reports it.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond) // until Run waits on its ticker
	}
	clk.Step(DefaultRenewInterval)
	if got := <-changes; !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("second OnChange %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
	if _, err := l.Get(t.Context(), "g-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("lease after Run: %v, want NotFound", err)
	}
	mustSync(t, peer, "b")
	select {
	case got := <-changes:
		t.Fatalf("OnChange after Run returned: %v", got)
	default:
	}
}

// TestConfig: each invalid Config is refused with ErrConfig.
func TestConfig(t *testing.T) {
	_, l := leases(t)
	for name, cfg := range map[string]Config{
		"no client":         {Group: "g", Identity: "a"},
		"no group":          {Leases: l, Identity: "a"},
		"no identity":       {Leases: l, Group: "g"},
		"bad name":          {Leases: l, Group: "g", Identity: "A_b"},
		"bad label":         {Leases: l, Group: "g.", Identity: "a"},
		"renew >= duration": {Leases: l, Group: "g", Identity: "a", LeaseDuration: 5 * time.Second, RenewInterval: 5 * time.Second},
		"duration under 1s": {Leases: l, Group: "g", Identity: "a", LeaseDuration: time.Millisecond, RenewInterval: time.Microsecond},
		"negative renewal":  {Leases: l, Group: "g", Identity: "a", RenewInterval: -time.Second},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

// TestFencedAndAnnotations: a replica is fenced before its first renewal
// and once RenewDeadline has passed since the start of its last successful
// one — before LeaseDuration, when its peers may drop it; the pairs of
// Config.Annotations are written at each renewal, keep other annotations,
// and reach the peers in Round.Annotations.
func TestFencedAndAnnotations(t *testing.T) {
	s, l := leases(t)
	clk := clocktesting.NewFakeClock(t0)
	n := 0
	a, err := New(Config{Leases: l, Group: "g", Identity: "a", Clock: clk, Annotations: func() map[string]string {
		n++
		return map[string]string{"shardinformer.io/n": fmt.Sprint(n)}
	}})
	if err != nil {
		t.Fatal(err)
	}
	b := member(t, l, "b", clocktesting.NewFakeClock(t0))
	if !a.Fenced() {
		t.Fatal("not fenced before the first renewal")
	}
	mustSync(t, a, "a")
	round, err := b.Sync(t.Context())
	if err != nil || round.Leases["a"].Annotations["shardinformer.io/n"] != "1" || round.Leases["a"].Annotations[StandbyAnnotation] != "false" ||
		len(round.Leases["b"].Annotations) != 1 || round.Leases["a"].Duration != DefaultLeaseDuration || round.Leases["a"].UID == "" {
		t.Fatalf("b's round: %+v %v", round, err)
	}
	cur, _ := l.Get(t.Context(), "g-a", metav1.GetOptions{})
	cur.Annotations["other"] = "kept"
	if _, err := l.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a, "a", "b") // 409, then a reads its Lease again and updates it
	mustSync(t, a, "a", "b")
	got, _ := l.Get(t.Context(), "g-a", metav1.GetOptions{})
	if got.Annotations["other"] != "kept" || got.Annotations["shardinformer.io/n"] != "3" {
		t.Fatalf("annotations %v", got.Annotations)
	}

	s.SetUnavailable(true)
	clk.Step(DefaultRenewDeadline - time.Millisecond)
	a.Sync(t.Context())
	if a.Fenced() {
		t.Fatal("fenced before RenewDeadline")
	}
	clk.Step(time.Millisecond)
	if !a.Fenced() {
		t.Fatal("not fenced at RenewDeadline")
	}
	s.SetUnavailable(false)
	mustSync(t, a, "a", "b")
	if a.Fenced() {
		t.Fatal("still fenced after a renewal")
	}
}

// garble writes garbage into the annotation "slots" of a's Lease, as
// someone else might.
func garble(t *testing.T, l coordinationv1client.LeaseInterface) {
	t.Helper()
	cur, err := l.Get(t.Context(), "g-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Annotations["slots"] = "garbage"
	if _, err := l.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// standbyOf returns the StandbyAnnotation of a's Lease.
func standbyOf(t *testing.T, l coordinationv1client.LeaseInterface) string {
	t.Helper()
	cur, err := l.Get(t.Context(), "g-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cur.Annotations[StandbyAnnotation]
}

// quarantined returns a member "a" whose Config.Readable refuses any value
// of "slots" but "ok", renewing every 5s with RenewDeadline 10s and
// LeaseDuration 15s.
func quarantined(t *testing.T, l coordinationv1client.LeaseInterface, clk *clocktesting.FakeClock) *Membership {
	t.Helper()
	a, err := New(Config{Leases: l, Group: "g", Identity: "a", Clock: clk,
		Annotations: func() map[string]string { return map[string]string{"slots": "ok"} },
		Readable: func(ann map[string]string) error {
			if ann["slots"] != "ok" {
				return errors.New("unreadable")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestQuarantine: when someone else makes the replica's annotations
// unreadable, its next renewal (a 409, then a read) fences it at once and
// starts a quarantine: renewals keep writing its annotations back, on
// standby (StandbyAnnotation "true") until the Lease has held only its own
// writes for RenewDeadline, then not on standby; the first renewal starting
// LeaseDuration after the first write not on standby counts again and ends
// the quarantine. Garbage during the quarantine starts it again; a foreign
// write that leaves the annotations readable does not.
func TestQuarantine(t *testing.T) {
	_, l := leases(t)
	clk := clocktesting.NewFakeClock(t0)
	a := quarantined(t, l, clk)
	mustSync(t, a, "a")
	step := func(fenced bool, standby string) {
		t.Helper()
		clk.Step(5 * time.Second)
		mustSync(t, a, "a")
		if a.Fenced() != fenced || standbyOf(t, l) != standby {
			t.Fatalf("at %v: fenced %v, standby %q; want %v, %q", clk.Since(t0), a.Fenced(), standbyOf(t, l), fenced, standby)
		}
	}
	step(false, "false")
	garble(t, l)
	step(true, "true") // 5s: garbled, read, rewritten on standby
	step(true, "true")
	garble(t, l) // again: the quarantine starts over
	step(true, "true")
	step(true, "true")
	cur, _ := l.Get(t.Context(), "g-a", metav1.GetOptions{})
	cur.Annotations["x"] = "y" // readable: no restart
	if _, err := l.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	step(true, "false") // RenewDeadline since the run's first write: announced
	step(true, "false")
	step(true, "false")
	step(false, "false") // LeaseDuration after the announcement: counts
	step(false, "false")
}

// listGarbler garbles a's Lease right before each list while on is set:
// after the renewal, so that only the list shows it.
type listGarbler struct {
	coordinationv1client.LeaseInterface
	t  *testing.T
	on bool
}

func (g *listGarbler) List(ctx context.Context, o metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if g.on {
		g.on = false
		garble(g.t, g.LeaseInterface)
	}
	return g.LeaseInterface.List(ctx, o)
}

// TestQuarantineFromList: garbage the list shows right after a renewal
// fences the replica in that Sync, before its next renewal.
func TestQuarantineFromList(t *testing.T) {
	_, l := leases(t)
	g := &listGarbler{LeaseInterface: l, t: t}
	clk := clocktesting.NewFakeClock(t0)
	a := quarantined(t, g, clk)
	mustSync(t, a, "a")
	g.on = true
	mustSync(t, a, "a")
	if !a.Fenced() {
		t.Fatal("not fenced after the list showed its Lease garbled")
	}
	clk.Step(5 * time.Second)
	mustSync(t, a, "a")
	if !a.Fenced() || standbyOf(t, l) != "true" {
		t.Fatalf("fenced %v, standby %q; want the renewal after it on standby", a.Fenced(), standbyOf(t, l))
	}
}

// lostResponse commits an update and then reports it failed, once, as when
// a response is lost.
type lostResponse struct {
	coordinationv1client.LeaseInterface
	on bool
}

func (f *lostResponse) Update(ctx context.Context, lease *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	got, err := f.LeaseInterface.Update(ctx, lease, o)
	if f.on && err == nil {
		f.on = false
		return nil, errors.New("response lost")
	}
	return got, err
}

// TestLostResponseIsNoGarbage: a renewal whose response was lost leaves a
// version the replica did not see written; the list shows it, the next
// renewal reads it, and since it is readable there is no quarantine.
func TestLostResponseIsNoGarbage(t *testing.T) {
	_, l := leases(t)
	f := &lostResponse{LeaseInterface: l}
	clk := clocktesting.NewFakeClock(t0)
	a := quarantined(t, f, clk)
	mustSync(t, a, "a")
	f.on = true
	clk.Step(5 * time.Second)
	if round, err := a.Sync(t.Context()); err == nil || round.Renewed {
		t.Fatalf("renewal with a lost response: %v, renewed %v", err, round.Renewed)
	}
	clk.Step(4 * time.Second)
	mustSync(t, a, "a")
	if a.Fenced() || standbyOf(t, l) != "false" {
		t.Fatalf("fenced %v, standby %q after a lost response", a.Fenced(), standbyOf(t, l))
	}
}
