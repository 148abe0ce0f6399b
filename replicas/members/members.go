package members

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// GroupLabel is the label whose value is the group of a member's Lease.
const GroupLabel = "shardinformer.io/replica-group"

// StandbyAnnotation is the annotation in which a member says whether it is
// on standby: "true" while it is in quarantine after someone else made its
// Lease's annotations unreadable (see the package documentation) — it
// counts itself fenced and must not be given work — and "false" otherwise.
// Every renewal writes it; a Lease without it (written by an earlier
// version) is not on standby.
const StandbyAnnotation = "shardinformer.io/standby"

// Defaults of Config.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRenewInterval = 5 * time.Second
)

// ErrConfig is matched by every error of New.
var ErrConfig = errors.New("members: invalid config")

// Config configures a Membership.
type Config struct {
	// Leases is the typed Lease client of the namespace holding the
	// group's Leases. Required.
	Leases coordinationv1client.LeaseInterface
	// Group names the set of replicas. Required; "Group-Identity" must be
	// a valid object name.
	Group string
	// Identity names this replica, unique in the group. Required.
	Identity string
	// LeaseDuration is how long a member stays live without a renewal
	// observed; written into the Lease. Default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewDeadline: Fenced reports true once RenewDeadline has passed
	// since the start of the last successful renewal. Default
	// DefaultRenewDeadline; must lie between RenewInterval and
	// LeaseDuration, the margin to LeaseDuration absorbing differences in
	// clock rates between replicas.
	RenewDeadline time.Duration
	// RenewInterval is the period of Run's Sync. Default
	// DefaultRenewInterval; must be below RenewDeadline.
	RenewInterval time.Duration
	// Clock is the clock of renewals, observations and Run's ticker.
	// Default the real clock.
	Clock clock.WithTicker
	// Annotations, optional, is called by Sync before each renewal; the
	// pairs it returns are written into the Lease's annotations (other
	// annotations are kept), for peers to read in Round.Leases.
	Annotations func() map[string]string
	// Readable, optional, checks the annotations of this replica's Lease
	// as found after someone else wrote it: an error means peers cannot
	// read what this replica published (package handover's Decode), and
	// the replica enters quarantine. StandbyAnnotation is checked too:
	// without Readable, only a malformed StandbyAnnotation does that.
	Readable func(annotations map[string]string) error
	// OnChange, optional, is called by Run with the sorted live members
	// whenever they differ from the previous call (first with the first
	// set Sync computes). It must not block for long.
	OnChange func(live []string)
}

func (c *Config) validate() error {
	if c.Leases == nil {
		return fmt.Errorf("%w: Leases is nil", ErrConfig)
	}
	if c.Group == "" || c.Identity == "" {
		return fmt.Errorf("%w: Group and Identity are required", ErrConfig)
	}
	if errs := validation.IsDNS1123Subdomain(c.leaseName()); len(errs) > 0 {
		return fmt.Errorf("%w: lease name %q: %v", ErrConfig, c.leaseName(), errs)
	}
	if errs := validation.IsValidLabelValue(c.Group); len(errs) > 0 {
		return fmt.Errorf("%w: Group %q as a label value: %v", ErrConfig, c.Group, errs)
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = DefaultRenewInterval
	}
	if c.LeaseDuration < time.Second || c.RenewInterval <= 0 || c.RenewInterval >= c.RenewDeadline || c.RenewDeadline >= c.LeaseDuration {
		return fmt.Errorf("%w: need 0 < RenewInterval (%v) < RenewDeadline (%v) < LeaseDuration (%v), LeaseDuration >= 1s",
			ErrConfig, c.RenewInterval, c.RenewDeadline, c.LeaseDuration)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

func (c *Config) leaseName() string { return c.Group + "-" + c.Identity }

// observation is what a replica knows of one Lease.
type observation struct {
	resourceVersion string
	uid             types.UID
	holder          string
	annotations     map[string]string
	at              time.Time     // local time the resourceVersion was first seen
	duration        time.Duration // the Lease's leaseDurationSeconds
}

// quarantine is what a replica knows of the run of its own writes since
// someone else last made its Lease unreadable (the package
// documentation): while on, no renewal counts for Fenced.
type quarantine struct {
	on bool
	// since: when the response of the run's first write arrived; zero
	// before it. Writes are on standby until RenewDeadline after it.
	since time.Time
	// announced: when the response of the run's first write not on
	// standby arrived; zero before it. The first renewal starting
	// LeaseDuration after it counts, and ends the quarantine.
	announced time.Time
}

// Membership keeps this replica's Lease and its view of the group. Build it
// with New. See the package documentation for concurrency; must not be
// copied.
type Membership struct {
	cfg Config

	// Written by Sync only.
	own *coordinationv1.Lease // last version of our Lease written or read to be overwritten; nil: create it
	// foreign: someone else wrote the Lease after own (the list showed
	// it): the next renewal reads it first.
	foreign    bool
	quarantine quarantine
	observed   map[string]observation
	notified   []string // last set passed to OnChange, owned by Run

	mu struct {
		sync.Mutex
		live []string
		// renewedAt: start of the last renewal that counted; zero before
		// the first and from the start of a quarantine.
		renewedAt time.Time
	}
}

// New validates cfg and returns a Membership. It starts nothing and does
// no I/O.
func New(cfg Config) (*Membership, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Membership{cfg: cfg, observed: map[string]observation{}}, nil
}

// Self returns this replica's identity.
func (m *Membership) Self() string { return m.cfg.Identity }

// Members returns the live members computed by the last Sync, sorted; none
// before it.
func (m *Membership) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.mu.live)
}

