package testkit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// Kind is the kind of a handler call as a Recorder classifies it.
type Kind string

// Kinds of handler calls.
const (
	Add       Kind = "add"       // OnAdd
	Update    Kind = "update"    // OnUpdate to another resourceVersion
	Sync      Kind = "sync"      // OnUpdate(x, x): a periodic resync of the cached object
	Replay    Kind = "replay"    // OnUpdate, same resourceVersion, another object: a relist found it unchanged
	Delete    Kind = "delete"    // OnDelete with the final state
	Tombstone Kind = "tombstone" // OnDelete with a cache.DeletedFinalStateUnknown
)

// Event is one handler call.
type Event struct {
	Kind    Kind
	Key     string
	Initial bool // OnAdd's isInInitialList
	Old     any  // Update, Sync, Replay
	Obj     any  // the new object, the final state, or the tombstone
	// Label and OldLabel are the Recorder's labels of Obj and Old (of a
	// tombstone's object; "?" when it has none).
	Label, OldLabel string
}

// String renders e as "add:L", "add:L/initial", "update:O->L", "sync:L",
// "replay:L", "delete:L" or "tombstone:L", L and O being the labels.
func (e Event) String() string {
	switch e.Kind {
	case Add:
		if e.Initial {
			return "add:" + e.Label + "/initial"
		}
	case Update:
		return "update:" + e.OldLabel + "->" + e.Label
	}
	return string(e.Kind) + ":" + e.Label
}

// Recorder is a cache.ResourceEventHandler that logs every call per key and
// checks each one against what it was told before (see the package
// documentation); broken rules are collected as violations, which
// CheckConsistent reports. Set its exported fields before registering it.
// The zero value is ready to use; it is safe for concurrent use and must
// not be copied.
type Recorder struct {
	// Label renders an object in events and is what WaitKnown compares
	// (default: its resourceVersion). It receives a tombstone's object.
	Label func(obj any) string
	// Serial: the handler must never be called concurrently (client-go's
	// contract for AddEventHandler). Calls for one key must never overlap
	// in any case.
	Serial bool
	// Exact: every notification reaches the handler, so a delete's final
	// state must be the state it was last told. Without it (a handler whose
	// notifications may be merged) only the rest is checked.
	Exact bool
	// Before, if set, runs at the start of every call, outside the lock; it
	// may block (to hold the handler), sleep or panic.
	Before func(Event)
	// Check, if set, checks every event's object (a transform applied, a
	// selector honoured); an error is a violation.
	Check func(Event) error
	// KeepLast bounds the events kept per key (0: all). With a bound the
	// log of all events is not kept (All returns nil), for long churns.
	KeepLast int

	mu struct {
		sync.Mutex
		all        []Event
		byKey      map[string][]Event
		keys       map[string]*keyState
		counts     map[Kind]int
		initial    int
		active     int
		maxActive  int
		violations []string
		nViolation int
		changed    chan struct{} // closed and replaced on every call
	}
}

// keyState is what the handler was last told about a key.
type keyState struct {
	present bool
	label   string
	obj     any
	rv      uint64 // newest resourceVersion seen for the key (0: none known)
	tomb    bool   // the last call was a tombstone
	busy    int    // calls in progress for the key
}

const maxViolations = 50

func (r *Recorder) OnAdd(obj any, isInInitialList bool) {
	r.handle(Event{Kind: Add, Key: keyOf(obj), Initial: isInInitialList, Obj: obj})
}

func (r *Recorder) OnUpdate(old, obj any) {
	kind := Update
	if rvOf(old) == rvOf(obj) {
		kind = Replay
		if old == obj {
			kind = Sync
		}
	}
	r.handle(Event{Kind: kind, Key: keyOf(obj), Old: old, Obj: obj})
}

func (r *Recorder) OnDelete(obj any) {
	kind := Delete
	if _, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		kind = Tombstone
	}
	r.handle(Event{Kind: kind, Key: keyOf(obj), Obj: obj})
}

