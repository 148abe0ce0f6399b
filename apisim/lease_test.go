package apisim

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

func newLease(name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"group": "g"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15)},
	}
}

// TestLeaseCRUD drives client-go's typed Lease client through every verb
// and every error the server answers with, in JSON and in protobuf.
func TestLeaseCRUD(t *testing.T) {
	for _, ct := range []string{ContentTypeJSON, ContentTypeProtobuf} {
		t.Run(ct, func(t *testing.T) {
			s := startServer(t, Config{})
			leases := clientFor(t, s, ct).CoordinationV1().Leases("ns")
			ctx := t.Context()

			w, err := leases.Watch(ctx, metav1.ListOptions{LabelSelector: "group=g"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			created, err := leases.Create(ctx, newLease("a", "one"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if created.UID == "" || created.ResourceVersion == "" || created.Namespace != "ns" || *created.Spec.HolderIdentity != "one" {
				t.Fatalf("created: %+v", created.ObjectMeta)
			}
			if _, err := leases.Create(ctx, newLease("a", "two"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
				t.Errorf("second create: %v; want AlreadyExists", err)
			}
			got, err := leases.Get(ctx, "a", metav1.GetOptions{})
			if err != nil || got.ResourceVersion != created.ResourceVersion {
				t.Fatalf("get: %v %v", got, err)
			}

			// Optimistic concurrency: the current version wins once, the
			// stale one gets 409.
			upd := got.DeepCopy()
			upd.Spec.HolderIdentity = ptr.To("two")
			updated, err := leases.Update(ctx, upd, metav1.UpdateOptions{})
			if err != nil || *updated.Spec.HolderIdentity != "two" || updated.ResourceVersion == got.ResourceVersion {
				t.Fatalf("update: %v %v", updated, err)
			}
			if updated.UID != created.UID {
				t.Errorf("update changed uid")
			}
			if _, err := leases.Update(ctx, upd, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				t.Errorf("stale update: %v; want Conflict", err)
			}
			wrongUID := updated.DeepCopy()
			wrongUID.UID = "other"
			if _, err := leases.Update(ctx, wrongUID, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
				t.Errorf("update with another uid: %v; want Conflict", err)
			}
			unconditional := updated.DeepCopy()
			unconditional.ResourceVersion = ""
			unconditional.Spec.HolderIdentity = ptr.To("three")
			if _, err := leases.Update(ctx, unconditional, metav1.UpdateOptions{}); err != nil {
				t.Errorf("unconditional update: %v", err)
			}
			if _, err := leases.Update(ctx, newLease("missing", "x"), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("update of a missing lease: %v; want NotFound", err)
			}
			other := clientFor(t, s, ct).CoordinationV1().Leases("other")
			if _, err := other.Update(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}},
				metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) {
				t.Errorf("update with a namespace other than the URL's: %v; want BadRequest", err)
			}

			list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: "group=g"})
			if err != nil || len(list.Items) != 1 || *list.Items[0].Spec.HolderIdentity != "three" {
				t.Fatalf("list: %v %v", list, err)
			}

			stale := "1"
			if err := leases.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &stale}}); !apierrors.IsConflict(err) {
				t.Errorf("delete with a stale precondition: %v; want Conflict", err)
			}
			if err := leases.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &created.UID}}); err != nil {
				t.Errorf("delete: %v", err)
			}
			if err := leases.Delete(ctx, "a", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("second delete: %v; want NotFound", err)
			}

			want := []watch.EventType{watch.Added, watch.Modified, watch.Modified, watch.Deleted}
			var events []watch.EventType
			for len(events) < len(want) {
				select {
				case ev := <-w.ResultChan():
					events = append(events, ev.Type)
				case <-time.After(10 * time.Second):
					t.Fatalf("watch: got %v, want %v", events, want)
				}
			}
			if !slices.Equal(events, want) {
				t.Errorf("watch events %v; want %v", events, want)
			}
		})
	}
}

// TestLeaseBadWrites covers writes the server refuses, and that other
// resources stay read-only over HTTP.
func TestLeaseBadWrites(t *testing.T) {
	s := startServer(t, Config{})
	base := s.URL() + "/apis/coordination.k8s.io/v1"
	cases := []struct {
		method, path, body string
		code               int
	}{
		{http.MethodPost, "/namespaces/ns/leases", `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"x"}}`, 201},
		{http.MethodPost, "/leases", `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"y"}}`, 405},
		{http.MethodPost, "/namespaces/ns/leases", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"y"}}`, 400},
		{http.MethodPost, "/namespaces/ns/leases", `{"kind":"Lease",`, 400},
		{http.MethodPost, "/namespaces/ns/leases", ``, 400},
		{http.MethodPost, "/namespaces/ns/leases", `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"y","namespace":"other"}}`, 400},
		{http.MethodPost, "/namespaces/ns/leases", `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"z","resourceVersion":"5"}}`, 400},
		{http.MethodPut, "/namespaces/ns/leases/x", `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"other"}}`, 400},
		{http.MethodPut, "/namespaces/ns/leases/x", `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"x","resourceVersion":"1"}}`, 409},
		{http.MethodPatch, "/namespaces/ns/leases/x", `{}`, 405},
		{http.MethodDelete, "/namespaces/ns/leases/x", `{"kind":"DeleteOptions",`, 400},
		{http.MethodDelete, "/namespaces/ns/leases/x", ``, 200},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", ContentTypeJSON)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s %s %s: %d; want %d", c.method, c.path, c.body, resp.StatusCode, c.code)
		}
	}
	if n := s.Leases().Len(); n != 0 {
		t.Errorf("%d leases left; want 0", n)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/namespaces/ns/pods", strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST pods: %d; want 405", resp.StatusCode)
	}
	if got := s.Stats().Requests["write"]; got != uint64(len(cases)-2) {
		t.Errorf("write requests %d; want %d (405s are not writes)", got, len(cases)-2)
	}
}

// TestLeaderElection runs client-go's leader election with LeaseLocks of
// three candidates against the server: exactly one leads at a time, and
// when it gives up another takes over.
func TestLeaderElection(t *testing.T) {
	s := startServer(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		leading   atomic.Int32
		maxLead   atomic.Int32
		elections atomic.Int32
		wg        sync.WaitGroup
		stops     = make([]context.CancelFunc, 3)
	)
	for i := range stops {
		cctx, stop := context.WithCancel(ctx)
		stops[i] = stop
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "leader"},
			Client:     clientFor(t, s, ContentTypeProtobuf).CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: string(rune('a' + i))},
		}
		wg.Go(func() {
			leaderelection.RunOrDie(cctx, leaderelection.LeaderElectionConfig{
				Lock: lock, LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
				ReleaseOnCancel: true,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(ctx context.Context) {
						elections.Add(1)
						n := leading.Add(1)
						for m := maxLead.Load(); n > m && !maxLead.CompareAndSwap(m, n); m = maxLead.Load() {
						}
						<-ctx.Done()
						leading.Add(-1)
					},
					OnStoppedLeading: func() {},
				},
			})
		})
	}
	eventually(t, "a leader", func() (bool, string) { return elections.Load() == 1, "no leader yet" })
	lease, ok := s.Leases().Get("ns", "leader")
	if !ok {
		t.Fatal("no lease")
	}
	holder := *lease.Spec.HolderIdentity
	stops[holder[0]-'a']()
	eventually(t, "a second leader", func() (bool, string) { return elections.Load() == 2, "no takeover yet" })
	cancel()
	wg.Wait()
	if m := maxLead.Load(); m != 1 {
		t.Errorf("%d candidates led at once", m)
	}
}