// Round is the result of one Sync.
type Round struct {
	// Live holds the live members, sorted.
	Live []string
	// Renewed: this Sync's renewal succeeded, so its list was read after
	// the Lease carrying the latest Config.Annotations was written.
	Renewed bool
	// Leases holds, per live member, its Lease as listed (nil when the
	// list failed).
	Leases map[string]Lease
	// ListStart and ListEnd: this replica's clock just before the list
	// was sent and just after it returned (zero when it failed).
	ListStart, ListEnd time.Time
}

// Lease is what one list showed of a live member's Lease.
type Lease struct {
	// UID of the Lease: another one once it was deleted and created
	// again, as a replica does when it starts and finds a Lease left by
	// an earlier run.
	UID types.UID
	// Annotations as listed; read-only.
	Annotations map[string]string
	// Duration: its leaseDurationSeconds (Config.LeaseDuration when unset).
	Duration time.Duration
}

// Standby reports whether the Lease says its member is on standby
// (StandbyAnnotation); an error when the annotation is neither "true" nor
// "false" (absent: false).
func (l Lease) Standby() (bool, error) { return standby(l.Annotations) }

func standby(annotations map[string]string) (bool, error) {
	switch v, ok := annotations[StandbyAnnotation]; {
	case !ok || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	default:
		return false, fmt.Errorf("%w: %s is %q, want \"true\" or \"false\"", ErrAnnotation, StandbyAnnotation, v)
	}
}

// ErrAnnotation is matched by the errors of Lease.Standby.
var ErrAnnotation = errors.New("members: malformed annotation")

// Fenced reports whether RenewDeadline has passed since the start of the
// last renewal that counted (true before the first, and in quarantine). A
// replica that is fenced must stop acting as a member: its peers may drop
// it once LeaseDuration has passed since they last saw its Lease change,
// which is never before its own RenewDeadline (as long as clock rates
// differ by less than the margin).
func (m *Membership) Fenced() bool {
	m.mu.Lock()
	at := m.mu.renewedAt
	m.mu.Unlock()
	return at.IsZero() || m.cfg.Clock.Since(at) >= m.cfg.RenewDeadline
}

// Sync renews this replica's Lease, lists the group's Leases and returns
// the Round (the live members are also kept for Members), with the errors
// of the renewal and of the list, joined. When the list fails, the Leases seen
// before are judged again at the current time, so that members — this
// replica included — drop out as their observations age: a replica cut
// off from the API server finds itself and its peers dropped after
// LeaseDuration, as its peers drop it.
func (m *Membership) Sync(ctx context.Context) (Round, error) {
	err := m.renew(ctx)
	round := Round{Renewed: err == nil}
	start := m.cfg.Clock.Now()
	list, lerr := m.cfg.Leases.List(ctx, metav1.ListOptions{LabelSelector: GroupLabel + "=" + m.cfg.Group})
	now := m.cfg.Clock.Now()
	if lerr != nil {
		err = errors.Join(err, fmt.Errorf("members: list leases: %w", lerr))
	} else {
		m.observe(list.Items, now)
		round.Leases = map[string]Lease{}
		round.ListStart, round.ListEnd = start, now
	}
	for _, o := range m.observed {
		if now.Sub(o.at) < o.duration {
			round.Live = append(round.Live, o.holder)
			if round.Leases != nil {
				round.Leases[o.holder] = Lease{UID: o.uid, Annotations: o.annotations, Duration: o.duration}
			}
		}
	}
	slices.Sort(round.Live)
	round.Live = slices.Compact(round.Live)
	m.mu.Lock()
	m.mu.live = slices.Clone(round.Live)
	m.mu.Unlock()
	return round, err
}

