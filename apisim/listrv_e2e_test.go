//go:build e2e

package apisim

// LISTs at resourceVersion "0" (and their neighbours) against a real
// kube-apiserver v1.36.3 with its default watch cache: the same requests to
// apisim and to the real server must get the same answers — status, item
// count, whether a continue token and a remainingItemCount come back, how
// the list's resourceVersion relates to the one asked for and to the
// server's state, and what following the continue tokens as client-go's
// pager does (resourceVersion cleared) adds up to. Run with
//
//	SHARDINFORMER_E2E_REQUIRE=1 go test -tags e2e -count=1 -run TestListResourceVersionZero -v ./apisim/

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
)

// listAnswer is what one LIST got, reduced to what the servers must agree
// on: their resourceVersions differ, so RV describes the list's
// resourceVersion by its relation to the request and to the server's
// state (see relate), and FirstPage and the pages after it are walked
// as client-go's pager walks them.
type listAnswer struct {
	Status    response `json:",omitzero"`
	Items     int
	Continue  bool
	Remaining *int64 `json:",omitempty"`
	RV        string
	// Pages and Total: the pages and items of the whole walk, following
	// each continue token with resourceVersion and resourceVersionMatch
	// cleared; SameRV: every page carried the first page's resourceVersion.
	Pages, Total int `json:",omitzero"`
	SameRV       bool
}

// rvState is what relate compares a list's resourceVersion with.
type rvState struct {
	lastWrite uint64 // of the listed resource, before every request
	requested uint64 // 0: "0" or unset
}

// relate describes rv: equal to the requested one, or newer than it, and
// whether it is fresh — at least the last write of the resource (made
// before the request) and at most a consistent list's made after it.
func relate(t *testing.T, tg *target, s rvState, rv string) string {
	t.Helper()
	r, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return "unparsable " + strconv.Quote(rv)
	}
	after, err := tg.cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	now, _ := strconv.ParseUint(after.ResourceVersion, 10, 64)
	var out string
	switch {
	case s.requested == 0:
	case r == s.requested:
		return "= requested"
	case r > s.requested:
		out = "> requested, "
	default:
		return "< requested"
	}
	switch {
	case r < s.lastWrite:
		return out + "older than the last write"
	case r > now:
		return out + "newer than a later consistent list"
	}
	return out + "fresh"
}

// walk lists with o through list, then follows the continue tokens as
// client-go's pager does, and describes the answers.
func walk(t *testing.T, tg *target, s rvState, list func(metav1.ListOptions) (k8sruntime.Object, error), o metav1.ListOptions) listAnswer {
	t.Helper()
	obj, err := list(o)
	if err != nil {
		return listAnswer{Status: statusOf(err)}
	}
	lm, _ := meta.ListAccessor(obj)
	n := meta.LenList(obj)
	a := listAnswer{Items: n, Continue: lm.GetContinue() != "", Remaining: lm.GetRemainingItemCount(),
		RV: relate(t, tg, s, lm.GetResourceVersion()), Pages: 1, Total: n, SameRV: true}
	first := lm.GetResourceVersion()
	for next := o; lm.GetContinue() != ""; {
		next.Continue, next.ResourceVersion, next.ResourceVersionMatch = lm.GetContinue(), "", ""
		if obj, err = list(next); err != nil {
			a.Status = statusOf(err)
			return a
		}
		lm, _ = meta.ListAccessor(obj)
		a.Pages++
		a.Total += meta.LenList(obj)
		a.SameRV = a.SameRV && lm.GetResourceVersion() == first
	}
	return a
}