func (r *Recorder) handle(e Event) {
	e.Label = r.label(e.Obj)
	if e.Old != nil {
		e.OldLabel = r.label(e.Old)
	}
	r.mu.Lock()
	r.initLocked()
	ks := r.stateLocked(e.Key)
	ks.busy++
	if ks.busy > 1 {
		r.violateLocked("%s: %s: called while another call for the key is in progress", e.Key, e)
	}
	r.mu.active++
	if r.Serial && r.mu.active > 1 {
		r.violateLocked("%s: %s: serial handler called concurrently (%d calls in progress)", e.Key, e, r.mu.active)
	}
	r.mu.maxActive = max(r.mu.maxActive, r.mu.active)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		ks.busy--
		r.mu.active--
	}()
	if r.Before != nil {
		r.Before(e)
	}
	var checkErr error
	if r.Check != nil {
		checkErr = r.Check(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if checkErr != nil {
		r.violateLocked("%s: %s: %v", e.Key, e, checkErr)
	}
	r.checkLocked(ks, e)
	r.mu.counts[e.Kind]++
	if e.Kind == Add && e.Initial {
		r.mu.initial++
	}
	if r.KeepLast == 0 {
		r.mu.all = append(r.mu.all, e)
	}
	log := append(r.mu.byKey[e.Key], e)
	if r.KeepLast > 0 && len(log) > r.KeepLast {
		log = slices.Delete(log, 0, len(log)-r.KeepLast)
	}
	r.mu.byKey[e.Key] = log
	close(r.mu.changed)
	r.mu.changed = make(chan struct{})
}

// checkLocked checks e against what the handler was told before and
// records it as the key's state.
// REQUIRES: r.mu held.
func (r *Recorder) checkLocked(ks *keyState, e Event) {
	bad := func(format string, args ...any) {
		r.violateLocked("%s: %s: %s (recent: %v)", e.Key, e, fmt.Sprintf(format, args...), r.seqLocked(e.Key))
	}
	rv, rvOK := r.rvLocked(e, e.Obj)
	switch e.Kind {
	case Add:
		if ks.present {
			bad("add of a key the handler already has (%s)", ks.label)
		}
		if rvOK && ks.rv != 0 && rv <= ks.rv {
			bad("resourceVersion %d is not after %d", rv, ks.rv)
		}
		ks.present = true
	case Update, Sync, Replay:
		if !ks.present {
			bad("update of a key the handler does not have")
			break
		}
		if e.OldLabel != ks.label {
			bad("old object is %s, the handler was last told %s", e.OldLabel, ks.label)
		} else if rvOf(e.Old) != rvOf(ks.obj) {
			// Not necessarily the same object: a handler that does not
			// resync is not told when a relist replaces it with an equal copy.
			bad("old object has resourceVersion %s, the handler was last given %s", rvOf(e.Old), rvOf(ks.obj))
		}
		if rvOK && rv < ks.rv {
			bad("resourceVersion %d goes back from %d", rv, ks.rv)
		}
	case Delete, Tombstone:
		if !ks.present {
			bad("delete of a key the handler does not have")
		} else if r.Exact && e.Label != ks.label {
			bad("final state is %s, the handler was last told %s", e.Label, ks.label)
		}
		// A delete event carries a new resourceVersion; a tombstone may
		// repeat the last one.
		if rvOK && (rv < ks.rv || rv == ks.rv && e.Kind == Delete) {
			bad("resourceVersion %d is not after %d", rv, ks.rv)
		}
		ks.present = false
	}
	ks.label, ks.obj, ks.tomb = e.Label, e.Obj, e.Kind == Tombstone
	if rvOK {
		ks.rv = max(ks.rv, rv)
	}
}

// rvLocked parses obj's resourceVersion: ok is false when it has none, and
// a version that is not a number is a violation.
// REQUIRES: r.mu held.
func (r *Recorder) rvLocked(e Event, obj any) (uint64, bool) {
	s := rvOf(obj)
	if s == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		r.violateLocked("%s: %s: resourceVersion %q is not a number", e.Key, e, s)
		return 0, false
	}
	return n, true
}

// REQUIRES: r.mu held.
func (r *Recorder) initLocked() {
	if r.mu.byKey == nil {
		r.mu.byKey = map[string][]Event{}
		r.mu.keys = map[string]*keyState{}
		r.mu.counts = map[Kind]int{}
		r.mu.changed = make(chan struct{})
	}
}

// REQUIRES: r.mu held.
func (r *Recorder) stateLocked(key string) *keyState {
	ks := r.mu.keys[key]
	if ks == nil {
		ks = &keyState{}
		r.mu.keys[key] = ks
	}
	return ks
}

// REQUIRES: r.mu held.
func (r *Recorder) violateLocked(format string, args ...any) {
	r.mu.nViolation++
	if len(r.mu.violations) < maxViolations {
		r.mu.violations = append(r.mu.violations, fmt.Sprintf(format, args...))
	}
}

func (r *Recorder) label(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if d.Obj == nil {
			return "?"
		}
		obj = d.Obj
	}
	if r.Label != nil {
		return r.Label(obj)
	}
	return rvOf(obj)
}

// rvOf returns obj's resourceVersion ("" for none), looking into tombstones.
func rvOf(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func keyOf(obj any) string {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return fmt.Sprintf("<no key: %v>", err)
	}
	return k
}

// Events returns key's events, oldest first.
func (r *Recorder) Events(key string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.byKey[key])
}

// All returns every event in the order the calls completed (nil with
// KeepLast).
func (r *Recorder) All() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.all)
}

// Seq returns key's events as strings, leaving out the kinds in skip.
func (r *Recorder) Seq(key string, skip ...Kind) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seqLocked(key, skip...)
}

