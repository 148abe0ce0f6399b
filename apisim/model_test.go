package apisim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// modelOp is one successful write in the reference model.
type modelOp struct {
	rv  uint64
	gvr schema.GroupVersionResource
	key string
	typ watch.EventType
}

// TestModelRandomOps drives random creates, modifications, deletes and
// refused writes on all resources at once — sharing one resourceVersion
// counter and one history — against a plain map, then checks through
// client-go's dynamic client that current lists, lists at exact past
// resourceVersions and watches replaying history all equal the model.
func TestModelRandomOps(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(42, 7))
	s := startServer(t, Config{ListSnapshots: -1}) // past lists rebuilt by undoing history
	servers := everyResource(t, s, 12)
	gvrs := []schema.GroupVersionResource{PodsResource, ConfigMapsResource, DeploymentsResource, WidgetsResource}
	model := map[schema.GroupVersionResource]map[string]string{} // key → rv
	for _, gvr := range gvrs {
		model[gvr] = servers[gvr].rvs("")
	}
	start := s.ResourceVersion()
	snapshots := map[uint64]map[schema.GroupVersionResource]map[string]string{}
	copyModel := func() map[schema.GroupVersionResource]map[string]string {
		out := map[schema.GroupVersionResource]map[string]string{}
		for g, m := range model {
			out[g] = map[string]string{}
			for k, v := range m {
				out[g][k] = v
			}
		}
		return out
	}
	var log []modelOp
	anyKey := func(m map[string]string) string {
		i := r.IntN(len(m))
		for k := range m {
			if i == 0 {
				return k
			}
			i--
		}
		return ""
	}
	for i := range 600 {
		gvr := gvrs[r.IntN(len(gvrs))]
		srv, m := servers[gvr], model[gvr]
		rvNow := func() string { return strconv.FormatUint(s.ResourceVersion(), 10) }
		switch op := r.IntN(10); {
		case op < 3 || len(m) < 3:
			ns, name := fmt.Sprintf("ns-%d", r.IntN(4)), fmt.Sprintf("m-%d", i)
			if err := srv.create(ns, name, int64(i)); err != nil {
				t.Fatal(err)
			}
			m[ns+"/"+name] = rvNow()
			log = append(log, modelOp{s.ResourceVersion(), gvr, ns + "/" + name, watch.Added})
		case op < 7:
			k := anyKey(m)
			ns, name := splitKey(k)
			if _, err := srv.touch(ns, name, strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
			m[k] = rvNow()
			log = append(log, modelOp{s.ResourceVersion(), gvr, k, watch.Modified})
		case op < 9:
			k := anyKey(m)
			ns, name := splitKey(k)
			if err := srv.remove(ns, name); err != nil {
				t.Fatal(err)
			}
			delete(m, k)
			log = append(log, modelOp{s.ResourceVersion(), gvr, k, watch.Deleted})
		default: // refused writes change nothing
			before := s.ResourceVersion()
			k := anyKey(m)
			ns, name := splitKey(k)
			if err := srv.create(ns, name, 1); !apierrors.IsAlreadyExists(err) {
				t.Fatalf("duplicate create of %s: %v", k, err)
			}
			if err := srv.remove(ns, "missing"); !apierrors.IsNotFound(err) {
				t.Fatalf("delete of a missing object: %v", err)
			}
			if s.ResourceVersion() != before {
				t.Fatal("a refused write made a version")
			}
		}
		if r.IntN(40) == 0 {
			snapshots[s.ResourceVersion()] = copyModel()
		}
	}

	for _, gvr := range gvrs {
		c := dynamicClient(t, s, gvr)
		t.Run(gvr.Resource, func(t *testing.T) {
			l, err := c.list(ctx, "", metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ok, why := sameMap(listed(t, l, c.kind), model[gvr]); !ok {
				t.Fatalf("current list: %s", why)
			}
			for rv, snap := range snapshots {
				l, err := c.list(ctx, "", metav1.ListOptions{ResourceVersion: strconv.FormatUint(rv, 10),
					ResourceVersionMatch: metav1.ResourceVersionMatchExact})
				if err != nil {
					t.Fatal(err)
				}
				if ok, why := sameMap(listed(t, l, c.kind), snap[gvr]); !ok {
					t.Fatalf("list at rv %d: %s", rv, why)
				}
			}
			var want []modelOp
			for _, op := range log {
				if op.gvr == gvr {
					want = append(want, op)
				}
			}
			w, err := c.watch(ctx, "", metav1.ListOptions{ResourceVersion: strconv.FormatUint(start, 10)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			for i, op := range want {
				ev := nextNonBookmark(t, w)
				k, rv := eventKey(t, ev)
				if ev.Type != op.typ || k != op.key || rv != strconv.FormatUint(op.rv, 10) {
					t.Fatalf("event %d: %s %s@%s; model: %s %s@%d", i, ev.Type, k, rv, op.typ, op.key, op.rv)
				}
			}
		})
	}
}

func splitKey(k string) (ns, name string) {
	ns, name, _ = strings.Cut(k, "/")
	return ns, name
}