// TestListResourceVersionZero: kube-apiserver v1.36.3 serves a LIST at
// resourceVersion "0" from its watch cache and ignores the limit there
// (cacher.computeListLimit), with resourceVersionMatch unset or
// NotOlderThan, for built-in and custom resources, typed and metadata, with
// selectors and in a namespace: the whole list, fresh (at least the last
// write, once the cache has it), no continue token, no remainingItemCount.
// A continue token presented with resourceVersion "0" gets the rest of the
// token's snapshot whole, at the token's resourceVersion, without the writes
// made since. Every other list with a limit pages — unset (consistent),
// NotOlderThan an older resourceVersion (the current state), an older one
// with or without Exact (that snapshot) — with remainingItemCount the keys
// after the page (unset under a label selector), and the pages keep the
// first page's resourceVersion. apisim must answer each request the same way.
func TestListResourceVersionZero(t *testing.T) {
	const n = 30 // objects per resource: 10 per namespace ns-0..ns-2
	real := startReal(t, n)
	sim := startSim(t, n, Config{})
	ctx := context.Background()
	// Per target: the resourceVersions of obj-00009 (the tenth pod
	// written: the older resourceVersion asked for) and of the last pod
	// written, the app label of obj-00000, and the continue token and
	// resourceVersion of a first page listed before that last write.
	type setup struct {
		older, last uint64
		lastWidget  uint64 // resourceVersion of the last widget written
		app         string
		token       string
		tokenRV     uint64
	}
	setups := map[*target]*setup{}
	for _, tg := range []*target{real, sim} {
		s := &setup{}
		setups[tg] = s
		p, err := tg.cs.CoreV1().Pods("ns-0").Get(ctx, "obj-00009", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.older, _ = strconv.ParseUint(p.ResourceVersion, 10, 64)
		if p, err = tg.cs.CoreV1().Pods("ns-0").Get(ctx, "obj-00000", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		s.app = p.Labels["app"]
		w, err := tg.dyn.Resource(WidgetsResource).Namespace("ns-2").Get(ctx, fmt.Sprintf("obj-%05d", n-1), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.lastWidget, _ = strconv.ParseUint(w.GetResourceVersion(), 10, 64)
		page, err := tg.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 4})
		if err != nil || page.Continue == "" {
			t.Fatalf("%s: first page %v, continue %q", tg.name, err, page.Continue)
		}
		s.token = page.Continue
		s.tokenRV, _ = strconv.ParseUint(page.ResourceVersion, 10, 64)
		// A pod after the token's snapshot, last in key order.
		late := NewPod("ns-2", "obj-late", n, PodOptions{})
		late.Spec.PriorityClassName, late.Spec.Priority = "", nil
		if tg.sim != nil {
			late, err = tg.sim.Create(late)
		} else {
			late, err = tg.cs.CoreV1().Pods("ns-2").Create(ctx, late, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		s.last, _ = strconv.ParseUint(late.ResourceVersion, 10, 64)
		// resourceVersion "0" is "any": wait until the watch caches have
		// every pod and widget, so that the answers are deterministic.
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			pl, err := tg.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, err
			}
			wl, err := tg.dyn.Resource(WidgetsResource).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, err
			}
			prv, _ := strconv.ParseUint(pl.ResourceVersion, 10, 64)
			wrv, _ := strconv.ParseUint(wl.GetResourceVersion(), 10, 64)
			return len(pl.Items) == n+1 && prv >= s.last && len(wl.Items) == n && wrv >= s.lastWidget, nil
		}); err != nil {
			t.Fatalf("%s: watch caches never caught up: %v", tg.name, err)
		}
	}
	older := func(tg *target) string { return strconv.FormatUint(setups[tg].older, 10) }
	pods := func(tg *target, ns string) func(metav1.ListOptions) (k8sruntime.Object, error) {
		return func(o metav1.ListOptions) (k8sruntime.Object, error) { return tg.cs.CoreV1().Pods(ns).List(ctx, o) }
	}
	const notOlder, exact = metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact
	for _, tc := range []struct {
		name string
		list func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) // nil: pods
		opts func(tg *target) metav1.ListOptions
		// requested, when set, is the resourceVersion the request asks for.
		requested func(tg *target) uint64
		// widgets: the list is of widgets, whose last write is lastWidget
		// (kube-apiserver keeps one watch cache, and resourceVersion, per
		// resource).
		widgets bool
	}{
		{name: "rv 0, limit 4", opts: func(*target) metav1.ListOptions { return metav1.ListOptions{ResourceVersion: "0", Limit: 4} }},
		{name: "rv 0, limit 100", opts: func(*target) metav1.ListOptions { return metav1.ListOptions{ResourceVersion: "0", Limit: 100} }},
		{name: "rv 0, no limit", opts: func(*target) metav1.ListOptions { return metav1.ListOptions{ResourceVersion: "0"} }},
		{name: "rv 0, NotOlderThan, limit 4", opts: func(*target) metav1.ListOptions {
			return metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: notOlder, Limit: 4}
		}},
		{name: "rv 0, Exact, limit 4", opts: func(*target) metav1.ListOptions {
			return metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: exact, Limit: 4}
		}},
		{name: "rv 0, limit 4, in ns-1", list: func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) { return pods(tg, "ns-1") },
			opts: func(*target) metav1.ListOptions { return metav1.ListOptions{ResourceVersion: "0", Limit: 4} }},
		{name: "rv 0, limit 1, label selector", opts: func(tg *target) metav1.ListOptions {
			return metav1.ListOptions{ResourceVersion: "0", Limit: 1, LabelSelector: "app=" + setups[tg].app}
		}},
		{name: "rv 0, limit 4, metadata pods", list: func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) {
			return func(o metav1.ListOptions) (k8sruntime.Object, error) {
				return tg.md.Resource(PodsResource).List(ctx, o)
			}
		}, opts: func(*target) metav1.ListOptions { return metav1.ListOptions{ResourceVersion: "0", Limit: 4} }},
		{name: "rv 0, limit 4, custom resource", widgets: true, list: func(tg *target) func(metav1.ListOptions) (k8sruntime.Object, error) {
			return func(o metav1.ListOptions) (k8sruntime.Object, error) {
				return tg.dyn.Resource(WidgetsResource).List(ctx, o)
			}
		}, opts: func(*target) metav1.ListOptions { return metav1.ListOptions{ResourceVersion: "0", Limit: 4} }},
		{name: "rv 0, limit 4, continue of a page listed before a write",
			requested: func(tg *target) uint64 { return setups[tg].tokenRV },
			opts: func(tg *target) metav1.ListOptions {
				return metav1.ListOptions{ResourceVersion: "0", Limit: 4, Continue: setups[tg].token}
			}},
		{name: "rv unset, limit 4, continue of a page listed before a write",
			requested: func(tg *target) uint64 { return setups[tg].tokenRV },
			opts:      func(tg *target) metav1.ListOptions { return metav1.ListOptions{Limit: 4, Continue: setups[tg].token} }},
		{name: "rv 0, NotOlderThan, continue", opts: func(tg *target) metav1.ListOptions {
			return metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: notOlder, Limit: 4, Continue: setups[tg].token}
		}},
		{name: "rv unset, limit 4", opts: func(*target) metav1.ListOptions { return metav1.ListOptions{Limit: 4} }},
		{name: "rv unset, limit 1, label selector", opts: func(tg *target) metav1.ListOptions {
			return metav1.ListOptions{Limit: 1, LabelSelector: "app=" + setups[tg].app}
		}},
		{name: "older rv, NotOlderThan, limit 4", requested: func(tg *target) uint64 { return setups[tg].older },
			opts: func(tg *target) metav1.ListOptions {
				return metav1.ListOptions{ResourceVersion: older(tg), ResourceVersionMatch: notOlder, Limit: 4}
			}},
		{name: "older rv, NotOlderThan, no limit", requested: func(tg *target) uint64 { return setups[tg].older },
			opts: func(tg *target) metav1.ListOptions {
				return metav1.ListOptions{ResourceVersion: older(tg), ResourceVersionMatch: notOlder}
			}},
		{name: "older rv, limit 4 (legacy exact)", requested: func(tg *target) uint64 { return setups[tg].older },
			opts: func(tg *target) metav1.ListOptions { return metav1.ListOptions{ResourceVersion: older(tg), Limit: 4} }},
		{name: "older rv, Exact, limit 4", requested: func(tg *target) uint64 { return setups[tg].older },
			opts: func(tg *target) metav1.ListOptions {
				return metav1.ListOptions{ResourceVersion: older(tg), ResourceVersionMatch: exact, Limit: 4}
			}},
	} {
		agree(t, tc.name, real, sim, func(tg *target) listAnswer {
			list := pods(tg, "")
			if tc.list != nil {
				list = tc.list(tg)
			}
			s := rvState{lastWrite: setups[tg].last}
			if tc.widgets {
				s.lastWrite = setups[tg].lastWidget
			}
			if tc.requested != nil {
				s.requested = tc.requested(tg)
			}
			a := walk(t, tg, s, list, tc.opts(tg))
			j, _ := json.Marshal(a)
			t.Logf("%s: %s: %s", tc.name, tg.name, j)
			return a
		})
	}
}

// TestListResourceVersionZeroWithoutWatchCache: with --watch-cache=false
// kube-apiserver v1.36.3 serves resourceVersion "0" from etcd, which
// applies the limit — the whole-list answer apisim models (above) is the
// watch cache's, not the resourceVersion's.
func TestListResourceVersionZeroWithoutWatchCache(t *testing.T) {
	const n = 9
	real := startReal(t, n, "--watch-cache=false")
	l, err := real.cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 4 || l.Continue == "" {
		t.Fatalf("rv 0, limit 4 without the watch cache: %d items, continue %q; want a page of 4 with a token", len(l.Items), l.Continue)
	}
	t.Logf("rv 0, limit 4 without the watch cache: %d items, continue set, remainingItemCount %s", len(l.Items), ptrString(l.RemainingItemCount))
}

func ptrString(p *int64) string {
	if p == nil {
		return "unset"
	}
	return strconv.FormatInt(*p, 10)
}