// observe replaces the observations with those of leases, listed at now.
// A version of this replica's own Lease it did not write means someone else
// wrote it: the next renewal reads it first, and if that write left its
// annotations unreadable the replica enters quarantine at once.
func (m *Membership) observe(leases []coordinationv1.Lease, now time.Time) {
	seen := make(map[string]observation, len(leases))
	for i := range leases {
		l := &leases[i]
		if l.Name == m.cfg.leaseName() && m.own != nil && l.ResourceVersion != m.own.ResourceVersion {
			m.foreign = true
			if !m.readable(l.Annotations) {
				m.garbled()
			}
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			continue
		}
		o, ok := m.observed[l.Name]
		if !ok || o.resourceVersion != l.ResourceVersion {
			o = observation{resourceVersion: l.ResourceVersion, uid: l.UID, holder: *l.Spec.HolderIdentity, at: now, duration: m.cfg.LeaseDuration}
			if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
				o.duration = time.Duration(*d) * time.Second
			}
		}
		o.annotations = l.Annotations
		seen[l.Name] = o
	}
	m.observed = seen
}

// renew creates or updates this replica's Lease with the pairs of
// Config.Annotations and StandbyAnnotation. An update that finds the Lease
// written by someone else (409) reads it and updates that version; if the
// write had left the annotations unreadable (Config.Readable), the
// replica enters quarantine first.
func (m *Membership) renew(ctx context.Context) error {
	var ann map[string]string
	if m.cfg.Annotations != nil {
		ann = m.cfg.Annotations()
	}
	if m.own == nil {
		return m.create(ctx, ann)
	}
	if m.foreign {
		if err := m.reread(ctx); err != nil {
			return err
		}
	}
	err := m.update(ctx, ann)
	if apierrors.IsConflict(err) {
		if rerr := m.reread(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
		err = m.update(ctx, ann)
	}
	return err
}

// create creates this replica's Lease. A Lease of its name left by an
// earlier run of this identity is deleted first and created anew: this run
// cannot tell whether someone else wrote it, and peers count nothing of a
// Lease's past once its uid changes (package runner), so the new one
// counts at once.
func (m *Membership) create(ctx context.Context, ann map[string]string) error {
	start := m.cfg.Clock.Now()
	now := metav1.NewMicroTime(start)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: m.cfg.leaseName(), Labels: map[string]string{GroupLabel: m.cfg.Group},
			Annotations: withStandby(ann, false)},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(m.cfg.Identity),
			LeaseDurationSeconds: ptr.To(int32(m.cfg.LeaseDuration / time.Second)),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	created, err := m.cfg.Leases.Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *coordinationv1.Lease
		if old, err = m.cfg.Leases.Get(ctx, l.Name, metav1.GetOptions{}); err == nil {
			err = m.cfg.Leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}})
		}
		if err == nil || apierrors.IsNotFound(err) {
			created, err = m.cfg.Leases.Create(ctx, l, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("members: create lease %s: %w", l.Name, err)
	}
	m.own, m.foreign, m.quarantine = created, false, quarantine{}
	m.renewed(start)
	return nil
}

// reread reads this replica's Lease after someone else wrote it, to
// update that version; if that write left the annotations unreadable, the
// replica enters quarantine.
func (m *Membership) reread(ctx context.Context) error {
	cur, err := m.cfg.Leases.Get(ctx, m.cfg.leaseName(), metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			m.own, m.foreign = nil, false // created again at the next renewal
		}
		return fmt.Errorf("members: read lease %s: %w", m.cfg.leaseName(), err)
	}
	m.own, m.foreign = cur, false
	if !m.readable(cur.Annotations) {
		m.garbled()
	}
	return nil
}