// REQUIRES: r.mu held.
func (r *Recorder) seqLocked(key string, skip ...Kind) []string {
	var out []string
	for _, e := range r.mu.byKey[key] {
		if !slices.Contains(skip, e.Kind) {
			out = append(out, e.String())
		}
	}
	return out
}

// Count returns the number of calls, or of calls of the given kinds.
func (r *Recorder) Count(kinds ...Kind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, c := range r.mu.counts {
		if len(kinds) == 0 || slices.Contains(kinds, k) {
			n += c
		}
	}
	return n
}

// InitialAdds returns the number of adds flagged isInInitialList.
func (r *Recorder) InitialAdds() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.initial
}

// MaxActive returns the most calls that were ever in progress at once.
func (r *Recorder) MaxActive() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.maxActive
}

// Known returns the label of the state the handler was last told for key,
// and whether it holds the key.
func (r *Recorder) Known(key string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ks := r.mu.keys[key]; ks != nil && ks.present {
		return ks.label, true
	}
	return "", false
}

// Tombstoned returns those of keys whose last call was not a tombstone.
func (r *Recorder) Tombstoned(keys []string) (notTombstoned []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if ks := r.mu.keys[k]; ks == nil || ks.present || !ks.tomb {
			notTombstoned = append(notTombstoned, k)
		}
	}
	return notTombstoned
}

// State returns the resourceVersion of every key the handler holds.
func (r *Recorder) State() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, ks := range r.mu.keys {
		if ks.present {
			out[k] = rvOf(ks.obj)
		}
	}
	return out
}

// Diff compares the keys the handler holds, at their resourceVersions,
// with want (key → resourceVersion), and returns up to limit differences
// and how many there are.
func (r *Recorder) Diff(want map[string]string, limit int) ([]string, int) {
	return DiffState(r.State(), want, limit, func(key string) string { return strings.Join(r.Seq(key), " ") })
}

// DiffState compares got with want (key → resourceVersion) and returns up to
// limit differences and how many there are; history, if set, adds a key's
// recent events to its difference.
func DiffState(got, want map[string]string, limit int, history func(key string) string) ([]string, int) {
	var out []string
	n := 0
	add := func(key, format string, args ...any) {
		n++
		if len(out) >= limit {
			return
		}
		s := key + ": " + fmt.Sprintf(format, args...)
		if history != nil {
			s += " (events: " + history(key) + ")"
		}
		out = append(out, s)
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		switch rv, ok := got[k]; {
		case !ok:
			add(k, "at resourceVersion %s on the server, absent here", want[k])
		case rv != want[k]:
			add(k, "at resourceVersion %s on the server, %s here", want[k], rv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			add(k, "at resourceVersion %s here, not on the server", got[k])
		}
	}
	return out, n
}

// Violations returns the broken rules seen (the first 50) and their count.
func (r *Recorder) Violations() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.violations), r.mu.nViolation
}

// CheckConsistent fails the test with every violation seen.
func (r *Recorder) CheckConsistent(t testing.TB) {
	t.Helper()
	v, n := r.Violations()
	for _, s := range v {
		t.Errorf("inconsistent notification: %s", s)
	}
	if n > len(v) {
		t.Errorf("… and %d more inconsistent notifications", n-len(v))
	}
}

// WaitFor waits until cond holds, checking it after every call; cond may
// call the Recorder's methods. It fails the test, with the events seen, if
// cond does not hold within Guard.
func (r *Recorder) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(Guard)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		r.initLocked()
		ch := r.mu.changed
		r.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			r.CheckConsistent(t)
			t.Fatalf("timed out (guard %v) waiting for %s; the handler saw:\n%s", Guard, what, r.Dump())
		}
	}
}

// WaitEvent waits until the handler has seen, for key, the event rendered
// as s (see Event.String).
func (r *Recorder) WaitEvent(t testing.TB, key, s string) {
	t.Helper()
	r.WaitFor(t, key+" "+s, func() bool { return slices.Contains(r.Seq(key), s) })
}

// WaitKnown waits until the handler holds key with the given label, or does
// not hold it if label is "".
func (r *Recorder) WaitKnown(t testing.TB, key, label string) {
	t.Helper()
	r.WaitFor(t, fmt.Sprintf("%s to be %q", key, label), func() bool {
		l, ok := r.Known(key)
		return ok == (label != "") && l == label
	})
}

// WaitCount waits until the handler has been called n times (or more).
func (r *Recorder) WaitCount(t testing.TB, n int) {
	t.Helper()
	r.WaitFor(t, fmt.Sprintf("%d calls", n), func() bool { return r.Count() >= n })
}

// Dump renders every key's events, one key a line.
func (r *Recorder) Dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(r.mu.byKey)) {
		fmt.Fprintf(&b, "  %s: %v\n", k, r.seqLocked(k))
	}
	return b.String()
}

// Labels returns the label of every key the handler holds.
func (r *Recorder) Labels() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, ks := range r.mu.keys {
		if ks.present {
			out[k] = ks.label
		}
	}
	return out
}