// readable reports whether peers can read the annotations of this
// replica's Lease.
func (m *Membership) readable(ann map[string]string) bool {
	if _, err := standby(ann); err != nil {
		return false
	}
	return m.cfg.Readable == nil || m.cfg.Readable(ann) == nil
}

// garbled starts a quarantine (again): fenced at once, and no renewal
// counts until the Lease has held only this replica's writes long enough.
func (m *Membership) garbled() {
	m.quarantine = quarantine{on: true}
	m.mu.Lock()
	m.mu.renewedAt = time.Time{}
	m.mu.Unlock()
}

// update writes the version own of this replica's Lease with the
// annotations ann. In quarantine the write is on standby until
// RenewDeadline after the run's first write, and counts once LeaseDuration
// has passed since the first write not on standby.
func (m *Membership) update(ctx context.Context, ann map[string]string) error {
	start := m.cfg.Clock.Now()
	q := m.quarantine
	onStandby := q.on && q.announced.IsZero() && (q.since.IsZero() || start.Sub(q.since) < m.cfg.RenewDeadline)
	counts := !q.on || (!q.announced.IsZero() && start.Sub(q.announced) >= m.cfg.LeaseDuration)
	now := metav1.NewMicroTime(start)
	l := m.own.DeepCopy()
	l.Spec.HolderIdentity = ptr.To(m.cfg.Identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(m.cfg.LeaseDuration / time.Second))
	l.Spec.RenewTime = &now
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[GroupLabel] = m.cfg.Group
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	maps.Copy(l.Annotations, withStandby(ann, onStandby))
	updated, err := m.cfg.Leases.Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			m.own, m.foreign = nil, false // deleted: created again at the next renewal
		}
		return fmt.Errorf("members: renew lease %s: %w", l.Name, err)
	}
	m.own = updated
	switch {
	case counts:
		m.quarantine = quarantine{}
		m.renewed(start)
	case q.since.IsZero():
		m.quarantine.since = m.cfg.Clock.Now()
	case !onStandby && q.announced.IsZero():
		m.quarantine.announced = m.cfg.Clock.Now()
	}
	return nil
}

// withStandby returns ann with StandbyAnnotation set to on.
func withStandby(ann map[string]string, on bool) map[string]string {
	out := make(map[string]string, len(ann)+1)
	maps.Copy(out, ann)
	out[StandbyAnnotation] = strconv.FormatBool(on)
	return out
}

func (m *Membership) renewed(start time.Time) {
	m.mu.Lock()
	m.mu.renewedAt = start
	m.mu.Unlock()
}

// Run calls Sync every RenewInterval, starting at once, and OnChange when
// the live set changes, until ctx is done; errors of Sync are passed to
// onError when it is not nil, and Run carries on. It then deletes this
// replica's Lease (bounded by RenewDeadline, as ctx is already done) and
// returns the deletion's error, nil when the Lease was gone. Run starts no
// goroutine; it returns when it is done.
func (m *Membership) Run(ctx context.Context, onError func(error)) error {
	t := m.cfg.Clock.NewTicker(m.cfg.RenewInterval)
	defer t.Stop()
	for {
		round, err := m.Sync(ctx)
		live := round.Live
		if err != nil && onError != nil && ctx.Err() == nil {
			onError(err)
		}
		if m.cfg.OnChange != nil && (m.notified == nil || !slices.Equal(live, m.notified)) {
			m.notified = append([]string{}, live...)
			m.cfg.OnChange(live)
		}
		select {
		case <-ctx.Done():
			return m.Release()
		case <-t.C():
		}
	}
}

// Config returns the configuration, defaults filled in.
func (m *Membership) Config() Config { return m.cfg }

// Release deletes this replica's Lease, if it created or took one over,
// with a uid precondition and a timeout of RenewDeadline, so that peers
// drop the replica at their next Sync. Call it after the last Sync (Run
// does); nil when the Lease was already gone.
func (m *Membership) Release() error {
	if m.own == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RenewDeadline)
	defer cancel()
	err := m.cfg.Leases.Delete(ctx, m.own.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &m.own.UID}})
	m.own = nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("members: release lease: %w", err)
	}
	return nil
}
